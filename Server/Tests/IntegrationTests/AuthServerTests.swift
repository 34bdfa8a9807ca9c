import Foundation
import Outpost
import OutpostServer
import OutpostTestSupport
import Synchronization
import Testing

/// A live server with a user and the clients every grant needs.
struct AuthFixture {
    let server: LiveServer
    let browser: TestBrowser
    let publicClient: OAuthClient
    let confidentialClient: OAuthClient
    let confidentialSecret: String
    let implicitClient: OAuthClient
    var base: String { server.baseURL.absoluteString }

    static let redirect = "http://127.0.0.1/callback"
    static let password = "correct horse battery"

    static func start(
        plugins: [any ServerPlugin] = [DemoPlugin(), TestPlugin()], configure: (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> AuthFixture {
        let server = try await LiveServer.start(plugins: plugins, configure: configure)
        let storage = try await server.openStorage()
        do {
            let (publicClient, _) = try await storage.registerClient(
                name: "Test CLI", redirectURIs: [redirect, "outpost-test://x-callback-url/oauth"],
                grants: ["authorization_code", "refresh_token", "password", "device_code"], scopes: ["records", "profile"],
                confidential: false)
            let (confidential, secret) = try await storage.registerClient(
                name: "Test service", redirectURIs: [], grants: ["client_credentials", "password", "refresh_token"],
                scopes: ["records", "profile"], confidential: true)
            let (implicit, _) = try await storage.registerClient(
                name: "Legacy app", redirectURIs: ["https://legacy.example/cb"], grants: ["implicit"], scopes: ["profile"],
                confidential: false)
            _ = try await storage.addUser(username: "ada", password: password, cost: 4)
            _ = try await storage.addUser(username: "bob", password: password, cost: 4)
            try await storage.close()
            return AuthFixture(
                server: server, browser: TestBrowser(), publicClient: publicClient, confidentialClient: confidential,
                confidentialSecret: secret ?? "", implicitClient: implicit)
        } catch {
            try? await storage.close()
            await server.stop()
            throw error
        }
    }

    func stop() async {
        try? await browser.shutdown()
        await server.stop()
    }

    func token(_ fields: [String: String], authorization: String? = nil) async throws -> TestBrowser.Page {
        try await browser.postForm(base + "/oauth/token", fields, authorization: authorization)
    }

    func passwordTokens(_ username: String = "ada", client: OAuthClient? = nil) async throws -> [String: Any] {
        let page = try await token([
            "grant_type": "password", "username": username, "password": Self.password, "client_id": (client ?? publicClient).id,
        ])
        #expect(page.status == 200, "\(page.body)")
        return page.json
    }
}

func withAuthFixture(
    plugins: [any ServerPlugin] = [DemoPlugin(), TestPlugin()], configure: (inout ServerConfiguration) -> Void = { _ in },
    _ body: (AuthFixture) async throws -> Void
) async throws {
    let fixture = try await AuthFixture.start(plugins: plugins, configure: configure)
    do {
        try await body(fixture)
    } catch {
        await fixture.stop()
        throw error
    }
    await fixture.stop()
}

@Suite("The OAuth 2.0 authorization server", .closesWhatItOpens)
struct AuthServerTests {
    @Test("discovery metadata names every endpoint and S256")
    func discovery() async throws {
        try await withAuthFixture { fixture in
            let page = try await fixture.browser.get(fixture.base + "/.well-known/oauth-authorization-server")
            let metadata = page.json
            #expect(metadata["issuer"] as? String == fixture.base)
            #expect(metadata["token_endpoint"] as? String == fixture.base + "/oauth/token")
            #expect(metadata["device_authorization_endpoint"] as? String == fixture.base + "/oauth/device_authorization")
            #expect(metadata["code_challenge_methods_supported"] as? [String] == ["S256"])
        }
    }

    @Test("authorization code with PKCE through the HTML pages; wrong verifier and reused code fail")
    func authorizationCode() async throws {
        try await withAuthFixture { fixture in
            let pkce = PKCE()
            let redirect = "http://127.0.0.1:53682/callback"
            let query =
                "response_type=code&client_id=\(fixture.publicClient.id)&redirect_uri=\(redirect.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)&state=xyz123&scope=records%20profile&code_challenge=\(pkce.challenge)&code_challenge_method=S256"
            let form = try await fixture.browser.get(fixture.base + "/oauth/authorize?" + query)
            #expect(form.status == 200)
            #expect(form.body.contains("<label for=\"username\">Username</label>"))
            #expect(form.body.contains("Test CLI"))
            var fields = form.hiddenFields
            fields["username"] = "ada"
            fields["password"] = AuthFixture.password
            fields["decision"] = "allow"
            let redirected = try await fixture.browser.postForm(fixture.base + "/oauth/authorize", fields)
            #expect(redirected.status == 303)
            let location = try #require(redirected.header("Location"))
            #expect(location.hasPrefix(redirect + "?"))
            let items = URLComponents(string: location)?.queryItems ?? []
            #expect(items.first { $0.name == "state" }?.value == "xyz123")
            let code = try #require(items.first { $0.name == "code" }?.value)

            let wrong = try await fixture.token([
                "grant_type": "authorization_code", "code": code, "redirect_uri": redirect, "client_id": fixture.publicClient.id,
                "code_verifier": PKCE().verifier,
            ])
            #expect(wrong.status == 400)
            #expect(wrong.json["error"] as? String == "invalid_grant")

            // The code was spent by the failed attempt: one use only.
            let reused = try await fixture.token([
                "grant_type": "authorization_code", "code": code, "redirect_uri": redirect, "client_id": fixture.publicClient.id,
                "code_verifier": pkce.verifier,
            ])
            #expect(reused.json["error"] as? String == "invalid_grant")

            // A second sign-in: the browser session skips the password.
            let again = try await fixture.browser.get(fixture.base + "/oauth/authorize?" + query)
            #expect(again.body.contains("Signed in as <strong>ada</strong>"))
            var consent = again.hiddenFields
            consent["decision"] = "allow"
            let second = try await fixture.browser.postForm(fixture.base + "/oauth/authorize", consent)
            let secondCode = try #require(
                URLComponents(string: second.header("Location") ?? "")?.queryItems?.first { $0.name == "code" }?.value)
            let tokens = try await fixture.token([
                "grant_type": "authorization_code", "code": secondCode, "redirect_uri": redirect,
                "client_id": fixture.publicClient.id,
                "code_verifier": pkce.verifier,
            ])
            #expect(tokens.status == 200)
            let access = try #require(tokens.json["access_token"] as? String)
            #expect(tokens.json["refresh_token"] is String)
            let client = OutpostClient(
                configuration: .init(baseURL: fixture.server.baseURL, defaultHeaders: [.authorization: "Bearer \(access)"]))
            let me = try await client.send(.get("/me"), decoding: JSONValue.self)
            try await client.shutdown()
            #expect(me["username"] == "ada")
        }
    }

    @Test("a redirect URI that is not registered is refused on a page, never redirected to")
    func wrongRedirect() async throws {
        try await withAuthFixture { fixture in
            let page = try await fixture.browser.get(
                fixture.base
                    + "/oauth/authorize?response_type=code&client_id=\(fixture.publicClient.id)&redirect_uri=https%3A%2F%2Fevil.example%2Fcb&code_challenge=\(PKCE().challenge)&code_challenge_method=S256"
            )
            #expect(page.status == 400)
            #expect(page.header("Location") == nil)
            #expect(page.body.contains("has not registered"))
        }
    }

    @Test("declining sends access_denied back with the state; public clients must use PKCE")
    func declineAndPKCERequired() async throws {
        try await withAuthFixture { fixture in
            let base =
                fixture.base
                + "/oauth/authorize?response_type=code&client_id=\(fixture.publicClient.id)&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcallback&state=s1"
            let noPKCE = try await fixture.browser.get(base)
            #expect(noPKCE.status == 302)
            #expect(noPKCE.header("Location")?.contains("error=invalid_request") == true)
            let form = try await fixture.browser.get(base + "&code_challenge=\(PKCE().challenge)&code_challenge_method=S256")
            var fields = form.hiddenFields
            fields["decision"] = "deny"
            let denied = try await fixture.browser.postForm(fixture.base + "/oauth/authorize", fields)
            let location = try #require(denied.header("Location"))
            #expect(location.contains("error=access_denied"))
            #expect(location.contains("state=s1"))

            var tampered = form.hiddenFields
            tampered["scope"] = "records profile admin"
            tampered["decision"] = "allow"
            let refused = try await fixture.browser.postForm(fixture.base + "/oauth/authorize", tampered)
            #expect(refused.status == 303)
            #expect(refused.header("Location")?.contains("error=invalid_scope") == true)
        }
    }

    @Test("the implicit grant only for clients allowed it; the token arrives in the fragment")
    func implicit() async throws {
        try await withAuthFixture { fixture in
            let form = try await fixture.browser.get(
                fixture.base
                    + "/oauth/authorize?response_type=token&client_id=\(fixture.implicitClient.id)&redirect_uri=https%3A%2F%2Flegacy.example%2Fcb&state=abc"
            )
            var fields = form.hiddenFields
            fields["username"] = "ada"
            fields["password"] = AuthFixture.password
            fields["decision"] = "allow"
            let redirected = try await fixture.browser.postForm(fixture.base + "/oauth/authorize", fields)
            let location = try #require(redirected.header("Location"))
            #expect(location.hasPrefix("https://legacy.example/cb#"))
            #expect(location.contains("access_token=opa_"))
            #expect(location.contains("state=abc"))

            let notAllowed = try await fixture.browser.get(
                fixture.base
                    + "/oauth/authorize?response_type=token&client_id=\(fixture.publicClient.id)&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcallback"
            )
            #expect(notAllowed.header("Location")?.contains("error=unauthorized_client") == true)
        }
    }

    @Test("refresh rotates; with the grace window off, reusing a rotated refresh token revokes the whole family")
    func refreshRotation() async throws {
        try await withAuthFixture(configure: { $0.auth.refreshReuseGrace = .zero }) { fixture in
            let first = try await fixture.passwordTokens()
            let refresh1 = try #require(first["refresh_token"] as? String)
            let second = try await fixture.token([
                "grant_type": "refresh_token", "refresh_token": refresh1, "client_id": fixture.publicClient.id,
            ])
            #expect(second.status == 200)
            let refresh2 = try #require(second.json["refresh_token"] as? String)
            let access2 = try #require(second.json["access_token"] as? String)
            #expect(refresh2 != refresh1)

            let replay = try await fixture.token([
                "grant_type": "refresh_token", "refresh_token": refresh1, "client_id": fixture.publicClient.id,
            ])
            #expect(replay.status == 400)
            #expect(replay.json["error"] as? String == "invalid_grant")
            let afterReplay = try await fixture.token([
                "grant_type": "refresh_token", "refresh_token": refresh2, "client_id": fixture.publicClient.id,
            ])
            #expect(afterReplay.json["error"] as? String == "invalid_grant")
            let me = try await fixture.browser.get(fixture.base + "/me", authorization: "Bearer \(access2)")
            #expect(me.status == 401)
        }
    }

    @Test("within the grace window a rotated refresh token gets the same pair again; once that pair is spent, reuse revokes")
    func refreshReuseGrace() async throws {
        try await withAuthFixture { fixture in
            let first = try await fixture.passwordTokens()
            let refresh1 = try #require(first["refresh_token"] as? String)
            let exchange = { (token: String) in
                try await fixture.token([
                    "grant_type": "refresh_token", "refresh_token": token, "client_id": fixture.publicClient.id,
                ])
            }
            let second = try await exchange(refresh1)
            #expect(second.status == 200)
            let refresh2 = try #require(second.json["refresh_token"] as? String)
            let access2 = try #require(second.json["access_token"] as? String)

            // The app's widget spent the same token a moment later: it gets the very same pair.
            let again = try await exchange(refresh1)
            #expect(again.status == 200, "\(again.body)")
            #expect(again.json["refresh_token"] as? String == refresh2)
            #expect(again.json["access_token"] as? String == access2)
            #expect(again.json["access_expires_at"] == nil, "the sealed reply's own fields are not sent")
            let expiresIn = try #require(again.json["expires_in"] as? Int)
            #expect((1...900).contains(expiresIn))
            #expect(try await fixture.browser.get(fixture.base + "/me", authorization: "Bearer \(access2)").status == 200)

            // The pair moves on; the first token again is theft now, and the whole family goes.
            let third = try await exchange(refresh2)
            #expect(third.status == 200)
            let access3 = try #require(third.json["access_token"] as? String)
            let late = try await exchange(refresh1)
            #expect(late.status == 400)
            #expect(late.json["error"] as? String == "invalid_grant")
            #expect(try await fixture.browser.get(fixture.base + "/me", authorization: "Bearer \(access3)").status == 401)
        }
    }

    @Test("eight exchanges of one refresh token at once all get the one new pair, and the sign-in lives on")
    func concurrentRefreshesWithinGrace() async throws {
        try await withAuthFixture { fixture in
            let refresh = try #require(try await fixture.passwordTokens()["refresh_token"] as? String)
            let replies = try await withThrowingTaskGroup(of: TestBrowser.Page.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        try await fixture.token([
                            "grant_type": "refresh_token", "refresh_token": refresh, "client_id": fixture.publicClient.id,
                        ])
                    }
                }
                return try await group.reduce(into: [TestBrowser.Page]()) { $0.append($1) }
            }
            #expect(replies.allSatisfy { $0.status == 200 }, "\(replies.map(\.body))")
            let pairs = Set(replies.compactMap { $0.json["refresh_token"] as? String })
            #expect(pairs.count == 1)
            let next = try await fixture.token([
                "grant_type": "refresh_token", "refresh_token": try #require(pairs.first), "client_id": fixture.publicClient.id,
            ])
            #expect(next.status == 200)
        }
    }

    @Test("client credentials need the secret; Basic and form both work")
    func clientCredentials() async throws {
        try await withAuthFixture { fixture in
            let id = fixture.confidentialClient.id
            let basic = "Basic " + Data("\(id):\(fixture.confidentialSecret)".utf8).base64EncodedString()
            let ok = try await fixture.token(["grant_type": "client_credentials"], authorization: basic)
            #expect(ok.status == 200)
            #expect(ok.json["refresh_token"] == nil)
            let form = try await fixture.token([
                "grant_type": "client_credentials", "client_id": id, "client_secret": fixture.confidentialSecret,
            ])
            #expect(form.status == 200)
            let wrong = try await fixture.token(["grant_type": "client_credentials", "client_id": id, "client_secret": "nope"])
            #expect(wrong.status == 401)
            #expect(wrong.json["error"] as? String == "invalid_client")
            let publicTry = try await fixture.token(["grant_type": "client_credentials", "client_id": fixture.publicClient.id])
            #expect(publicTry.json["error"] as? String == "unauthorized_client")
        }
    }

    @Test("the device flow: pending, too fast, approved on the page, tokens once")
    func deviceFlow() async throws {
        try await withAuthFixture(configure: { $0.auth.deviceInterval = 30 }) { fixture in
            let start = try await fixture.browser.postForm(
                fixture.base + "/oauth/device_authorization", ["client_id": fixture.publicClient.id, "scope": "records"])
            #expect(start.status == 200)
            let deviceCode = try #require(start.json["device_code"] as? String)
            let userCode = try #require(start.json["user_code"] as? String)
            #expect(start.json["verification_uri"] as? String == fixture.base + "/device")
            let poll = [
                "grant_type": "urn:ietf:params:oauth:grant-type:device_code", "device_code": deviceCode,
                "client_id": fixture.publicClient.id,
            ]
            #expect(try await fixture.token(poll).json["error"] as? String == "authorization_pending")
            #expect(try await fixture.token(poll).json["error"] as? String == "slow_down")

            let page = try await fixture.browser.get(start.json["verification_uri_complete"] as? String ?? "")
            #expect(page.body.contains("value=\"\(userCode)\""))
            var fields = page.hiddenFields
            fields["user_code"] = userCode.lowercased()
            fields["username"] = "ada"
            fields["password"] = AuthFixture.password
            fields["decision"] = "continue"
            let confirm = try await fixture.browser.postForm(fixture.base + "/device", fields)
            #expect(confirm.status == 200)
            #expect(confirm.body.contains("Test CLI"))
            // Nothing is approved until the person confirms the client by name.
            #expect(try await fixture.token(poll).json["error"] as? String == "slow_down")
            var decision = confirm.hiddenFields
            decision["decision"] = "allow"
            let approved = try await fixture.browser.postForm(fixture.base + "/device", decision)
            #expect(approved.status == 200)
            #expect(approved.body.contains("signed in as <strong>ada</strong>"))
            let tokens = try await fixture.token(poll)
            #expect(tokens.status == 200)
            #expect(tokens.json["access_token"] is String)
            #expect(try await fixture.token(poll).json["error"] as? String == "invalid_grant")
        }
    }

    @Test("revocation ends an access token at once")
    func revoke() async throws {
        try await withAuthFixture { fixture in
            let tokens = try await fixture.passwordTokens()
            let access = try #require(tokens["access_token"] as? String)
            #expect(try await fixture.browser.get(fixture.base + "/me", authorization: "Bearer \(access)").status == 200)
            let revoked = try await fixture.browser.postForm(
                fixture.base + "/oauth/revoke", ["token": access, "client_id": fixture.publicClient.id])
            #expect(revoked.status == 200)
            #expect(try await fixture.browser.get(fixture.base + "/me", authorization: "Bearer \(access)").status == 401)
        }
    }

    @Test("a wrong password and an unknown user read exactly the same")
    func noUserEnumeration() async throws {
        try await withAuthFixture { fixture in
            let wrong = try await fixture.token([
                "grant_type": "password", "username": "ada", "password": "wrong-password", "client_id": fixture.publicClient.id,
            ])
            let unknown = try await fixture.token([
                "grant_type": "password", "username": "nobody", "password": "wrong-password",
                "client_id": fixture.publicClient.id,
            ])
            #expect(wrong.status == 400)
            #expect(wrong.status == unknown.status)
            #expect(wrong.body == unknown.body)
        }
    }

    @Test("failed sign-ins are limited per account and address, then per address")
    func rateLimit() async throws {
        try await withAuthFixture(configure: {
            $0.auth.attemptsPerAccount = 3; $0.auth.attemptsPerAddress = 5
        }) { fixture in
            func attempt(_ username: String, _ password: String) async throws -> TestBrowser.Page {
                try await fixture.token([
                    "grant_type": "password", "username": username, "password": password, "client_id": fixture.publicClient.id,
                ])
            }
            var statuses: [Int] = []
            for _ in 0..<4 { statuses.append(try await attempt("ada", "guess").status) }
            #expect(statuses == [400, 400, 400, 429])
            let limited = try await attempt("ada", AuthFixture.password)
            #expect(limited.status == 429)
            #expect(limited.header("Retry-After") != nil)
            #expect(limited.header("Cache-Control") == "no-store")
            // Another account from this address is not locked by ada's failures…
            #expect(try await attempt("bob", AuthFixture.password).status == 200)
            // …until the address itself reaches its limit (5 failures in all).
            #expect(try await attempt("bob", "guess").status == 400)
            #expect(try await attempt("bob", "guess").status == 400)
            #expect(try await attempt("bob", AuthFixture.password).status == 429)
        }
    }

    @Test("a custom provider signs in through the plugin API; a bad signature is refused")
    func providerLogin() async throws {
        try await withAuthFixture { fixture in
            let client = OutpostClient(configuration: .init(baseURL: fixture.server.baseURL))
            let signature = TestProvider.signature(user: "carol", secret: LiveServer.providerSecret)
            let tokens = try await client.send(
                .post(
                    "/auth/login",
                    json: [
                        "provider": "outpost.test", "client_id": .string(fixture.publicClient.id),
                        "auth_data": ["user": "carol", "signature": .string(signature)],
                    ]), decoding: JSONValue.self)
            let access = try #require(tokens["access_token"]?.stringValue)
            let signed = OutpostClient(
                configuration: .init(baseURL: fixture.server.baseURL, defaultHeaders: [.authorization: "Bearer \(access)"]))
            let me = try await signed.send(.get("/me"), decoding: JSONValue.self)
            try await signed.shutdown()
            #expect(me["username"] == "carol")
            let refused = try await #require(throws: OutpostError.self) {
                _ = try await client.send(
                    .post(
                        "/auth/login",
                        json: [
                            "provider": "outpost.test", "client_id": .string(fixture.publicClient.id),
                            "auth_data": ["user": "carol", "signature": "00"],
                        ]))
            }
            #expect(refused.status == 401)
            #expect(refused.serverCode == "provider_rejected")
            try await client.shutdown()
        }
    }

    @Test("records belong to their creator: another user gets 403, an anonymous caller 401, the owner may delete")
    func ownership() async throws {
        try await withAuthFixture { fixture in
            let ada = try #require(try await fixture.passwordTokens("ada")["access_token"] as? String)
            let bob = try #require(try await fixture.passwordTokens("bob")["access_token"] as? String)
            func client(_ token: String?) -> OutpostClient {
                OutpostClient(
                    configuration: .init(
                        baseURL: fixture.server.baseURL, defaultHeaders: token.map { [.authorization: "Bearer \($0)"] } ?? [:]))
            }
            let asAda = client(ada)
            let asBob = client(bob)
            let anonymous = client(nil)
            let record = try await asAda.send(.post("/records/notes", json: ["text": "mine"])).json()
            let path = "/records/notes/\(record["id"]?.stringValue ?? "")"
            #expect(try await asBob.send(.get(path)).status == 200)
            let forbidden = try await #require(throws: OutpostError.self) { _ = try await asBob.send(.delete(path)) }
            #expect(forbidden.status == 403)
            #expect(forbidden.serverCode == "forbidden_by_rule")
            let unsigned = try await #require(throws: OutpostError.self) { _ = try await anonymous.send(.delete(path)) }
            // The delete rule refuses an anonymous caller: 401, signing in may change the answer.
            #expect(unsigned.status == 401)
            #expect(unsigned.serverCode == "sign_in_required")
            #expect(try await asAda.send(.delete(path)).status == 204)
            for client in [asAda, asBob, anonymous] { try await client.shutdown() }
        }
    }

    @Test("no token, password or code reaches the server's logs at any level")
    func noSecretsInLogs() async throws {
        let recorder = LogRecorder()
        var secrets: [String] = [AuthFixture.password]
        try await withAuthFixture(configure: { $0.logger = recorder.logger() }) { fixture in
            let tokens = try await fixture.passwordTokens()
            secrets += [tokens["access_token"] as? String, tokens["refresh_token"] as? String].compactMap { $0 }
            _ = try await fixture.browser.get(
                fixture.base + "/me", authorization: "Bearer \(tokens["access_token"] as? String ?? "")")
            let refreshed = try await fixture.token([
                "grant_type": "refresh_token", "refresh_token": tokens["refresh_token"] as? String ?? "",
                "client_id": fixture.publicClient.id,
            ])
            secrets += [refreshed.json["access_token"] as? String].compactMap { $0 }
            _ = try await fixture.token([
                "grant_type": "refresh_token", "refresh_token": tokens["refresh_token"] as? String ?? "",
                "client_id": fixture.publicClient.id,
            ])
        }
        let lines = recorder.all
        #expect(lines.contains { $0.contains("/oauth/token") })
        for secret in secrets { #expect(!lines.contains { $0.contains(secret) }, "a secret reached the log") }
    }
}
