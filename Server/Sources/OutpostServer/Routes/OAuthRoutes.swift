import Foundation
import HTTPTypes
import Hummingbird
@_spi(OutpostInternal) import OutpostCore

/// The OAuth 2.0 authorization server: discovery (RFC 8414), the browser sign-in and consent page,
/// the token endpoint (authorization code with PKCE, refresh with rotation, password, client
/// credentials, device code), revocation (RFC 7009) and the device flow (RFC 8628).
///
/// The token, revocation and device authorization endpoints answer errors in RFC 6749's shape
/// (`{"error": "invalid_grant", "error_description": ...}`) rather than the Outpost envelope, so
/// that any OAuth client library understands them.
struct OAuthRoutes: Sendable {
    let auth: AuthService
    let maxBodyBytes: Int
    let openID: OpenIDProvider
    /// Upstream ID tokens for the server's tokens (RFC 8693 token exchange).
    let federation: IDTokenExchange
    /// Sign-in through upstream providers' web pages.
    let webSignIn: UpstreamWebSignIn
    /// Whether the sign-in page links to "Forgot password?" (the server has mail).
    var passwordResetEnabled = false
    /// Counts token requests by grant and outcome.
    var instruments: ServerInstruments = .none
    static let sessionCookie = "outpost_session"
    /// A random per-browser value that every form token is bound to (login CSRF protection).
    static let formCookie = "outpost_form"

    func add(to router: Router<OutpostRequestContext>) {
        router.get("/.well-known/oauth-authorization-server") { request, _ in discovery(request) }
        router.get("/oauth/authorize") { request, _ in try await authorizePage(request) }
        router.post("/oauth/authorize") { request, context in
            // 303 after the form post: the browser must not re-send the credentials to the client (RFC 9700 §4.12).
            var response = try await authorizeSubmit(request, context)
            if response.status == .found { response.status = .seeOther }
            return response
        }
        // The RFC 6749 endpoints: their errors in RFC 6749's shape, nothing cached.
        let endpoints = router.group().add(middleware: OAuthReplyMiddleware(logger: auth.logger))
        endpoints.post("/oauth/token") { request, context in try await token(request, context) }
        endpoints.post("/oauth/revoke") { request, context in try await revoke(request, context) }
        endpoints.post("/oauth/device_authorization") { request, context in try await deviceAuthorization(request, context) }
        router.get("/device") { request, _ in
            try await devicePage(request, userCode: try request.queryFields()["user_code"], message: nil)
        }
        router.post("/device") { request, context in try await deviceSubmit(request, context) }
        router.get("/oauth/logout") { request, _ in try await logout(request) }
        addUpstream(to: router)
    }

    /// The issuer identifier (RFC 8414 §2, RFC 9207): ``ServerConfiguration/publicURL``, or the
    /// address the server bound. Never taken from the request's `Host` header; the parameter is
    /// kept so that callers read the same either way.
    func issuer(_ request: Request? = nil) -> String { auth.issuer }

    func discovery(_ request: Request) -> Response {
        let issuer = self.issuer(request)
        return Response.json([
            "issuer": .string(issuer),
            "authorization_endpoint": .string(issuer + "/oauth/authorize"),
            "token_endpoint": .string(issuer + "/oauth/token"),
            "revocation_endpoint": .string(issuer + "/oauth/revoke"),
            "device_authorization_endpoint": .string(issuer + "/oauth/device_authorization"),
            "end_session_endpoint": .string(issuer + "/oauth/logout"),
            "jwks_uri": .string(issuer + OpenIDRoutes.jwksPath),
            "userinfo_endpoint": .string(issuer + OpenIDRoutes.userInfoPath),
            // An extension (RFC 8414 §2 allows more members): custom provider sign-in (`POST /auth/login`).
            "outpost_provider_login_endpoint": .string(issuer + "/auth/login"),
            "grant_types_supported": [
                "authorization_code", "implicit", "refresh_token", "password", "client_credentials",
                "urn:ietf:params:oauth:grant-type:device_code", "urn:ietf:params:oauth:grant-type:token-exchange",
            ],
            "response_types_supported": ["code", "token"],
            "code_challenge_methods_supported": ["S256"],
            "scopes_supported": [
                .string(OpenIDProvider.scope), .string(Scope.recordsRead), .string(Scope.recordsWrite), .string(Scope.profile),
            ],
            "authorization_response_iss_parameter_supported": true,
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
            "revocation_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
        ])
    }

    func form(_ request: Request) async throws -> [String: String] {
        try await request.formFields(limit: maxBodyBytes)
    }
}
