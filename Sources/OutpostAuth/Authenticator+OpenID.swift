import Foundation
import HTTPTypes
import Logging
@_spi(OutpostInternal) public import OutpostCore

extension Authenticator {
    /// The scope that turns an OAuth sign-in into an OpenID Connect one.
    public static let openIDScope = "openid"

    /// Verifies an ID token from a sign-in against this authenticator's issuer, client id and JWKS.
    func verifiedIDToken(_ idToken: String, nonce: String?, accessToken: String) async throws -> IDToken {
        guard configuration.endpoints.issuer != nil, configuration.endpoints.jwks != nil else {
            throw AuthError(
                .notConfigured,
                "An ID token came back but no issuer or JWKS endpoint is configured to verify it; use Endpoints.discoverOpenID or set Endpoints.issuer and Endpoints.jwks"
            )
        }
        do {
            let token = try await idTokens.verify(idToken, nonce: nonce, accessToken: accessToken)
            configuration.logger.debug("id token verified")
            return token
        } catch let error as AuthError {
            configuration.logger.warning("id token refused", metadata: ["oidc.error": "\(error.code)"])
            throw error
        }
    }

    /// The ID token to keep after a refresh (OpenID Connect Core §12.2): a new one that verifies and
    /// names the same user, else the previous one when the server sent none. A new one that fails is
    /// dropped with a warning rather than failing the refresh: the refresh token is already spent.
    static func refreshedIDToken(
        _ idToken: String?, previous: IDToken?, accessToken: String, verifier: IDTokenVerifier, logger: Logger
    ) async -> IDToken? {
        guard let idToken else { return previous }
        guard previous != nil else { return nil }
        do {
            let token = try await verifier.verify(idToken, nonce: nil, accessToken: accessToken)
            guard token.claims.subject == previous?.claims.subject, token.claims.issuer == previous?.claims.issuer else {
                logger.warning("refreshed id token names another user; dropped", metadata: ["oidc.error": "idTokenInvalid"])
                return nil
            }
            return token
        } catch {
            logger.warning(
                "refreshed id token refused; dropped",
                metadata: ["oidc.error": "\((error as? AuthError)?.code.rawValue ?? "error")"])
            return nil
        }
    }

    /// Asks the UserInfo endpoint (OpenID Connect Core §5.3) about the signed-in user, with a valid
    /// access token (refreshed first when due).
    ///
    /// - Returns: The claims, e.g. `sub` and `preferred_username`.
    /// - Throws: ``AuthError``: ``AuthError/Code/notSignedIn``, ``AuthError/Code/notConfigured`` (no
    ///   UserInfo endpoint), ``AuthError/Code/idTokenInvalid`` when its `sub` is not the ID token's
    ///   (OpenID Connect Core §5.3.4), or the server's refusal (HTTP 403: the token lacks `openid`).
    public func userInfo() async throws -> [String: JSONValue] {
        guard let endpoint = configuration.endpoints.userInfo else {
            throw AuthError(
                .notConfigured, "No UserInfo endpoint is configured; use Endpoints.discoverOpenID or set Endpoints.userInfo")
        }
        guard let credential = try await validCredential() else {
            throw AuthError(.notSignedIn, "Sign in (asking for the 'openid' scope) before asking for UserInfo")
        }
        var headers = HTTPFields()
        headers[.authorization] = "\(credential.tokenType) \(credential.accessToken)"
        headers[.accept] = "application/json"
        let response = try await tokens.send(Request(method: .get, path: endpoint.absoluteString, headers: headers))
        guard (200..<300).contains(response.status) else {
            var error = TokenEndpoint.error(from: response)
            error.message =
                response.status == 403
                ? "The access token may not read UserInfo; sign in again asking for the 'openid' scope"
                : "UserInfo refused the request (HTTP \(response.status)); sign in again"
            throw error
        }
        guard let claims = (try? response.json())?.objectValue, let subject = claims["sub"]?.stringValue else {
            throw AuthError(.invalidResponse, "UserInfo did not answer a JSON object with 'sub'", oauthError: nil)
        }
        if let expected = credential.idToken?.claims.subject, expected != subject {
            throw AuthError(
                .idTokenInvalid, "UserInfo names another user than the ID token; refusing it (OpenID Connect Core §5.3.4)")
        }
        return claims
    }
}
