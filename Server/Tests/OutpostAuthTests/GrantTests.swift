import Foundation
@_spi(OutpostInternal) import OutpostCore
import Testing

@testable import OutpostAuth

@Suite("Grants: request encoding, responses and errors")
struct GrantTests {
    @Test("the password grant form-encodes every field, and a public client sends only its id")
    func passwordGrant() async throws {
        let transport = authServer { _ in .token("at-1", refresh: "rt-1", expiresIn: 600, scope: "read write") }
        let store = InMemoryCredentialStore()
        let clock = FakeClock()
        let auth = makeAuthenticator(transport, store: store, clock: clock)
        let credential = try await auth.signIn(username: "ana maría", password: "p@ss w&rd+=%")
        let request = try #require(transport.requests.first)
        #expect(request.method == .post)
        #expect(request.path == "/oauth/token")
        #expect(request.header(.contentType) == "application/x-www-form-urlencoded")
        #expect(request.header(.authorization) == nil)
        #expect(request.bodyText.contains("password=p%40ss%20w%26rd%2B%3D%25"))
        #expect(
            request.form == [
                "grant_type": "password", "username": "ana maría", "password": "p@ss w&rd+=%", "scope": "read write",
                "client_id": "cli",
            ])
        #expect(credential.accessToken == "at-1")
        #expect(credential.refreshToken == "rt-1")
        #expect(credential.scopes == ["read", "write"])
        #expect(credential.expiresAt == clock.now.addingTimeInterval(600))
        #expect(await store.load(account: "cli") == credential)
    }

    @Test("client credentials with client_secret_basic: form-encoded id and secret in HTTP Basic")
    func clientCredentialsBasic() async throws {
        let transport = authServer { _ in .token("at-cc") }
        let registration = ClientRegistration(clientID: "svc client", clientSecret: "s3cr:t+", scopes: ["admin"])
        let auth = makeAuthenticator(transport, registration: registration)
        let credential = try await auth.signInWithClientCredentials()
        let request = try #require(transport.requests.first)
        let expected = Data("svc%20client:s3cr%3At%2B".utf8).base64EncodedString()
        #expect(request.header(.authorization) == "Basic \(expected)")
        #expect(request.form == ["grant_type": "client_credentials", "scope": "admin"])
        #expect(credential.scopes == ["admin"])
        #expect(credential.refreshToken == nil)
        #expect(!registration.description.contains("s3cr"))
    }

    @Test("client_secret_post puts the id and secret in the form")
    func clientSecretPost() async throws {
        let transport = authServer { _ in .token("at") }
        let registration = ClientRegistration(clientID: "svc", clientSecret: "sec", authenticationMethod: .clientSecretPost)
        _ = try await makeAuthenticator(transport, registration: registration).signInWithClientCredentials()
        let request = try #require(transport.requests.first)
        #expect(request.header(.authorization) == nil)
        #expect(request.form == ["grant_type": "client_credentials", "client_id": "svc", "client_secret": "sec"])
    }

    @Test(
        "token endpoint errors map to clear codes",
        arguments: [
            ("invalid_grant", 400, AuthError.Code.invalidGrant), ("invalid_client", 401, .invalidClient),
            ("unauthorized_client", 400, .unauthorizedClient), ("invalid_scope", 400, .invalidScope),
            ("unsupported_grant_type", 400, .serverError), ("invalid_request", 400, .serverError),
            ("access_denied", 400, .accessDenied), ("expired_token", 400, .expiredToken),
        ])
    func errorMapping(error: String, status: Int, code: AuthError.Code) async throws {
        let transport = authServer { _ in .oauthError(error, status: status) }
        let thrown = await #expect(throws: AuthError.self) {
            try await makeAuthenticator(transport).signIn(username: "u", password: "p")
        }
        #expect(thrown?.code == code)
        #expect(thrown?.oauthError == error)
        #expect(thrown?.serverMessage == "described \(error)")
        #expect(thrown?.status == status)
    }

    @Test("429 becomes rateLimited with the Retry-After delay")
    func rateLimited() async throws {
        let transport = authServer { _ in .json(429, ["error": "slow down please"], headers: ["Retry-After": "7"]) }
        let thrown = await #expect(throws: AuthError.self) {
            try await makeAuthenticator(transport).signIn(username: "u", password: "p")
        }
        #expect(thrown?.code == .rateLimited)
        #expect(thrown?.retryAfter == .seconds(7))
    }

    @Test("a token response without access_token, or not JSON, is invalidResponse")
    func malformed() async throws {
        for reply in [Reply.json(200, ["token_type": "Bearer"]), Reply(status: 200, body: Data("<html>".utf8))] {
            let transport = authServer { _ in reply }
            let thrown = await #expect(throws: AuthError.self) {
                try await makeAuthenticator(transport).signIn(username: "u", password: "p")
            }
            #expect(thrown?.code == .invalidResponse)
        }
    }

    @Test("a transport failure is requestFailed")
    func transportFailure() async throws {
        let transport = authServer { _ in throw OutpostError(.cannotConnect, "refused") }
        let thrown = await #expect(throws: AuthError.self) {
            try await makeAuthenticator(transport).signIn(username: "u", password: "p")
        }
        #expect(thrown?.code == .requestFailed)
    }

    @Test("refresh rotates the refresh token and saves the new credential")
    func refreshRotation() async throws {
        let transport = authServer { _ in .token("at-2", refresh: "rt-2") }
        let store = InMemoryCredentialStore()
        await store.save(
            Credential(accessToken: "at-1", refreshToken: "rt-1", expiresAt: Date(timeIntervalSince1970: 0)), account: "cli")
        let auth = makeAuthenticator(transport, store: store)
        let fresh = try await auth.refresh()
        #expect(transport.requests.first?.form == ["grant_type": "refresh_token", "refresh_token": "rt-1", "client_id": "cli"])
        #expect(fresh.refreshToken == "rt-2")
        #expect(await store.load(account: "cli")?.accessToken == "at-2")
        #expect(try await auth.credential()?.accessToken == "at-2")
    }

    @Test("a server that does not rotate keeps the old refresh token")
    func refreshWithoutRotation() async throws {
        let transport = authServer { _ in .token("at-2") }
        let store = InMemoryCredentialStore()
        await store.save(Credential(accessToken: "at-1", refreshToken: "rt-1"), account: "cli")
        let fresh = try await makeAuthenticator(transport, store: store).refresh()
        #expect(fresh.refreshToken == "rt-1")
    }

    @Test("a refused refresh token (reuse detected) removes the credential")
    func refreshRefused() async throws {
        let transport = authServer { _ in .oauthError("invalid_grant") }
        let store = InMemoryCredentialStore()
        await store.save(Credential(accessToken: "at-1", refreshToken: "rt-old"), account: "cli")
        let auth = makeAuthenticator(transport, store: store)
        let thrown = await #expect(throws: AuthError.self) { try await auth.refresh() }
        #expect(thrown?.code == .invalidGrant)
        #expect(await store.load(account: "cli") == nil)
        #expect(try await auth.credential() == nil)
    }

    @Test("revoke sends token and hint; sign-out clears locally, revokes both tokens, and can open the browser logout")
    func signOut() async throws {
        let transport = authServer { _ in Reply(status: 200, body: Data()) }
        let store = InMemoryCredentialStore()
        await store.save(Credential(accessToken: "at-1", refreshToken: "rt-1"), account: "cli")
        let browser = RecordingBrowser()
        let auth = makeAuthenticator(transport, store: store, browser: browser)
        try await auth.signOut(revoke: true, endBrowserSession: true)
        #expect(await store.load(account: "cli") == nil)
        #expect(try await auth.credential() == nil)
        let forms = transport.requests.map(\.form)
        #expect(transport.requests.allSatisfy { $0.path == "/oauth/revoke" })
        #expect(
            forms == [
                ["token": "rt-1", "token_type_hint": "refresh_token", "client_id": "cli"],
                ["token": "at-1", "token_type_hint": "access_token", "client_id": "cli"],
            ])
        let logout = try #require(browser.opened.value.first)
        #expect(logout.path == "/oauth/logout")
        #expect(logout.query?.contains("redirect_uri=myapp") == true)
    }

    @Test("sign-out still clears locally when revocation fails")
    func signOutRevocationFails() async throws {
        let transport = authServer { _ in throw OutpostError(.cannotConnect, "down") }
        let store = InMemoryCredentialStore()
        await store.save(Credential(accessToken: "at-1"), account: "cli")
        let thrown = await #expect(throws: AuthError.self) { try await makeAuthenticator(transport, store: store).signOut() }
        #expect(thrown?.code == .revocationFailed)
        #expect(await store.load(account: "cli") == nil)
    }

    @Test("custom provider sign-in posts provider, auth_data and client_id as JSON")
    func provider() async throws {
        let transport = authServer { _ in .token("at-p", refresh: "rt-p") }
        let auth = makeAuthenticator(transport)
        let credential = try await auth.signIn(provider: "com.example", data: ["token": "fb-123", "id": 42])
        let request = try #require(transport.requests.first)
        #expect(request.path == "/auth/login")
        #expect(request.header(.contentType) == "application/json")
        let body = try JSONValue(parsing: request.body ?? Data())
        #expect(body == ["provider": "com.example", "auth_data": ["token": "fb-123", "id": 42], "client_id": "cli"])
        #expect(credential.accessToken == "at-p")
    }

    @Test("custom provider errors come in the Outpost envelope")
    func providerError() async throws {
        let transport = authServer { _ in
            .json(401, ["error": ["code": "providerRejected", "message": "bad signature"]])
        }
        let thrown = await #expect(throws: AuthError.self) {
            try await makeAuthenticator(transport).signIn(provider: "com.example", data: [:])
        }
        #expect(thrown?.code == .invalidGrant)
        #expect(thrown?.oauthError == "providerRejected")
        #expect(thrown?.serverMessage == "bad signature")
    }

    @Test("discovery reads RFC 8414 metadata and refuses another issuer")
    func discovery() async throws {
        let metadata: JSONValue = [
            "issuer": "https://auth.test", "authorization_endpoint": "https://auth.test/oauth/authorize",
            "token_endpoint": "https://auth.test/oauth/token", "revocation_endpoint": "https://auth.test/oauth/revoke",
            "device_authorization_endpoint": "https://auth.test/oauth/device_authorization",
            "grant_types_supported": ["authorization_code"], "response_types_supported": ["code", "token"],
            "code_challenge_methods_supported": ["S256"],
        ]
        let transport = authServer { request in
            request.path.hasPrefix("/.well-known/oauth-authorization-server") ? .json(200, metadata) : .json(404, [:])
        }
        let auth = try await Authenticator.discover(
            issuer: testBase, client: makeClient(transport), registration: ClientRegistration(clientID: "cli"))
        let endpoints = auth.configuration.endpoints
        #expect(endpoints.token.absoluteString == "https://auth.test/oauth/token")
        #expect(endpoints.deviceAuthorization?.path == "/oauth/device_authorization")
        #expect(endpoints.providerLogin == nil)  // not in the metadata, so not made up

        let thrown = await #expect(throws: AuthError.self) {
            try await Endpoints.discover(issuer: URL(string: "https://auth.test/other")!, client: makeClient(transport))
        }
        #expect(thrown?.code == .discoveryFailed)
        #expect(
            AuthorizationServerMetadata.wellKnownURL(for: URL(string: "https://h.example/tenant/")!)?.absoluteString
                == "https://h.example/.well-known/oauth-authorization-server/tenant")
    }
}
