import Foundation
import JWTKit
import Outpost
import OutpostServer
import OutpostTestSupport
import Testing

extension AuthFixture {
    /// Registers `issuer` as the provider `name` that the sign-in pages offer.
    func webProvider(
        _ issuer: TestIssuer, name: String = "example", kind: UpstreamProvider.Kind = .openID,
        clientSecret: String? = "upstream-secret"
    ) async throws {
        try await withStorage { storage in
            let providers = try #require(storage as? any UpstreamProviderStorage)
            let apple = kind == .apple ? ES256PrivateKey().pemRepresentation : nil
            let added = try await providers.addUpstreamProvider(
                UpstreamProvider(
                    name: name, issuer: issuer.base, kind: kind, clientIDs: ["web-app"], clientSecret: clientSecret,
                    appleTeamID: apple.map { _ in "TEAM123456" }, appleKeyID: apple.map { _ in "KEY1234567" },
                    applePrivateKeyPEM: apple, createdAt: 0))
            #expect(added)
        }
    }

    /// The app's authorization request to the public client, with PKCE.
    func upstreamAuthorizeURL(_ pkce: PKCE, redirect: String = "http://127.0.0.1:53682/callback") -> String {
        var components = URLComponents(string: base + "/oauth/authorize")
        components?.queryItems = [
            ("response_type", "code"), ("client_id", publicClient.id), ("redirect_uri", redirect), ("state", "app-state"),
            ("scope", "records profile"), ("code_challenge", pkce.challenge), ("code_challenge_method", "S256"),
        ].map { URLQueryItem(name: $0.0, value: $0.1) }
        return components?.string ?? ""
    }

    /// Opens the sign-in page in `browser`, presses "Continue with `provider`" and lets the test
    /// issuer sign the person in: returns the callback URL the issuer sends the browser to.
    func continueUpstream(
        _ browser: TestBrowser, page url: String, provider: String = "example", typed: [String: String] = [:],
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> String {
        let page = try await browser.get(url)
        #expect(page.body.contains("id=\"upstream-\(provider)\""), sourceLocation: sourceLocation)
        var fields = page.hiddenFields.merging(typed) { $1 }
        fields["upstream"] = provider
        let started = try await browser.postForm(base + (url.contains("/device") ? "/device" : "/oauth/authorize"), fields)
        #expect(started.status == 303, "\(started.body)", sourceLocation: sourceLocation)
        let upstream = try #require(started.header("Location"), sourceLocation: sourceLocation)
        let answer = try await browser.get(upstream)
        #expect(answer.status == 302, sourceLocation: sourceLocation)
        return try #require(answer.header("Location"), sourceLocation: sourceLocation)
    }

    /// The code in a redirect to the app, exchanged with the PKCE verifier: the token reply.
    func redeem(_ location: String, pkce: PKCE, redirect: String = "http://127.0.0.1:53682/callback") async throws
        -> [String: Any]
    {
        let items = URLComponents(string: location)?.queryItems ?? []
        #expect(items.first { $0.name == "state" }?.value == "app-state")
        let code = try #require(items.first { $0.name == "code" }?.value, "\(location)")
        let reply = try await token([
            "grant_type": "authorization_code", "code": code, "redirect_uri": redirect, "client_id": publicClient.id,
            "code_verifier": pkce.verifier,
        ])
        #expect(reply.status == 200, "\(reply.body)")
        return reply.json
    }

    func username(_ tokens: [String: Any]) async throws -> String? {
        let client = OutpostClient(configuration: .init(baseURL: server.baseURL))
        var request = Request.get("/me")
        request.headers[.authorization] = "Bearer \(tokens["access_token"] as? String ?? "")"
        let me = try? await client.send(request, decoding: JSONValue.self)
        try await client.shutdown()
        return me?["username"]?.stringValue
    }

    func expectStopped(
        _ page: TestBrowser.Page, _ status: Int, _ text: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(page.status == status, "\(page.body)", sourceLocation: sourceLocation)
        #expect(page.header("Location") == nil, sourceLocation: sourceLocation)
        #expect(page.body.contains(text), "\(page.body)", sourceLocation: sourceLocation)
        #expect(!page.headers.contains { $0.0.lowercased() == "set-cookie" && $0.1.hasPrefix("outpost_session=ops_") })
    }

    func userExists(_ username: String) async throws -> Bool {
        try await withStorage { try await $0.user(username: username) != nil }
    }
}

@Suite("Sign-in through an upstream provider's web page", .closesWhatItOpens)
struct UpstreamWebSignInTests {
    @Test("Continue with a provider: code flow with PKCE, state and nonce; the app gets its code; a replayed answer is refused")
    func loopbackSignIn() async throws {
        try await withIssuer { issuer in
            try await withAuthFixture { fixture in
                try await fixture.webProvider(issuer)
                let pkce = PKCE()
                let callback = try await fixture.continueUpstream(fixture.browser, page: fixture.upstreamAuthorizeURL(pkce))
                #expect(callback.hasPrefix(fixture.base + "/oauth/upstream/callback?"))
                let sent = issuer.web { $0.lastAuthorization }
                #expect(sent["code_challenge_method"] == "S256")
                #expect(sent["scope"] == "openid email")
                #expect(sent["client_id"] == "web-app")
                #expect((sent["nonce"]?.count ?? 0) >= 43)
                #expect((sent["state"]?.count ?? 0) >= 43)
                #expect(sent["response_mode"] == nil)

                let finished = try await fixture.browser.get(callback)
                #expect(finished.status == 302, "\(finished.body)")
                let location = try #require(finished.header("Location"))
                #expect(location.hasPrefix("http://127.0.0.1:53682/callback?"))
                #expect(finished.headers.contains { $0.0.lowercased() == "set-cookie" && $0.1.hasPrefix("outpost_session=ops_") })
                #expect(issuer.web { $0.lastClientAuthentication } == "basic")
                let tokens = try await fixture.redeem(location, pkce: pkce)
                #expect(try await fixture.username(tokens) == "example:web-person")

                // The refresh token the provider issued is kept, sealed.
                let kept = try await fixture.withStorage { storage in
                    try await (storage as? any UpstreamSessionStorage)?.upstreamTokens(
                        userID: try #require(try await storage.user(username: "example:web-person")).id) ?? []
                }
                let issued = try #require(issuer.web { $0.issuedRefreshTokens }.last)
                #expect(kept.count == 1)
                #expect(kept.first?.provider == "example")
                #expect(kept.first.map { !$0.sealed.contains(issued) && !$0.sealed.isEmpty } == true)

                // The same answer a second time: the state was used.
                fixture.expectStopped(try await fixture.browser.get(callback), 400, "already finished")
            }
        }
    }

    @Test("presses of the provider button fetch the provider's discovery document once, not once each")
    func discoveryKept() async throws {
        try await withIssuer { issuer in
            try await withAuthFixture { fixture in
                try await fixture.webProvider(issuer)
                _ = try await fixture.continueUpstream(fixture.browser, page: fixture.upstreamAuthorizeURL(PKCE()))
                let fetched = issuer.discoveryFetches
                #expect(fetched >= 1)
                for _ in 0..<5 {
                    _ = try await fixture.continueUpstream(fixture.browser, page: fixture.upstreamAuthorizeURL(PKCE()))
                }
                #expect(issuer.discoveryFetches == fetched)
            }
        }
    }

    @Test("an app with a private-use scheme redirect URI gets its code through the provider button")
    func customScheme() async throws {
        try await withIssuer { issuer in
            try await withAuthFixture { fixture in
                try await fixture.webProvider(issuer, clientSecret: nil)
                let pkce = PKCE()
                let redirect = "outpost-test://x-callback-url/oauth"
                let callback = try await fixture.continueUpstream(
                    fixture.browser, page: fixture.upstreamAuthorizeURL(pkce, redirect: redirect))
                let finished = try await fixture.browser.get(callback)
                let location = try #require(finished.header("Location"))
                #expect(location.hasPrefix(redirect + "?"))
                #expect(issuer.web { $0.lastClientAuthentication } == "none")
                let tokens = try await fixture.redeem(location, pkce: pkce, redirect: redirect)
                #expect(try await fixture.username(tokens) == "example:web-person")
            }
        }
    }

    @Test("a made-up state, an answer in another browser, an expired state: a page, and no one signed in")
    func stateChecks() async throws {
        try await withIssuer { issuer in
            try await withAuthFixture { fixture in
                try await fixture.webProvider(issuer)
                let callback = try await fixture.continueUpstream(fixture.browser, page: fixture.upstreamAuthorizeURL(PKCE()))
                let madeUp = try await fixture.browser.get(
                    fixture.base + "/oauth/upstream/callback?code=x&state=" + UUID().uuidString + UUID().uuidString)
                fixture.expectStopped(madeUp, 400, "unknown or was already finished")
                let noState = try await fixture.browser.get(fixture.base + "/oauth/upstream/callback?code=x")
                fixture.expectStopped(noState, 400, "has no state")

                // Delivered to a browser without the binding cookie (login CSRF): refused, and spent.
                let other = TestBrowser()
                let elsewhere = try? await other.get(callback)
                try await other.shutdown()
                fixture.expectStopped(try #require(elsewhere), 400, "started in another browser")
                fixture.expectStopped(try await fixture.browser.get(callback), 400, "already finished")
                #expect(try await !fixture.userExists("example:web-person"))
            }
            try await withAuthFixture(configure: { $0.federation.webSignInLifetime = .zero }) { fixture in
                try await fixture.webProvider(issuer)
                let callback = try await fixture.continueUpstream(fixture.browser, page: fixture.upstreamAuthorizeURL(PKCE()))
                fixture.expectStopped(try await fixture.browser.get(callback), 400, "expired")
                #expect(try await !fixture.userExists("example:web-person"))
            }
        }
    }

    @Test("the provider's error, a wrong nonce, a failing token endpoint: a page that says so, and no one signed in")
    func upstreamFailures() async throws {
        try await withIssuer { issuer in
            try await withAuthFixture { fixture in
                try await fixture.webProvider(issuer)
                issuer.web { $0.error = "access_denied" }
                let denied = try await fixture.continueUpstream(fixture.browser, page: fixture.upstreamAuthorizeURL(PKCE()))
                fixture.expectStopped(try await fixture.browser.get(denied), 400, "did not sign you in (access_denied)")

                issuer.web { $0.nonce = "not-the-nonce-sent" }
                let wrongNonce = try await fixture.continueUpstream(fixture.browser, page: fixture.upstreamAuthorizeURL(PKCE()))
                fixture.expectStopped(try await fixture.browser.get(wrongNonce), 502, "nonce")
                issuer.web { $0.nonce = nil }

                issuer.web { $0.failToken = true }
                let failing = try await fixture.continueUpstream(fixture.browser, page: fixture.upstreamAuthorizeURL(PKCE()))
                fixture.expectStopped(try await fixture.browser.get(failing), 502, "did not confirm the sign-in")
                #expect(try await !fixture.userExists("example:web-person"))
            }
        }
    }

    @Test("Sign in with Apple's form_post: the answer arrives as a POST, the nonce as its SHA-256, the ES256 client secret")
    func formPost() async throws {
        try await withIssuer { issuer in
            try await withAuthFixture { fixture in
                try await fixture.webProvider(issuer, name: "apple", kind: .apple, clientSecret: nil)
                let pkce = PKCE()
                let page = try await fixture.browser.get(fixture.upstreamAuthorizeURL(pkce))
                #expect(page.body.contains("Sign in with Apple"))
                let callback = try await fixture.continueUpstream(
                    fixture.browser, page: fixture.upstreamAuthorizeURL(pkce), provider: "apple")
                let sent = issuer.web { $0.lastAuthorization }
                #expect(sent["response_mode"] == "form_post")
                #expect(sent["scope"] == "name email")
                #expect(sent["nonce"]?.count == 64)
                let answer = URLComponents(string: callback)?.queryItems ?? []
                var fields: [String: String] = [:]
                for item in answer { fields[item.name] = item.value }
                fields["user"] = #"{"name":{"firstName":"Web"}}"#
                let finished = try await fixture.browser.postForm(
                    fixture.base + "/oauth/upstream/callback", fields,
                    headers: ["Origin": "https://appleid.apple.com", "Sec-Fetch-Site": "cross-site"])
                #expect(finished.status == 303, "\(finished.body)")
                #expect(issuer.web { $0.lastClientAuthentication } == "post")
                let tokens = try await fixture.redeem(try #require(finished.header("Location")), pkce: pkce)
                #expect(try await fixture.username(tokens) == "apple:web-person")
            }
        }
    }

    @Test("the device flow through the provider button: the confirm step, then the device's tokens")
    func deviceFlow() async throws {
        try await withIssuer { issuer in
            try await withAuthFixture { fixture in
                try await fixture.webProvider(issuer)
                let device = try await fixture.browser.postForm(
                    fixture.base + "/oauth/device_authorization",
                    ["client_id": fixture.publicClient.id, "scope": "records profile"])
                let userCode = try #require(device.json["user_code"] as? String)
                let deviceCode = try #require(device.json["device_code"] as? String)
                let page = fixture.base + "/device?user_code=" + userCode
                let callback = try await fixture.continueUpstream(
                    fixture.browser, page: page, typed: ["user_code": userCode])
                let confirm = try await fixture.browser.get(callback)
                #expect(confirm.status == 200, "\(confirm.body)")
                #expect(confirm.body.contains("Signed in as <strong>example:web-person</strong>"))
                var fields = confirm.hiddenFields
                fields["decision"] = "allow"
                let done = try await fixture.browser.postForm(fixture.base + "/device", fields)
                #expect(done.body.contains("Device connected"), "\(done.body)")
                let tokens = try await fixture.token([
                    "grant_type": "urn:ietf:params:oauth:grant-type:device_code", "device_code": deviceCode,
                    "client_id": fixture.publicClient.id,
                ])
                #expect(tokens.status == 200, "\(tokens.body)")
                #expect(try await fixture.username(tokens.json) == "example:web-person")
            }
        }
    }

    @Test("deleting the account revokes the provider's refresh token; a failed revocation stops the deletion with 502")
    func revocationAtDeletion() async throws {
        try await withIssuer { issuer in
            try await withAuthFixture { fixture in
                try await fixture.webProvider(issuer)
                let pkce = PKCE()
                let callback = try await fixture.continueUpstream(fixture.browser, page: fixture.upstreamAuthorizeURL(pkce))
                let finished = try await fixture.browser.get(callback)
                let tokens = try await fixture.redeem(try #require(finished.header("Location")), pkce: pkce)
                let access = try #require(tokens["access_token"] as? String)
                let issued = try #require(issuer.web { $0.issuedRefreshTokens }.last)
                let client = OutpostClient(configuration: .init(baseURL: fixture.server.baseURL))
                issuer.web { $0.failRevocation = true }
                let stopped = try? await AccountDeletionTests.send(client, .delete("/me"), token: access)
                let survived = try? await fixture.userExists("example:web-person")
                let revokedMeanwhile = issuer.web { $0.revoked }
                issuer.web { $0.failRevocation = false }
                let deleted = try? await AccountDeletionTests.send(client, .delete("/me"), token: access)
                try await client.shutdown()
                #expect(stopped?.status == 502)
                #expect(stopped?.code == "upstream_revocation_failed")
                #expect(survived == true)
                #expect(revokedMeanwhile.isEmpty)
                #expect(deleted?.status == 204)
                #expect(issuer.web { $0.revoked } == [issued])
                #expect(try await !fixture.userExists("example:web-person"))
            }
        }
    }

    @Test("the native exchange redeems Apple's authorization_code and keeps its refresh token; a refused code fails the exchange")
    func nativeAuthorizationCode() async throws {
        try await withIssuer { issuer in
            try await withAuthFixture { fixture in
                let client = try await fixture.federation(issuer)
                func exchange(code: String) async throws -> TestBrowser.Page {
                    let nonce = SignInNonce()
                    return try await fixture.token([
                        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
                        "subject_token": try await issuer.idToken(nonce: nonce.value),
                        "subject_token_type": "urn:ietf:params:oauth:token-type:id_token", "provider": "example",
                        "client_id": client.id, "nonce": nonce.value, "authorization_code": code,
                    ])
                }
                let refused = try await exchange(code: "made-up")
                fixture.expectRefused(refused, "did not accept the authorization_code")
                #expect(try await !fixture.userExists("example:person-1"))
                let accepted = try await exchange(code: issuer.nativeCode(clientID: "app-1"))
                #expect(accepted.status == 200, "\(accepted.body)")
                #expect(issuer.web { $0.lastClientAuthentication } == "none")
                let kept = try await fixture.withStorage { storage in
                    try await (storage as? any UpstreamSessionStorage)?.upstreamTokens(
                        userID: try #require(try await storage.user(username: "example:person-1")).id) ?? []
                }
                #expect(kept.map(\.provider) == ["example"])
            }
        }
    }
}
