import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import JWTKit
import NIOCore
import Synchronization

/// An OpenID Connect provider for tests: serves its discovery document and key set on 127.0.0.1
/// port 0 and signs ID tokens with jwt-kit. Its keys can be rotated; it counts key set and discovery fetches.
///
/// It is also an authorization server for the web sign-in (``TestIssuer+WebFlow.swift``): an
/// authorization endpoint that signs in ``State/subject`` at once, a token endpoint that checks
/// the code, redirect URI and PKCE verifier, and a revocation endpoint.
final class TestIssuer: Sendable {
    struct State {
        var base = ""
        var kid = "key-1"
        var key = ES256PrivateKey()
        var jwksFetches = 0
        var discoveryFetches = 0
        var web = WebFlow()
    }

    let base: String
    let state: Mutex<State>
    private let stopServer: @Sendable () async -> Void

    private init(base: String, stop: @escaping @Sendable () async -> Void) {
        self.base = base
        self.state = Mutex(State())
        self.stopServer = stop
    }

    static func start() async throws -> TestIssuer {
        let box = Box()
        let router = Router()
        router.get("/.well-known/openid-configuration") { _, _ -> Response in
            box.issuer?.state.withLock { $0.discoveryFetches += 1 }
            let base = box.issuer?.base ?? ""
            return Self.json([
                "issuer": base, "jwks_uri": base + "/jwks", "id_token_signing_alg_values_supported": ["ES256"],
                "authorization_endpoint": base + "/authorize", "token_endpoint": base + "/token",
                "revocation_endpoint": base + "/revoke", "scopes_supported": ["openid", "email"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
            ])
        }
        router.get("/authorize") { request, _ -> Response in
            guard let issuer = box.issuer else { return Response(status: .serviceUnavailable) }
            return issuer.authorize(request.uri.queryParameters)
        }
        router.post("/token") { request, _ -> Response in
            guard let issuer = box.issuer else { return Response(status: .serviceUnavailable) }
            let body = try await request.body.collect(upTo: 64 * 1024)
            return try await issuer.token(Self.form(String(buffer: body)), authorization: request.headers[.authorization])
        }
        router.post("/revoke") { request, _ -> Response in
            guard let issuer = box.issuer else { return Response(status: .serviceUnavailable) }
            let body = try await request.body.collect(upTo: 64 * 1024)
            return issuer.revoke(Self.form(String(buffer: body)))
        }
        router.get("/jwks") { _, _ -> Response in
            guard let issuer = box.issuer else { return Response(status: .serviceUnavailable) }
            return Self.json(["keys": [issuer.publicJWK()]])
        }
        let (url, stop) = try await LocalApplication.start(router, label: "test-issuer")
        let issuer = TestIssuer(base: url.absoluteString, stop: stop)
        box.set(issuer)
        return issuer
    }

    func stop() async { await stopServer() }

    var jwksFetches: Int { state.withLock { $0.jwksFetches } }
    var discoveryFetches: Int { state.withLock { $0.discoveryFetches } }

    /// Replaces the signing key (and its kid), as a provider rotating its keys does.
    func rotate() {
        state.withLock { state in
            state.kid = "key-\(Int(state.kid.dropFirst(4))! + 1)"
            state.key = ES256PrivateKey()
        }
    }

    private func publicJWK() -> [String: Any] {
        state.withLock { state in
            state.jwksFetches += 1
            let raw = state.key.publicKey.parameters!
            return ["kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": state.kid, "x": raw.x, "y": raw.y]
        }
    }

    struct Claims: JWTPayload {
        var iss: String
        var sub: String
        var aud: [String]
        var exp: Int
        var iat: Int
        var nonce: String?
        var email: String?
        var email_verified: Bool?
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// An ID token from this issuer. `kid` and `key` override the current key (a forged or unknown key).
    func idToken(
        subject: String = "person-1", audience: [String] = ["app-1"], nonce: String? = "nonce-1",
        expiresIn: TimeInterval = 600, issuedAgo: TimeInterval = 0, email: String? = nil, emailVerified: Bool? = nil,
        issuer: String? = nil, kid: String? = nil, key: ES256PrivateKey? = nil
    ) async throws -> String {
        let (currentKid, currentKey) = state.withLock { ($0.kid, $0.key) }
        let now = Date().timeIntervalSince1970 - issuedAgo
        let claims = Claims(
            iss: issuer ?? base, sub: subject, aud: audience, exp: Int(now + expiresIn), iat: Int(now), nonce: nonce,
            email: email, email_verified: emailVerified)
        let keys = JWTKeyCollection()
        let useKid = JWKIdentifier(string: kid ?? currentKid)
        await keys.add(ecdsa: key ?? currentKey, kid: useKid)
        return try await keys.sign(claims, kid: useKid)
    }

    static func json(_ object: [String: Any], status: HTTPResponse.Status = .ok) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object)) ?? Data()
        return Response(
            status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// The issuer, for the routes that start before it exists.
    private final class Box: Sendable {
        private let value = Mutex<TestIssuer?>(nil)
        var issuer: TestIssuer? { value.withLock { $0 } }
        func set(_ issuer: TestIssuer) { value.withLock { $0 = issuer } }
    }
}
