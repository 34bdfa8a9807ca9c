import Foundation
import JWTKit
import Logging
import Outpost
import OutpostServer
import OutpostTestSupport
import Testing

extension AuthFixture {
    /// Registers `issuer` as the provider `name` and a public client that may exchange ID tokens.
    func federation(
        _ issuer: TestIssuer, name: String = "example", kind: UpstreamProvider.Kind = .openID, clientIDs: [String] = ["app-1"]
    ) async throws -> OAuthClient {
        try await withStorage { storage in
            let providers = try #require(storage as? any UpstreamProviderStorage)
            let added = try await providers.addUpstreamProvider(
                UpstreamProvider(name: name, issuer: issuer.base, kind: kind, clientIDs: clientIDs, createdAt: 0))
            #expect(added)
            return try await storage.registerClient(
                name: "Native app", redirectURIs: [], grants: ["token_exchange", "refresh_token"],
                scopes: ["records", "profile"], confidential: false
            ).client
        }
    }

    /// An authenticator for `client`, its HTTP client shut down however `body` ends.
    func withAuthenticator<T>(
        client: OAuthClient, scopes: [String] = ["records", "profile"], _ body: (Authenticator) async throws -> T
    ) async throws -> T {
        let (auth, http) = authenticator(clientID: client.id, scopes: scopes)
        do {
            let result = try await body(auth)
            try await http.shutdown()
            return result
        } catch {
            try? await http.shutdown()
            throw error
        }
    }

    /// A raw token exchange; returns the status and the JSON answer.
    func exchange(_ token: String, client: OAuthClient, provider: String = "example", nonce: String? = "nonce-1")
        async throws -> TestBrowser.Page
    {
        var fields = [
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "subject_token": token,
            "subject_token_type": "urn:ietf:params:oauth:token-type:id_token", "provider": provider, "client_id": client.id,
        ]
        fields["nonce"] = nonce
        return try await self.token(fields)
    }

    func expectRefused(_ page: TestBrowser.Page, _ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(page.status == 400, "\(page.body)", sourceLocation: sourceLocation)
        #expect(page.json["error"] as? String == "invalid_grant", sourceLocation: sourceLocation)
        #expect(
            (page.json["error_description"] as? String)?.contains(text) == true, "\(page.body)",
            sourceLocation: sourceLocation)
    }
}

func withIssuer(_ body: (TestIssuer) async throws -> Void) async throws {
    let issuer = try await TestIssuer.start()
    do {
        try await body(issuer)
    } catch {
        await issuer.stop()
        throw error
    }
    await issuer.stop()
}

@Suite("Sign-in with upstream OpenID Connect providers (token exchange)", .closesWhatItOpens)
struct FederationTests {
    @Test("the SDK exchanges an ID token: the first sign-in creates the user, the next signs the same one in")
    func nativeExchange() async throws {
        try await withIssuer { issuer in
            try await withAuthFixture { fixture in
                let client = try await fixture.federation(issuer)
                let nonce = SignInNonce()
                let token = try await issuer.idToken(
                    nonce: nonce.value, email: "person@privaterelay.appleid.com", emailVerified: true)
                try await fixture.withAuthenticator(client: client) { auth in
                    let first = try await auth.signIn(idToken: token, provider: "example", nonce: nonce)
                    let me = try await fixture.me(auth)
                    #expect(me["username"]?.stringValue == "example:person-1")
                    let again = try await issuer.idToken(nonce: nonce.value)
                    let second = try await auth.signIn(idToken: again, provider: "example", nonce: nonce)
                    #expect(second.accessToken != first.accessToken)
                    let meAgain = try await fixture.me(auth)
                    #expect(meAgain["id"] == me["id"])
                    let email = try await fixture.withStorage { storage in
                        try await (storage as? any UpstreamProviderStorage)?.identityEmail(
                            provider: issuer.base, subject: "person-1")
                    }
                    #expect(email?.email == "person@privaterelay.appleid.com")
                    #expect(email?.verified == true)
                }
            }
        }
    }

    @Test("wrong audience, expired, wrong or missing nonce, forged signature, unknown provider: invalid_grant that says why")
    func refusals() async throws {
        try await withIssuer { issuer in
            try await withAuthFixture(configure: { $0.federation.leeway = .seconds(5) }) { fixture in
                let client = try await fixture.federation(issuer)
                fixture.expectRefused(
                    try await fixture.exchange(try await issuer.idToken(audience: ["another-app"]), client: client), "audience")
                fixture.expectRefused(
                    try await fixture.exchange(try await issuer.idToken(audience: ["app-1", "another-app"]), client: client),
                    "audience")
                fixture.expectRefused(
                    try await fixture.exchange(try await issuer.idToken(expiresIn: -30), client: client), "expired")
                fixture.expectRefused(
                    try await fixture.exchange(try await issuer.idToken(issuedAgo: -600), client: client), "future")
                fixture.expectRefused(
                    try await fixture.exchange(try await issuer.idToken(nonce: "other"), client: client), "nonce")
                fixture.expectRefused(
                    try await fixture.exchange(try await issuer.idToken(), client: client, nonce: nil), "nonce is missing")
                fixture.expectRefused(
                    try await fixture.exchange(try await issuer.idToken(nonce: nil), client: client), "carries no nonce")
                fixture.expectRefused(
                    try await fixture.exchange(try await issuer.idToken(key: ES256PrivateKey()), client: client), "signature")
                fixture.expectRefused(
                    try await fixture.exchange(try await issuer.idToken(issuer: "https://elsewhere.example"), client: client),
                    "issuer")
                fixture.expectRefused(
                    try await fixture.exchange(try await issuer.idToken(), client: client, provider: "nobody"),
                    "No upstream provider 'nobody'")
                // The SDK reports the refusal as invalidGrant.
                try await fixture.withAuthenticator(client: client) { auth in
                    let thrown = await #expect(throws: AuthError.self) {
                        try await auth.signIn(
                            idToken: try await issuer.idToken(audience: ["another-app"]), provider: "example",
                            nonce: SignInNonce(value: "nonce-1"))
                    }
                    #expect(thrown?.code == .invalidGrant)
                }
                // A good token still passes after all that, once.
                let once = try await issuer.idToken()
                #expect(try await fixture.exchange(once, client: client).status == 200)
                fixture.expectRefused(try await fixture.exchange(once, client: client), "already exchanged")
            }
        }
    }

    @Test("a rotated upstream key is fetched once; made-up kids are refused without fetching again within the interval")
    func keyRotation() async throws {
        try await withIssuer { issuer in
            try await withAuthFixture { fixture in
                let client = try await fixture.federation(issuer)
                #expect(try await fixture.exchange(try await issuer.idToken(), client: client).status == 200)
                #expect(issuer.jwksFetches == 1)
                issuer.rotate()
                let rotated = try await fixture.exchange(try await issuer.idToken(), client: client)
                #expect(rotated.status == 200, "\(rotated.body)")
                #expect(issuer.jwksFetches == 2)
                for index in 0..<5 {
                    fixture.expectRefused(
                        try await fixture.exchange(try await issuer.idToken(kid: "forged-\(index)"), client: client),
                        "does not publish")
                }
                #expect(issuer.jwksFetches == 2)
            }
        }
    }

    @Test("Apple's kind: the token carries the SHA-256 hex of the raw nonce the app sends")
    func appleNonce() async throws {
        try await withIssuer { issuer in
            try await withAuthFixture { fixture in
                let client = try await fixture.federation(issuer, name: "apple", kind: .apple)
                let nonce = SignInNonce()
                let hashed = try await issuer.idToken(nonce: nonce.sha256)
                #expect(try await fixture.exchange(hashed, client: client, provider: "apple", nonce: nonce.value).status == 200)
                fixture.expectRefused(
                    try await fixture.exchange(
                        try await issuer.idToken(nonce: nonce.value), client: client, provider: "apple", nonce: nonce.value),
                    "SHA-256")
            }
        }
    }

    @Test("no silent linking: one e-mail through two providers is two users; a client without the grant is refused")
    func separateIdentities() async throws {
        try await withIssuer { first in
            try await withIssuer { second in
                try await withAuthFixture { fixture in
                    let client = try await fixture.federation(first)
                    _ = try await fixture.withStorage { storage in
                        try await (storage as? any UpstreamProviderStorage)?.addUpstreamProvider(
                            UpstreamProvider(
                                name: "other", issuer: second.base, kind: .openID, clientIDs: ["app-1"], createdAt: 0))
                    }
                    let one = try await fixture.exchange(
                        try await first.idToken(email: "same@example.com", emailVerified: true), client: client)
                    let two = try await fixture.exchange(
                        try await second.idToken(email: "same@example.com", emailVerified: true), client: client,
                        provider: "other")
                    let ids = try await fixture.withStorage { storage in
                        (
                            try await storage.userID(provider: first.base, subject: "person-1"),
                            try await storage.userID(provider: second.base, subject: "person-1")
                        )
                    }
                    #expect(one.status == 200 && two.status == 200)
                    #expect(ids.0 != nil && ids.1 != nil && ids.0 != ids.1)
                    let refused = try await fixture.exchange(try await first.idToken(), client: fixture.publicClient)
                    #expect(refused.json["error"] as? String == "unauthorized_client")
                }
            }
        }
    }

    @Test("POST /me/identities links a provider identity to the signed-in user, never one linked to someone else")
    func explicitLink() async throws {
        try await withIssuer { issuer in
            try await withAuthFixture { fixture in
                let client = try await fixture.federation(issuer)
                func link(_ token: String, as username: String) async throws -> TestBrowser.Page {
                    let access = try #require(try await fixture.passwordTokens(username)["access_token"] as? String)
                    return try await fixture.browser.postJSON(
                        fixture.base + "/me/identities", ["provider": "example", "id_token": token, "nonce": "nonce-1"],
                        authorization: "Bearer \(access)")
                }
                let linked = try await link(try await issuer.idToken(subject: "ada-at-example"), as: "ada")
                #expect(linked.status == 201, "\(linked.body)")
                #expect(linked.json["subject"] as? String == "ada-at-example")
                // The identity now signs ada in.
                let signedIn = try await fixture.exchange(try await issuer.idToken(subject: "ada-at-example"), client: client)
                let ada = try await fixture.withStorage { try await $0.user(username: "ada") }
                let userID = try await fixture.withStorage {
                    try await $0.userID(provider: issuer.base, subject: "ada-at-example")
                }
                #expect(signedIn.status == 200 && userID == ada?.id)
                // bob cannot take it over.
                let taken = try await link(try await issuer.idToken(subject: "ada-at-example"), as: "bob")
                #expect(taken.status == 409 && (taken.json["error"] as? [String: Any])?["code"] as? String == "identity_linked")
                // A refused token answers invalid_grant in the error envelope.
                let refused = try await link(try await issuer.idToken(subject: "x", audience: ["other"]), as: "bob")
                #expect(refused.status == 400 && (refused.json["error"] as? [String: Any])?["code"] as? String == "invalid_grant")
                // A provider the server does not know is a missing resource.
                let access = try #require(try await fixture.passwordTokens("bob")["access_token"] as? String)
                let unknown = try await fixture.browser.postJSON(
                    fixture.base + "/me/identities", ["provider": "nobody", "id_token": "x", "nonce": "n"],
                    authorization: "Bearer \(access)")
                #expect(
                    unknown.status == 404 && (unknown.json["error"] as? [String: Any])?["code"] as? String == "unknown_provider")
                // A field the route does not know is refused, not ignored.
                let extra = try await fixture.browser.postJSON(
                    fixture.base + "/me/identities", ["provider": "example", "id_token": "x", "nonce": "n", "email": "e"],
                    authorization: "Bearer \(access)")
                #expect(extra.status == 400 && (extra.json["error"] as? [String: Any])?["code"] as? String == "invalid_identity")
            }
        }
    }
}
