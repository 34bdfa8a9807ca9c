import Foundation
import HTTPTypes
@_spi(OutpostInternal) import OutpostCore

/// An identity at an upstream provider (Sign in with Apple, Google, any OpenID Connect provider the
/// server's operator registered) that signs in to the signed-in user's account.
public struct LinkedIdentity: Sendable, Hashable {
    /// The provider's name on the server (`outpost providers add NAME`), or a sign-in plugin's
    /// provider name.
    public var provider: String
    /// The provider's issuer; `nil` for a sign-in plugin's identity.
    public var issuer: String?
    /// The person's id at the provider (the ID token's `sub`).
    public var subject: String
    /// The e-mail address the provider gave last (an Apple private relay address as it is), and
    /// whether the provider said it was verified.
    public var email: String?
    public var emailVerified: Bool?

    public init(provider: String, issuer: String?, subject: String, email: String? = nil, emailVerified: Bool? = nil) {
        self.provider = provider
        self.issuer = issuer
        self.subject = subject
        self.email = email
        self.emailVerified = emailVerified
    }

    init?(json: JSONValue) {
        guard let provider = json["provider"]?.stringValue, let subject = json["subject"]?.stringValue else { return nil }
        var emailVerified: Bool?
        if case .bool(let verified)? = json["email_verified"] { emailVerified = verified }
        self.init(
            provider: provider, issuer: json["issuer"]?.stringValue, subject: subject, email: json["email"]?.stringValue,
            emailVerified: emailVerified)
    }
}

extension Authenticator {
    /// Links an identity at an upstream provider to the signed-in account (`POST /me/identities`):
    /// from then on, signing in with that provider's ID tokens signs in to this account. The server
    /// never links identities on its own because e-mail addresses match, so an app offers this to a
    /// person who is signed in, after they signed in with the provider (`AppleIDSignIn` on Apple
    /// platforms, or the provider's SDK).
    ///
    /// - Parameters:
    ///   - idToken: The provider's ID token.
    ///   - provider: The name the server's operator gave the provider.
    ///   - nonce: The nonce the app asked the provider for this token with.
    /// - Throws: ``AuthError``: ``AuthError/Code/notSignedIn``, ``AuthError/Code/notConfigured``
    ///   without `Endpoints.account`, or the server's refusal with its code in
    ///   ``AuthError/oauthError``: `identity_linked` (HTTP 409: the identity signs in to another
    ///   account), `unknown_provider` (404), `invalid_grant` (400: the token was refused; the
    ///   server's message says why).
    @discardableResult
    public func linkIdentity(idToken: String, provider: String, nonce: SignInNonce) async throws -> LinkedIdentity {
        let body: JSONValue = ["provider": .string(provider), "id_token": .string(idToken), "nonce": .string(nonce.value)]
        let response = try await accountRequest(.post, "identities", body: body, refused: "link the identity")
        guard let json = try? response.json(), let identity = LinkedIdentity(json: json) else {
            throw AuthError(.serverError, "The server linked the identity but its answer cannot be read")
        }
        return identity
    }

    /// The identities linked to the signed-in account (`GET /me/identities`).
    public func linkedIdentities() async throws -> [LinkedIdentity] {
        let response = try await accountRequest(.get, "identities", refused: "list the linked identities")
        guard case .array(let items)? = try? response.json()["identities"] else {
            throw AuthError(.serverError, "The server's list of identities cannot be read")
        }
        return items.compactMap(LinkedIdentity.init(json:))
    }

    /// Unlinks an identity from the signed-in account (`DELETE /me/identities/{provider}/{subject}`):
    /// it no longer signs in to it. The server keeps the account's only way to sign in.
    ///
    /// - Throws: ``AuthError`` with ``AuthError/oauthError`` `last_sign_in_method` (HTTP 409: the
    ///   account has no password and no other identity; link another first) or
    ///   `identity_not_linked` (404).
    public func unlinkIdentity(_ identity: LinkedIdentity) async throws {
        let path = "identities/\(Self.pathSegment(identity.provider))/\(Self.pathSegment(identity.subject))"
        _ = try await accountRequest(.delete, path, refused: "unlink the identity")
    }

    /// Sends a request for the signed-in account to `Endpoints.account` (or below it), with the
    /// current access token; a refusal becomes an ``AuthError`` with the server's code.
    func accountRequest(
        _ method: HTTPRequest.Method, _ subpath: String? = nil, body: JSONValue? = nil, refused action: String
    ) async throws -> ClientResponse {
        guard let endpoint = configuration.endpoints.account else {
            throw AuthError(.notConfigured, "No account endpoint is configured; set Endpoints.account (/me)")
        }
        guard let credential = try await validCredential() else {
            throw AuthError(.notSignedIn, "Sign in to the account first")
        }
        var headers = HTTPFields()
        headers[.authorization] = "\(credential.tokenType) \(credential.accessToken)"
        let url = subpath.map { endpoint.absoluteString + "/" + $0 } ?? endpoint.absoluteString
        let response = try await tokens.send(
            Request(method: method, path: url, headers: headers, body: body.map { .json($0) }))
        guard (200..<300).contains(response.status) else {
            var error = TokenEndpoint.error(from: response)
            if let code = error.oauthError, let serverMessage = error.serverMessage {
                error.message = "The server refused to \(action): \(serverMessage) (\(code))"
            } else {
                error.message =
                    response.status == 403
                    ? "The access token may not \(action); sign in again asking for the scopes it needs"
                    : "The server refused to \(action) (HTTP \(response.status))"
            }
            throw error
        }
        return response
    }

    /// `text` percent-encoded as one path segment (RFC 3986 unreserved characters stay).
    static func pathSegment(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)..<Unicode.Scalar(128)))
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}
