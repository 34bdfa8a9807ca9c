import Crypto
import Foundation
import HTTPTypes
import Hummingbird
@_spi(OutpostInternal) import OutpostSupport

/// The test issuer as an authorization server: the code flow with PKCE the server's web sign-in
/// drives, and revocation. Tests set what the next answer is (a refusal, a wrong nonce, a failing
/// token or revocation endpoint) and read what the server sent.
extension TestIssuer {
    struct WebFlow {
        struct Grant {
            var clientID: String
            var redirectURI: String
            var challenge: String
            var nonce: String?
        }
        /// Who the authorization endpoint signs in.
        var subject = "web-person"
        var email: String? = "web-person@example.com"
        /// Answer the next authorization request with this error instead of a code.
        var error: String?
        /// Put this nonce into the ID tokens instead of the one the request sent.
        var nonce: String?
        /// The token endpoint answers 500.
        var failToken = false
        /// The revocation endpoint answers 503.
        var failRevocation = false
        /// Issue a refresh token with the ID token.
        var refreshTokens = true
        var grants: [String: Grant] = [:]
        /// The last authorization request's parameters.
        var lastAuthorization: [String: String] = [:]
        /// How the server authenticated at the token endpoint: `basic`, `post` or `none`.
        var lastClientAuthentication = ""
        var issuedRefreshTokens: [String] = []
        var revoked: [String] = []
    }

    func web<T>(_ body: (inout WebFlow) -> T) -> T { state.withLock { body(&$0.web) } }

    func authorize(_ query: Hummingbird.Parameters) -> Response {
        var parameters: [String: String] = [:]
        for (key, value) in query { parameters[String(key)] = String(value) }
        let code = "code-" + UUID().uuidString
        let answer: [(String, String)] = state.withLock { state in
            state.web.lastAuthorization = parameters
            if let error = state.web.error {
                state.web.error = nil
                return [("error", error), ("state", parameters["state"] ?? "")]
            }
            state.web.grants[code] = WebFlow.Grant(
                clientID: parameters["client_id"] ?? "", redirectURI: parameters["redirect_uri"] ?? "",
                challenge: parameters["code_challenge"] ?? "", nonce: parameters["nonce"])
            return [("code", code), ("state", parameters["state"] ?? ""), ("iss", base)]
        }
        var components = URLComponents(string: parameters["redirect_uri"] ?? "")
        components?.queryItems = answer.map { URLQueryItem(name: $0.0, value: $0.1) }
        return Response(status: .found, headers: [.location: components?.string ?? ""])
    }

    func token(_ form: [String: String], authorization: String?) async throws -> Response {
        let checked: (WebFlow.Grant, WebFlow)? = state.withLock { state in
            state.web.lastClientAuthentication =
                authorization?.hasPrefix("Basic ") == true ? "basic" : form["client_secret"] != nil ? "post" : "none"
            guard let code = form["code"], let grant = state.web.grants.removeValue(forKey: code) else { return nil }
            return (grant, state.web)
        }
        guard let checked, !checked.1.failToken else {
            return Self.json(
                ["error": checked == nil ? "invalid_grant" : "server_error"],
                status: checked == nil ? .badRequest : .internalServerError)
        }
        let (grant, web) = checked
        let verifier = form["code_verifier"] ?? ""
        let challenge = Base64URL.encode(Data(SHA256.hash(data: Data(verifier.utf8))))
        // A code an app got itself (``nativeCode(clientID:)``) has no redirect URI and no challenge.
        let native = grant.redirectURI.isEmpty && grant.challenge.isEmpty
        guard native || (form["redirect_uri"] == grant.redirectURI && challenge == grant.challenge),
            form["client_id"] ?? authorization.flatMap(Self.basicUser) == grant.clientID
        else { return Self.json(["error": "invalid_grant"], status: .badRequest) }
        let idToken = try await idToken(
            subject: web.subject, audience: [grant.clientID], nonce: web.nonce ?? grant.nonce, email: web.email,
            emailVerified: web.email == nil ? nil : true)
        var reply: [String: Any] = ["access_token": "upstream-access", "token_type": "Bearer", "id_token": idToken]
        if web.refreshTokens {
            let refresh = "upstream-refresh-" + UUID().uuidString
            state.withLock { $0.web.issuedRefreshTokens.append(refresh) }
            reply["refresh_token"] = refresh
        }
        return Self.json(reply)
    }

    /// A code as a native app gets it with its ID token (Sign in with Apple's `authorization_code`).
    func nativeCode(clientID: String) -> String {
        let code = "native-code-" + UUID().uuidString
        state.withLock {
            $0.web.grants[code] = WebFlow.Grant(clientID: clientID, redirectURI: "", challenge: "", nonce: nil)
        }
        return code
    }

    func revoke(_ form: [String: String]) -> Response {
        state.withLock { state in
            guard !state.web.failRevocation else { return Response(status: .serviceUnavailable) }
            if let token = form["token"] { state.web.revoked.append(token) }
            return Response(status: .ok)
        }
    }

    static func basicUser(_ header: String) -> String? {
        guard header.hasPrefix("Basic "), let data = Data(base64Encoded: String(header.dropFirst(6))) else { return nil }
        return String(decoding: data, as: UTF8.self).split(separator: ":").first.map(String.init)?.removingPercentEncoding
    }

    static func form(_ body: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
            }
            fields[parts[0]] = parts.count > 1 ? parts[1] : ""
        }
        return fields
    }
}
