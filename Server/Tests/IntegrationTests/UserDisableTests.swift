import Foundation
import Outpost
import OutpostServer
import OutpostTestSupport
import Testing

/// Disabling a user, signing a user out everywhere, and the users search, against a live server
/// on SQLite and (with `OUTPOST_TEST_LIVE_BACKEND=postgres`) PostgreSQL.
@Suite("Disabled users and sign-out everywhere", .closesWhatItOpens, .timeLimit(.minutes(3)))
struct UserDisableTests {
    /// Runs `body` with the server's storage as ``UserAdminStorage``, closing it after.
    static func withAdmin<T: Sendable>(
        _ fixture: AuthFixture, _ body: (any Storage, any UserAdminStorage) async throws -> T
    ) async throws -> T {
        let storage = try await fixture.server.openStorage()
        do {
            let admin = try #require(storage as? any UserAdminStorage)
            let value = try await body(storage, admin)
            try await storage.close()
            return value
        } catch {
            try? await storage.close()
            throw error
        }
    }

    static func userID(_ fixture: AuthFixture, _ username: String) async throws -> String {
        try await withAdmin(fixture) { storage, _ in try #require(try await storage.user(username: username)?.id) }
    }

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// `POST /auth/login` with the `outpost.test` provider as `user`: the status and the error code.
    static func providerSignIn(_ fixture: AuthFixture, _ user: String) async throws -> (status: Int, code: String?) {
        let client = OutpostClient(configuration: .init(baseURL: fixture.server.baseURL))
        let signature = TestProvider.signature(user: user, secret: LiveServer.providerSecret)
        let request = Request.post(
            "/auth/login",
            json: [
                "provider": "outpost.test", "client_id": .string(fixture.publicClient.id),
                "auth_data": ["user": .string(user), "signature": .string(signature)],
            ])
        let result = try await AccountDeletionTests.send(client, request, token: nil)
        try await client.shutdown()
        return result
    }

    /// The sign-in page of the authorization code flow.
    static func authorizeURL(_ fixture: AuthFixture) -> String {
        fixture.base + "/oauth/authorize?response_type=code&client_id=\(fixture.publicClient.id)"
            + "&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcallback&scope=profile&code_challenge=\(PKCE().challenge)"
            + "&code_challenge_method=S256"
    }

    /// Signs `username` in on the sign-in page with `password`.
    static func pageSignIn(_ fixture: AuthFixture, _ username: String, password: String = AuthFixture.password)
        async throws -> TestBrowser.Page
    {
        let url = authorizeURL(fixture)
        var fields = try await fixture.browser.get(url).hiddenFields
        fields["username"] = username
        fields["password"] = password
        fields["decision"] = "allow"
        return try await fixture.browser.postForm(fixture.base + "/oauth/authorize", fields)
    }

    static func passwordGrant(_ fixture: AuthFixture, _ username: String, password: String = AuthFixture.password)
        async throws -> TestBrowser.Page
    {
        try await fixture.token([
            "grant_type": "password", "username": username, "password": password, "client_id": fixture.publicClient.id,
        ])
    }

    @Test(
        "a disabled user's token is refused at once; refresh, password grant, sign-in page, provider and device are refused; enabling lets them in"
    )
    func disabledEverywhere() async throws {
        try await withAuthFixture { fixture in
            let tokens = try await fixture.passwordTokens("ada")
            let access = try #require(tokens["access_token"] as? String)
            let refresh = try #require(tokens["refresh_token"] as? String)
            #expect(try await fixture.browser.get(fixture.base + "/me", authorization: "Bearer \(access)").status == 200)
            // A browser session, and a device code approved in it.
            #expect(try await Self.pageSignIn(fixture, "ada").status == 303)
            let start = try await fixture.browser.postForm(
                fixture.base + "/oauth/device_authorization", ["client_id": fixture.publicClient.id, "scope": "records"])
            let deviceCode = try #require(start.json["device_code"] as? String)
            let page = try await fixture.browser.get(start.json["verification_uri_complete"] as? String ?? "")
            var fields = page.hiddenFields
            fields["user_code"] = start.json["user_code"] as? String ?? ""
            fields["decision"] = "continue"
            var decision = try await fixture.browser.postForm(fixture.base + "/device", fields).hiddenFields
            decision["decision"] = "allow"
            #expect(try await fixture.browser.postForm(fixture.base + "/device", decision).status == 200)
            // carol signs in through a provider once, so she exists.
            #expect(try await Self.providerSignIn(fixture, "carol").status == 200)

            let ada = try await Self.userID(fixture, "ada")
            let carol = try await Self.userID(fixture, "carol")
            let disabled = try await Self.withAdmin(fixture) { storage, admin in
                [
                    try await admin.disableUser(id: ada, now: Self.now()),
                    try await admin.disableUser(id: carol, now: Self.now()),
                    try await storage.user(id: ada)?.isDisabled == true,
                    try await admin.disableUser(id: "u_nobody", now: Self.now()),
                ]
            }
            #expect(disabled == [true, true, true, false])

            // The access token at once, the refresh token, the approved device code.
            let me = try await fixture.browser.get(fixture.base + "/me", authorization: "Bearer \(access)")
            #expect(me.status == 401)
            let refreshed = try await fixture.token([
                "grant_type": "refresh_token", "refresh_token": refresh, "client_id": fixture.publicClient.id,
            ])
            #expect(refreshed.json["error"] as? String == "invalid_grant")
            let polled = try await fixture.token([
                "grant_type": "urn:ietf:params:oauth:grant-type:device_code", "device_code": deviceCode,
                "client_id": fixture.publicClient.id,
            ])
            #expect(polled.json["error"] as? String == "access_denied", "\(polled.body)")

            // The password grant: a wrong password gets the usual answer, the right one is told why.
            let wrong = try await Self.passwordGrant(fixture, "ada", password: "not the password")
            #expect(wrong.status == 400)
            #expect(wrong.json["error_description"] as? String == "The username or password is wrong")
            let right = try await Self.passwordGrant(fixture, "ada")
            #expect(right.status == 400)
            #expect(right.json["error"] as? String == "invalid_grant")
            #expect((right.json["error_description"] as? String)?.contains("disabled") == true, "\(right.body)")
            #expect(right.json["access_token"] == nil)

            // The sign-in page: the session ended; the right password is told, a wrong one is not.
            let again = try await fixture.browser.get(Self.authorizeURL(fixture))
            #expect(!again.body.contains("Signed in as"))
            let pageWrong = try await Self.pageSignIn(fixture, "ada", password: "not the password")
            #expect(pageWrong.status == 401)
            #expect(!pageWrong.body.contains("account is disabled"))
            let pageRight = try await Self.pageSignIn(fixture, "ada")
            #expect(pageRight.status == 403)
            #expect(pageRight.body.contains("This account is disabled."))

            // A provider sign-in.
            let provider = try await Self.providerSignIn(fixture, "carol")
            #expect(provider.status == 403)
            #expect(provider.code == "account_disabled")

            // bob is untouched.
            #expect(try await Self.passwordGrant(fixture, "bob").status == 200)

            let events = try await AuditLogTests.events(fixture.server)
            #expect(
                events.contains {
                    $0.action == AuditAction.signInFailed && $0.subject == ada && $0.detail["reason"] == "account_disabled"
                        && $0.detail["method"] == "password"
                })
            #expect(
                events.contains {
                    $0.action == AuditAction.signInFailed && $0.subject == carol && $0.detail["method"] == "provider"
                })

            // Enabled again: every way in works; what was revoked stays revoked.
            let enabled = try await Self.withAdmin(fixture) { _, admin in
                [try await admin.enableUser(id: ada), try await admin.enableUser(id: carol)]
            }
            #expect(enabled == [true, true])
            #expect(try await fixture.browser.get(fixture.base + "/me", authorization: "Bearer \(access)").status == 401)
            #expect(try await Self.passwordGrant(fixture, "ada").status == 200)
            #expect(try await Self.pageSignIn(fixture, "ada").status == 303)
            #expect(try await Self.providerSignIn(fixture, "carol").status == 200)
        }
    }

    @Test("a disable racing a dozen refreshes leaves none of the tokens they were given working")
    func disableRacesRefreshes() async throws {
        try await withAuthFixture { fixture in
            let ada = try await Self.userID(fixture, "ada")
            for _ in 0..<3 {
                var refreshTokens: [String] = []
                for _ in 0..<12 {
                    refreshTokens.append(try #require(try await fixture.passwordTokens("ada")["refresh_token"] as? String))
                }
                let issued = try await withThrowingTaskGroup(of: String?.self) { group in
                    for refresh in refreshTokens {
                        group.addTask {
                            let page = try await fixture.token([
                                "grant_type": "refresh_token", "refresh_token": refresh,
                                "client_id": fixture.publicClient.id,
                            ])
                            return page.status == 200 ? page.json["access_token"] as? String : nil
                        }
                    }
                    group.addTask {
                        let disabled = try await Self.withAdmin(fixture) { _, admin in
                            try await admin.disableUser(id: ada, now: Self.now())
                        }
                        #expect(disabled)
                        return nil
                    }
                    var tokens: [String] = []
                    for try await token in group { if let token { tokens.append(token) } }
                    return tokens
                }
                for token in issued {
                    let me = try await fixture.browser.get(fixture.base + "/me", authorization: "Bearer \(token)")
                    #expect(me.status == 401, "a token issued during the disable still works")
                }
                let enabled = try await Self.withAdmin(fixture) { _, admin in try await admin.enableUser(id: ada) }
                #expect(enabled)
            }
        }
    }

    @Test("sign out everywhere ends tokens, sessions and codes; the user may sign in again")
    func signOutEverywhere() async throws {
        try await withAuthFixture { fixture in
            let ada = try await fixture.passwordTokens("ada")
            let access = try #require(ada["access_token"] as? String)
            let refresh = try #require(ada["refresh_token"] as? String)
            let bob = try #require(try await fixture.passwordTokens("bob")["access_token"] as? String)
            #expect(try await Self.pageSignIn(fixture, "ada").status == 303)
            #expect(try await fixture.browser.get(Self.authorizeURL(fixture)).body.contains("Signed in as <strong>ada</strong>"))

            let adaID = try await Self.userID(fixture, "ada")
            let signedOut = try await Self.withAdmin(fixture) { storage, admin in
                [
                    try await admin.signOutEverywhere(userID: adaID),
                    try await admin.signOutEverywhere(userID: "u_nobody"),
                    try await storage.user(id: adaID)?.isDisabled == true,
                ]
            }
            #expect(signedOut == [true, false, false])
            #expect(try await fixture.browser.get(fixture.base + "/me", authorization: "Bearer \(access)").status == 401)
            let refreshed = try await fixture.token([
                "grant_type": "refresh_token", "refresh_token": refresh, "client_id": fixture.publicClient.id,
            ])
            #expect(refreshed.json["error"] as? String == "invalid_grant")
            #expect(!(try await fixture.browser.get(Self.authorizeURL(fixture)).body.contains("Signed in as")))
            // Another user's token still works, and ada may sign in again.
            #expect(try await fixture.browser.get(fixture.base + "/me", authorization: "Bearer \(bob)").status == 200)
            #expect(try await Self.passwordGrant(fixture, "ada").status == 200)
        }
    }

    @Test("the users search ignores case, matches e-mail addresses, and takes % and _ as plain characters")
    func searchEscapes() async throws {
        try await withAuthFixture { fixture in
            try await Self.withAdmin(fixture) { storage, admin in
                let mail = try #require(storage as? any MailStorage)
                for name in ["a_b", "axb", "per.cent", "dan"] {
                    _ = try await storage.addUser(username: name, password: AuthFixture.password, cost: 4)
                }
                let percent = try #require(try await storage.user(username: "per.cent"))
                #expect(try await mail.setEmail("100%@Example.com", verified: true, userID: percent.id))
                let dan = try #require(try await storage.user(username: "dan"))
                try await storage.addRole("editor", userID: dan.id)
                try await storage.addRole("admin", userID: dan.id)

                func names(_ text: String) async throws -> [String] {
                    try await admin.users(try #require(UserSearch(text)), after: nil, limit: 50).users.map(\.username)
                }
                #expect(try await names("_") == ["a_b"])
                #expect(try await names("%") == ["per.cent"])
                #expect(try await names("a%b") == [])
                #expect(try await names("A_B") == ["a_b"])
                #expect(try await names("EXAMPLE.com") == ["per.cent"])
                #expect(try await names("\\") == [])
                #expect(try await names("") == ["a_b", "ada", "axb", "bob", "dan", "per.cent"])
                #expect(UserSearch(String(repeating: "a", count: UserSearch.maxQueryLength + 1)) == nil)

                let page = try await admin.users(.everyone, after: "bob", limit: 50)
                let first = try #require(page.users.first)
                #expect(first.username == "dan")
                #expect(first.roles == ["admin", "editor"])
                let cent = try #require(page.users.last)
                #expect(cent.email == "100%@example.com")
                #expect(cent.emailVerified)
                #expect(cent.disabledAt == nil)
            }
        }
    }

    @Test("users come in pages by username that neither skip nor repeat, also when users are added between pages")
    func paging() async throws {
        try await withAuthFixture { fixture in
            try await Self.withAdmin(fixture) { storage, admin in
                for index in 0..<9 {
                    _ = try await storage.addUser(username: "user\(index)", password: AuthFixture.password, cost: 4)
                }
                var seen: [String] = []
                var after: String?
                var pages = 0
                repeat {
                    let page = try await admin.users(.everyone, after: after, limit: 4)
                    #expect(page.users.count <= 4)
                    seen += page.users.map(\.username)
                    after = page.next
                    pages += 1
                    // A name that sorts before the cursor, added between pages, is not shown on later pages.
                    if pages == 1 {
                        _ = try await storage.addUser(username: "aaa", password: AuthFixture.password, cost: 4)
                    }
                } while after != nil && pages < 10
                let expected = ["ada", "bob"] + (0..<9).map { "user\($0)" }
                #expect(seen == expected)
                #expect(pages == 3)
                // Bounds: a page holds 1 to 50 users.
                #expect(try await admin.users(.everyone, after: nil, limit: 0).users.count == 1)
                for index in 0..<50 {
                    _ = try await storage.addUser(username: "many\(index)", password: AuthFixture.password, cost: 4)
                }
                let large = try await admin.users(.everyone, after: nil, limit: 500)
                #expect(large.users.count == UserSearch.maxPageSize)
                #expect(large.next == large.users.last?.username)
            }
        }
    }
}
