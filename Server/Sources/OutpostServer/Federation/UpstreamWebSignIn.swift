import Crypto
import Foundation
import HTTPTypes
import Hummingbird
@_spi(OutpostInternal) import OutpostSupport

/// The web sign-in through an upstream provider: the server is the provider's OpenID Connect
/// relying party (authorization code flow with PKCE S256, `state` and `nonce`), started from the
/// sign-in page's "Continue with" buttons and finished at ``callbackPath``.
///
/// `state`, `nonce` and the PKCE verifier are 256 random bits each, made for one sign-in. The
/// pending sign-in is kept in storage under the SHA-256 of `state` (any instance can finish it),
/// removed by the first callback that names it (a replayed answer finds nothing), and refused past
/// ``FederationConfiguration/webSignInLifetime``. It is bound to the browser that started it by a
/// random cookie whose SHA-256 it keeps: an answer delivered to another browser (login CSRF, a
/// code injected into someone else's session) finishes nothing.
///
/// The binding cookie is `HttpOnly` and sent only to the callback path. Providers answer with a
/// top-level GET (a `SameSite=Lax` cookie is sent) or, Apple with `response_mode=form_post`, with a
/// cross-site POST, which carries only `SameSite=None` cookies; those need `Secure`, so when the
/// public address is `https` a second cookie `__Host-outpost_upstream` (`Secure; SameSite=None`)
/// carries the same value. Either one binds. The callback's cross-site POST is not checked for its
/// origin as the sign-in forms are: `state` bound to the cookie is its CSRF protection.
struct UpstreamWebSignIn: Sendable {
    static let callbackPath = "/oauth/upstream/callback"
    static let bindingCookie = "outpost_upstream"
    static let crossSiteBindingCookie = "__Host-outpost_upstream"

    /// What the sign-in finishes: the app's authorization request (its validated fields) or the
    /// device code whose user code the person entered.
    struct Continuation: Codable, Sendable, Equatable {
        var authorization: [String: String]?
        var deviceUserCode: String?
    }

    /// A sign-in that cannot go on, with the page's message and status.
    struct Refusal: Error {
        var message: String
        var status: HTTPResponse.Status = .badRequest
    }

    let auth: AuthService
    let exchange: IDTokenExchange
    let lifetime: Duration

    init(exchange: IDTokenExchange, configuration: FederationConfiguration) {
        self.auth = exchange.auth
        self.exchange = exchange
        self.lifetime = configuration.webSignInLifetime
    }

    private var endpoint: UpstreamTokenEndpoint { exchange.endpoint }

    private var sessions: (any UpstreamSessionStorage)? { auth.storage as? any UpstreamSessionStorage }

    /// The providers to offer on the sign-in pages; none when the storage cannot keep sign-ins.
    func providers() async throws -> [UpstreamProvider] {
        guard sessions != nil else { return [] }
        return try await exchange.providers.upstreamProviders()
    }

    /// Starts a sign-in with the provider `name`: where to send the browser, and the cookies to set.
    func start(provider name: String, continuing continuation: Continuation) async throws
        -> (location: String, cookies: [String])
    {
        guard let sessions, let provider = try await exchange.providers.upstreamProvider(name: name),
            let clientID = provider.clientIDs.first
        else { throw Refusal(message: "This server offers no sign-in with '\(name)'.") }
        let endpoints: UpstreamEndpoints
        do {
            endpoints = try await endpoint.documents.endpoints(provider)
        } catch {
            auth.logger.warning(
                "fetching an upstream provider's endpoints failed", metadata: ["provider": "\(name)", "error": "\(error)"])
            throw Refusal(message: "\(name) cannot be reached now; try again later.", status: .badGateway)
        }
        guard let authorizationURL = URL(string: endpoints.authorization), UpstreamDocuments.isAllowed(authorizationURL),
            authorizationURL.fragment == nil
        else { throw Refusal(message: "\(name)'s sign-in page is not an https address.", status: .badGateway) }
        let state = Secrets.token(prefix: "")
        let nonce = Secrets.token(prefix: "")
        let verifier = Secrets.token(prefix: "")
        let binding = Secrets.token(prefix: "opu_")
        let now = AuthService.now()
        let request = String(decoding: try JSONEncoder().encode(continuation), as: UTF8.self)
        try await sessions.savePendingSignIn(
            stateHash: Secrets.hash(state),
            PendingUpstreamSignIn(
                provider: provider.name, nonce: nonce, codeVerifier: verifier, bindingHash: Secrets.hash(binding),
                request: request, expiresAt: now + AuthService.milliseconds(lifetime)),
            now: now)
        var query = [
            ("response_type", "code"), ("client_id", clientID), ("redirect_uri", auth.issuer + Self.callbackPath),
            ("state", state), ("nonce", Self.sentNonce(nonce, kind: provider.kind)),
            ("code_challenge", Secrets.s256(verifier)), ("code_challenge_method", "S256"),
        ]
        if provider.kind == .apple {
            // Apple answers a request for the person's name or e-mail only with form_post.
            query += [("scope", "name email"), ("response_mode", "form_post")]
        } else {
            query.append(("scope", endpoints.scopes.contains("email") ? "openid email" : "openid"))
        }
        let separator = authorizationURL.query == nil ? "?" : "&"
        let seconds = lifetime.components.seconds
        var cookies = ["\(Self.bindingCookie)=\(binding); Path=\(Self.callbackPath); HttpOnly; SameSite=Lax; Max-Age=\(seconds)"]
        if auth.issuer.hasPrefix("https://") {
            cookies.append(
                "\(Self.crossSiteBindingCookie)=\(binding); Path=/; Secure; HttpOnly; SameSite=None; Max-Age=\(seconds)")
        }
        return (endpoints.authorization + separator + URLEncodedForm.encode(query), cookies)
    }

    /// The `Set-Cookie` values that remove the binding cookies.
    var clearedCookies: [String] {
        var cookies = ["\(Self.bindingCookie)=; Path=\(Self.callbackPath); HttpOnly; SameSite=Lax; Max-Age=0"]
        if auth.issuer.hasPrefix("https://") {
            cookies.append("\(Self.crossSiteBindingCookie)=; Path=/; Secure; HttpOnly; SameSite=None; Max-Age=0")
        }
        return cookies
    }

    /// The nonce as the authorization request carries it: Apple's ID tokens carry what was sent,
    /// and ``UpstreamTokenVerifier/checkNonce(_:claim:kind:)`` expects their claim to be the
    /// SHA-256 of the raw nonce, as it is on the native sign-in.
    static func sentNonce(_ nonce: String, kind: UpstreamProvider.Kind) -> String {
        kind == .apple ? Hex.string(SHA256.hash(data: Data(nonce.utf8))) : nonce
    }

    /// Checks the provider's answer (`fields`, from the query or a form_post body) and signs the
    /// person in: returns the user and what to finish. Every failure is a ``Refusal``, and signs no one in.
    func finish(_ fields: [String: String], bindings: [String]) async throws -> (userID: String, continuation: Continuation) {
        guard let sessions, let state = fields["state"], !state.isEmpty, state.utf8.count <= 512 else {
            throw Refusal(message: "The answer of the sign-in provider has no state; start again from the application.")
        }
        // Taken (removed) before anything else is checked: a state is answered once.
        guard let pending = try await sessions.takePendingSignIn(stateHash: Secrets.hash(state)) else {
            throw Refusal(
                message: "This sign-in is unknown or was already finished; start again from the application.")
        }
        guard bindings.contains(where: { Secrets.equal(Secrets.hash($0), pending.bindingHash) }) else {
            throw Refusal(
                message: "This sign-in was started in another browser (or its cookie was removed), so it was stopped; "
                    + "start again from the application in this browser.")
        }
        guard pending.expiresAt > AuthService.now() else {
            throw Refusal(message: "This sign-in took too long and expired; start again from the application.")
        }
        let name = pending.provider
        if let error = fields["error"] {
            let code = error.utf8.count <= 64 && error.allSatisfy { $0.isLetter || $0 == "_" } ? error : "error"
            throw Refusal(message: "\(name) did not sign you in (\(code)). Start again from the application to retry.")
        }
        guard let provider = try await exchange.providers.upstreamProvider(name: name),
            let continuation = try? JSONDecoder().decode(Continuation.self, from: Data(pending.request.utf8))
        else { throw Refusal(message: "This server no longer offers sign-in with \(name).") }
        // RFC 9207: an answer that names an issuer must name this provider's (mix-up defence).
        if let issuer = fields["iss"], issuer != provider.issuer {
            throw Refusal(message: "The answer came from another issuer than \(name); start again from the application.")
        }
        guard let code = fields["code"], !code.isEmpty, code.utf8.count <= 4096 else {
            throw Refusal(message: "\(name) answered without a code; start again from the application.")
        }
        let tokens: UpstreamTokens
        do {
            let endpoints = try await endpoint.documents.endpoints(provider)
            tokens = try await endpoint.redeem(
                code: code, redirectURI: auth.issuer + Self.callbackPath, codeVerifier: pending.codeVerifier,
                provider: provider, endpoints: endpoints)
        } catch {
            auth.logger.warning(
                "redeeming an upstream code failed", metadata: ["provider": "\(name)", "error": "\(error)"])
            throw Refusal(message: "\(name) did not confirm the sign-in; start again from the application.", status: .badGateway)
        }
        let identity: UpstreamIdentity
        do {
            identity = try await exchange.verifier.verify(tokens.idToken, provider: provider, nonce: pending.nonce)
        } catch let error as OAuthError {
            throw Refusal(message: "\(name)'s answer was refused: \(error.description)", status: .badGateway)
        }
        let userID = try await exchange.user(identity, provider: provider)
        if let refresh = tokens.refreshToken {
            try await UpstreamRefreshTokens.make(storage: auth.storage)?.keep(
                refresh, userID: userID, provider: provider.name)
        }
        return (userID, continuation)
    }
}
