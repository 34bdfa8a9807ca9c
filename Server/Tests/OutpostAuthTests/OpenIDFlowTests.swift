import Foundation
@_spi(OutpostInternal) import OutpostCore
import OutpostTesting
import Synchronization
import Testing

@testable import OutpostAuth

/// The authenticator's OpenID Connect sign-in against an in-memory token endpoint and JWKS.
@Suite("OpenID Connect sign-in through the authenticator")
struct OpenIDFlowTests {
    static let registration = ClientRegistration(
        clientID: "cli", redirectURI: URL(string: "myapp://oauth/callback"), scopes: ["openid", "profile"])

    /// Serves the JWKS of the test key, and token responses carrying whatever `idToken` holds.
    struct Server {
        let idToken = Slot()
        let accessTokens = Counter()
        let transport: ScriptedTransport

        init() throws {
            let (key, _) = try TestIssuer.keys.get()
            let jwks = try TestIssuer.jwks([(key, "k1")])
            let idToken = self.idToken
            let accessTokens = self.accessTokens
            transport = authServer { request in
                if request.path == "/.well-known/jwks.json" { return Reply(status: 200, body: jwks) }
                var object: [String: JSONValue] = [
                    "access_token": .string("at-\(accessTokens.next())"), "token_type": "Bearer", "expires_in": 600,
                    "refresh_token": .string("rt-\(accessTokens.current)"), "scope": "openid profile",
                ]
                if let token = idToken.value { object["id_token"] = .string(token) }
                return .json(200, .object(object))
            }
        }

        /// Signs claims for this client and issuer, binding them to the next access token.
        func serve(_ change: (inout TestIssuer.Claims) -> Void) async throws {
            let (key, _) = try TestIssuer.keys.get()
            var claims = TestIssuer.Claims()
            claims.iss = testBase.absoluteString
            claims.aud = "cli"
            claims.at_hash = IDTokenVerifier.accessTokenHash("at-\(accessTokens.current + 1)", alg: "RS256")
            change(&claims)
            let token = try await TestIssuer.sign(claims, key: key, kid: "k1")
            idToken.value = token
        }
    }

    final class Slot: Sendable {
        private let stored = Mutex<String?>(nil)
        var value: String? {
            get { stored.withLock { $0 } }
            set { stored.withLock { $0 = newValue } }
        }
    }

    final class Counter: Sendable {
        private let value = Mutex(0)
        func next() -> Int {
            value.withLock {
                $0 += 1
                return $0
            }
        }
        var current: Int { value.withLock { $0 } }
    }

    func redirect(_ request: AuthorizationRequest) throws -> URL {
        try #require(URL(string: "myapp://oauth/callback?code=c&state=\(request.state)"))
    }

    @Test("openid in the scopes sends a nonce; the ID token is verified and kept, and stored with the credential")
    func verifiedAndStored() async throws {
        let server = try Server()
        let store = InMemoryCredentialStore()
        let auth = makeAuthenticator(server.transport, registration: Self.registration, store: store, clock: FakeClock())
        let request = try await auth.authorizationRequest()
        let nonce = try #require(request.nonce)
        #expect(request.url.query?.contains("nonce=\(nonce)") == true)
        try await server.serve { $0.nonce = nonce }
        let credential = try await auth.completeAuthorization(from: try redirect(request))
        #expect(credential.idToken?.claims.subject == "u_ada")
        #expect(credential.idToken?.claims.nonce == nonce)
        #expect(await store.load(account: "cli")?.idToken == credential.idToken)
        #expect(server.transport.count(path: "/.well-known/jwks.json") == 1)

        // Without openid: no nonce, and no ID token is asked for or kept.
        let plain = try await auth.authorizationRequest(scopes: ["profile"])
        #expect(plain.nonce == nil)
        #expect(plain.url.query?.contains("nonce") == false)
    }

    @Test("a bad ID token fails the sign-in with its own code and stores nothing")
    func refused() async throws {
        let cases: [(AuthError.Code, @Sendable (inout TestIssuer.Claims) -> Void)] = [
            (.idTokenNonceMismatch, { $0.nonce = "from-another-sign-in" }),
            (.idTokenWrongIssuer, { $0.iss = "https://evil.example" }),
            (.idTokenWrongAudience, { $0.aud = "another-client" }),
            (.idTokenExpired, { $0.exp = Int(TestIssuer.now.timeIntervalSince1970) - 3600 }),
            (.idTokenAccessTokenMismatch, { $0.at_hash = IDTokenVerifier.accessTokenHash("at-999", alg: "RS256") }),
        ]
        for (code, change) in cases {
            let server = try Server()
            let store = InMemoryCredentialStore()
            let auth = makeAuthenticator(server.transport, registration: Self.registration, store: store, clock: FakeClock())
            let request = try await auth.authorizationRequest()
            try await server.serve { claims in
                claims.nonce = request.nonce
                change(&claims)
            }
            let error = try await #require(throws: AuthError.self) {
                _ = try await auth.completeAuthorization(from: try redirect(request))
            }
            #expect(error.code == code)
            #expect(await store.load(account: "cli") == nil)
            #expect(try await auth.credential() == nil)
        }
    }

    @Test("no id_token in the answer to an openid sign-in is an error")
    func missing() async throws {
        let server = try Server()
        let auth = makeAuthenticator(server.transport, registration: Self.registration, clock: FakeClock())
        let request = try await auth.authorizationRequest()
        let error = try await #require(throws: AuthError.self) {
            _ = try await auth.completeAuthorization(from: try redirect(request))
        }
        #expect(error.code == .idTokenInvalid)
        #expect(error.message.contains("id_token"))
    }

    @Test("a refresh replaces the ID token with a new one for the same user, keeps it when none comes, drops another user's")
    func refresh() async throws {
        let server = try Server()
        let auth = makeAuthenticator(server.transport, registration: Self.registration, clock: FakeClock())
        let request = try await auth.authorizationRequest()
        try await server.serve { $0.nonce = request.nonce }
        let first = try await auth.completeAuthorization(from: try redirect(request))

        try await server.serve {
            $0.nonce = nil
            $0.iat = Int(TestIssuer.now.timeIntervalSince1970) + 1
        }
        let renewed = try await auth.refresh()
        #expect(renewed.idToken != nil)
        #expect(renewed.idToken != first.idToken)
        #expect(renewed.idToken?.claims.subject == first.idToken?.claims.subject)

        server.idToken.value = nil
        let kept = try await auth.refresh()
        #expect(kept.idToken == renewed.idToken)

        try await server.serve {
            $0.nonce = nil
            $0.sub = "u_mallory"
        }
        let dropped = try await auth.refresh()
        #expect(dropped.idToken == nil)
    }
}
