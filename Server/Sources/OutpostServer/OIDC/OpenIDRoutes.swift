import Foundation
import HTTPTypes
import Hummingbird
@_spi(OutpostInternal) import OutpostCore

/// OpenID Connect's endpoints: discovery (`/.well-known/openid-configuration`), the signing keys
/// (`/.well-known/jwks.json`) and UserInfo (`/userinfo`, GET and POST).
struct OpenIDRoutes: Sendable {
    let provider: OpenIDProvider
    let maxBodyBytes: Int

    static let jwksPath = "/.well-known/jwks.json"
    static let userInfoPath = "/userinfo"
    /// The claims an ID token or UserInfo answer may carry.
    static let claims = ["sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "at_hash", "preferred_username"]

    func add(to router: Router<OutpostRequestContext>) {
        router.get("/.well-known/openid-configuration") { request, _ in discovery(request) }
        router.get("/.well-known/jwks.json") { _, _ in try await jwks() }
        // The access token comes in the Authorization header, or on POST in a form body (RFC 6750 §2.2,
        // OpenID Connect Core §5.3.1); tokens in the query are refused (RFC 9700 §4.3.2).
        let userInfoRoutes = router.group().add(middleware: AuthenticationMiddleware(auth: provider.auth))
        userInfoRoutes.get("/userinfo") { request, context in try await userInfo(request, context, formToken: nil) }
        userInfoRoutes.post("/userinfo") { request, context in
            var formToken: String?
            if request.headers[.contentType]?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true {
                formToken = try await request.formFields(limit: maxBodyBytes)["access_token"]
            }
            return try await userInfo(request, context, formToken: formToken)
        }
    }

    /// OpenID Provider Metadata (OpenID Connect Discovery 1.0 §3).
    func discovery(_ request: Request) -> Response {
        let issuer = provider.auth.issuer
        return Response.json(
            [
                "issuer": .string(issuer),
                "authorization_endpoint": .string(issuer + "/oauth/authorize"),
                "token_endpoint": .string(issuer + "/oauth/token"),
                "userinfo_endpoint": .string(issuer + Self.userInfoPath),
                "jwks_uri": .string(issuer + Self.jwksPath),
                "revocation_endpoint": .string(issuer + "/oauth/revoke"),
                "device_authorization_endpoint": .string(issuer + "/oauth/device_authorization"),
                "end_session_endpoint": .string(issuer + "/oauth/logout"),
                "response_types_supported": ["code"],
                "response_modes_supported": ["query"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": .array([.string(SigningKeyRing.algorithm)]),
                "scopes_supported": [
                    .string(OpenIDProvider.scope), .string(Scope.recordsRead), .string(Scope.recordsWrite),
                    .string(Scope.profile),
                ],
                "claims_supported": .array(Self.claims.map(JSONValue.string)),
                "code_challenge_methods_supported": ["S256"],
                "grant_types_supported": [
                    "authorization_code", "implicit", "refresh_token", "password", "client_credentials",
                    "urn:ietf:params:oauth:grant-type:device_code", "urn:ietf:params:oauth:grant-type:token-exchange",
                ],
                "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
                "claims_parameter_supported": false,
                "request_parameter_supported": false,
                "request_uri_parameter_supported": false,
            ], headers: [.cacheControl: "public, max-age=300"])
    }

    /// The JSON Web Key Set (RFC 7517 §5): the key in use and those retired within the grace period.
    func jwks() async throws -> Response {
        let keys = try await provider.keys.published().map { JSONValue.object(try SigningKeyRing.publicJWK($0)) }
        return Response.json(["keys": .array(keys)], headers: [.cacheControl: "public, max-age=300"])
    }

    /// UserInfo (OpenID Connect Core §5.3): `sub` always, `preferred_username` with the `profile` scope.
    func userInfo(_ request: Request, _ context: OutpostRequestContext, formToken: String?) async throws -> Response {
        if formToken != nil, request.headers[.authorization] != nil {
            throw ServerError.badRequest(
                "invalid_request", "Send the access token once: in the Authorization header or in the form, not both")
        }
        let found: AuthenticatedCaller?
        if let formToken {
            found = try await provider.auth.caller(accessToken: formToken)
        } else {
            found = try context.caller
        }
        guard let caller = found else {
            throw ServerError(
                .unauthorized, code: "invalid_token", message: "Send the access token as 'Authorization: Bearer <token>'",
                headers: [.wwwAuthenticate: "Bearer"])
        }
        let scopes = caller.scope.split(separator: " ").map(String.init)
        guard scopes.contains(OpenIDProvider.scope), let userID = caller.userID,
            let user = try await provider.auth.storage.user(id: userID)
        else {
            throw ServerError(
                .forbidden, code: "insufficient_scope",
                message: "UserInfo needs a user's access token granted the 'openid' scope; sign in again asking for it",
                headers: [.wwwAuthenticate: "Bearer error=\"insufficient_scope\", scope=\"openid\""])
        }
        var claims: [String: JSONValue] = ["sub": .string(user.id)]
        if scopes.contains("profile") { claims["preferred_username"] = .string(user.username) }
        return Response.json(.object(claims), headers: [.cacheControl: "no-store"])
    }
}
