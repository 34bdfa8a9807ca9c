public import Foundation

/// What the browser flows ask the server for: a code (with PKCE) or, for legacy clients, a token.
public enum ResponseType: String, Sendable, Hashable {
    /// The authorization code grant with PKCE S256 (RFC 6749 4.1, RFC 7636). Use this one.
    case code
    /// The implicit grant (RFC 6749 4.2): the token comes back in the redirect's fragment.
    /// Legacy; only for servers and clients that allow it.
    case token
}

/// One browser sign-in in progress: the URL to open, and what the redirect must match.
///
/// Made by ``Authenticator/authorizationRequest(responseType:scopes:redirectURI:)``; the
/// authenticator keeps the PKCE verifier and checks the `state` when the redirect comes back
/// through ``Authenticator/completeAuthorization(from:)``.
public struct AuthorizationRequest: Sendable, Hashable {
    /// The authorization URL to open in the browser.
    public let url: URL
    /// The random `state` (256 bits, base64url) the redirect must carry back.
    public let state: String
    /// Where the browser comes back to.
    public let redirectURI: URL
    public let responseType: ResponseType
    public let scopes: [String]
    /// OpenID Connect: the random `nonce` sent when the scopes include `openid`; the ID token must carry it back.
    public let nonce: String?
    let pkce: PKCE?
    let createdAt: Date
}

/// What a redirect URL says, before its state is checked against a pending request.
enum RedirectResult: Equatable {
    case code(String, state: String?)
    case token([String: String], state: String?)
    case error(String, description: String?, state: String?)

    var state: String? {
        switch self {
        case .code(_, let state), .token(_, let state), .error(_, _, let state): state
        }
    }

    /// Reads `?code=&state=`, `#access_token=&...&state=`, or `error=` in either place.
    static func parse(_ url: URL) -> RedirectResult? {
        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        var fields: [String: String] = [:]
        if let fragment = components?.percentEncodedFragment, !fragment.isEmpty {
            fields = FormEncoding.decode(fragment)
        }
        let queryFields = components?.percentEncodedQuery.map(FormEncoding.decode) ?? [:]
        // The fragment wins (implicit), but an error or a code in the query counts too.
        for (name, value) in queryFields where fields[name] == nil { fields[name] = value }
        let state = fields["state"]
        if let error = fields["error"] {
            return .error(error, description: fields["error_description"], state: state)
        }
        if fields["access_token"] != nil { return .token(fields, state: state) }
        if let code = fields["code"], !code.isEmpty { return .code(code, state: state) }
        return nil
    }
}

/// Random `state` values: 32 bytes from the system's secure generator, base64url.
enum StateGenerator {
    static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = [UInt8](repeating: 0, count: 32)
        for index in bytes.indices { bytes[index] = UInt8.random(in: .min ... .max, using: &generator) }
        return PKCE.base64URL(Data(bytes))
    }

    /// Compares without leaking the position of the first difference through timing.
    static func equal(_ first: String, _ second: String) -> Bool {
        let left = Array(first.utf8)
        let right = Array(second.utf8)
        guard left.count == right.count else { return false }
        var difference: UInt8 = 0
        for index in left.indices { difference |= left[index] ^ right[index] }
        return difference == 0
    }
}
