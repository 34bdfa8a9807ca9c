import Foundation
import Outpost
import OutpostServer
import OutpostTestSupport
import Testing

/// The admin console's operations pages against the live server, through plain HTTP with a cookie
/// jar: clients, signing keys, the audit log, recent errors and live changes. On SQLite, and on
/// PostgreSQL with `OUTPOST_TEST_LIVE_BACKEND=postgres`.
@Suite("Admin console: operations", .closesWhatItOpens, .timeLimit(.minutes(3)))
struct AdminOperationsTests {
    /// What each test gets: the console fixture (ada is an admin, bob is not), a browser signed in
    /// as ada, and ada's user id.
    struct Console {
        let fixture: AdminConsoleFixture
        let browser: TestBrowser
        let adaID: String
        var auth: AuthFixture { fixture.auth }
        var base: String { fixture.base }

        /// Opens `page` and posts its form `form` (to its own action, or `action`) with `fields`.
        func submit(_ page: String, form: String, to action: String? = nil, _ fields: [String: String] = [:]) async throws
            -> TestBrowser.Page
        {
            try await fixture.submit(browser, page: page, form: form, action: action, fields)
        }

        func get(_ path: String) async throws -> TestBrowser.Page { try await browser.get(base + path) }
    }

    static func withConsole(_ body: (Console) async throws -> Void) async throws {
        try await withAdminConsole { fixture in
            let storage = try await fixture.auth.server.openStorage()
            let adaID: String
            do {
                adaID = try #require(try await storage.user(username: AdminConsoleFixture.admin)).id
                try await storage.close()
            } catch {
                try? await storage.close()
                throw error
            }
            let browser = try await fixture.signedIn()
            do {
                try await body(Console(fixture: fixture, browser: browser, adaID: adaID))
                try await browser.shutdown()
            } catch {
                try? await browser.shutdown()
                throw error
            }
        }
    }

    static func events(_ console: Console, _ action: String) async throws -> [AuditEvent] {
        try await AuditLogTests.events(console.auth.server, AuditQuery(actionPrefix: action, limit: 1000))
    }

    static let pages = ["/admin/clients", "/admin/keys", "/admin/audit", "/admin/errors", "/admin/changes"]

    @Test("anonymous visitors go to the sign-in, plain users get 403, cross-site and tokenless posts are refused")
    func gate() async throws {
        try await Self.withConsole { console in
            let anonymous = TestBrowser()
            let bob = try await console.fixture.signedIn(AdminConsoleFixture.plainUser)
            do {
                for path in Self.pages + ["/admin/changes/feed?after=0"] {
                    let page = try await anonymous.get(console.base + path)
                    #expect(page.status == 303, "\(path)")
                    #expect(page.header("Location")?.hasPrefix("/admin/sign-in?return_to=") == true, "\(path)")
                }
                #expect(try await anonymous.postForm(console.base + "/admin/keys/rotate", [:]).status == 303)
                for path in Self.pages {
                    #expect(try await bob.get(console.base + path).status == 403, "\(path)")
                }
                let bobFeed = try await bob.get(console.base + "/admin/changes/feed?after=0")
                #expect(bobFeed.status == 403)
                #expect(!bobFeed.body.contains("\"changes\""))
                let keys = try await console.get("/admin/keys")
                let rotateToken = try #require(AdminConsoleFixture.formToken(named: "signing_key.rotate", in: keys.body))
                let bobPost = try await bob.postForm(
                    console.base + "/admin/keys/rotate", ["form": "signing_key.rotate", "form_token": rotateToken])
                #expect(bobPost.status == 403)
                let crossSite = try await console.browser.postForm(
                    console.base + "/admin/keys/rotate", ["form": "signing_key.rotate", "form_token": rotateToken],
                    headers: ["Sec-Fetch-Site": "cross-site", "Origin": "https://attacker.example"])
                #expect(crossSite.status == 403)
                // A token of another form (sign-out) does not open this one.
                let signOutToken = try #require(AdminConsoleFixture.formToken(named: "admin.sign-out", in: keys.body))
                let wrongForm = try await console.browser.postForm(
                    console.base + "/admin/keys/rotate", ["form": "signing_key.rotate", "form_token": signOutToken])
                #expect(wrongForm.status == 400)
                let noToken = try await console.browser.postForm(
                    console.base + "/admin/clients", ["form": "client.add", "name": "Sneaky", "grant.password": "on"])
                #expect(noToken.status == 400)
                #expect(try await Self.events(console, AuditAction.signingKeyRotated).isEmpty)
                #expect(try await Self.events(console, AuditAction.clientAdded).isEmpty)
                try await anonymous.shutdown()
                try await bob.shutdown()
            } catch {
                try? await anonymous.shutdown()
                try? await bob.shutdown()
                throw error
            }
        }
    }

    @Test("registering a client: the CLI's checks, an attacker's name shown escaped, the audit event")
    func registerClient() async throws {
        try await Self.withConsole { console in
            let hostile = "<script>alert(1)</script> & co"
            let plainHTTP = try await console.submit(
                "/admin/clients", form: "client.add",
                [
                    "name": hostile, "redirect_uris": "http://example.com/cb", "grant.authorization_code": "on",
                    "scope.profile": "on",
                ])
            #expect(plainHTTP.status == 400)
            #expect(plainHTTP.body.contains("plain http is only for loopback addresses"))
            #expect(!plainHTTP.body.contains("<script>alert(1)"))
            #expect(plainHTTP.body.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; co"))
            let publicMachine = try await console.submit(
                "/admin/clients", form: "client.add",
                ["name": "Machine", "grant.client_credentials": "on"])
            #expect(publicMachine.status == 400)
            #expect(publicMachine.body.contains("needs a confidential client: tick Confidential"))
            let noName = try await console.submit(
                "/admin/clients", form: "client.add",
                ["name": "  ", "grant.password": "on"])
            #expect(noName.status == 400)

            let registered = try await console.submit(
                "/admin/clients", form: "client.add",
                [
                    "name": hostile, "redirect_uris": "https://app.example/cb\r\n\r\nhttp://127.0.0.1/callback\n",
                    "grant.authorization_code": "on", "grant.refresh_token": "on", "scope.records:read": "on",
                    "scope.openid": "on",
                ])
            #expect(registered.status == 200, "\(registered.body)")
            #expect(registered.header("Cache-Control") == "no-store")
            #expect(!registered.body.contains("client-secret"))
            let storage = try await console.auth.server.openStorage()
            let client = try await storage.clients().first { $0.name == hostile }
            try await storage.close()
            let found = try #require(client)
            #expect(found.redirectURIs == ["https://app.example/cb", "http://127.0.0.1/callback"])
            #expect(found.grants == ["authorization_code", "refresh_token"])
            #expect(found.scopes == ["records:read", "openid"])
            #expect(!found.isConfidential)
            #expect(registered.body.contains(found.id))

            let list = try await console.get("/admin/clients")
            #expect(!list.body.contains("<script>alert"))
            #expect(list.body.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; co"))
            let detail = try await console.get("/admin/clients/\(found.id)")
            #expect(detail.status == 200)
            #expect(!detail.body.contains("<script>alert"))
            #expect(!detail.body.contains("rotate_secret"), "a public client has no secret to rotate")

            let added = try await Self.events(console, AuditAction.clientAdded)
            #expect(added.count == 1)
            #expect(added.first?.actor == console.adaID)
            #expect(added.first?.subject == found.id)
            #expect(added.first?.detail["via"] == "console")
        }
    }

    @Test("rotating a secret: shown once with no-store, the old one refused at /oauth/token, tokens revoked on request")
    func rotateSecret() async throws {
        try await Self.withConsole { console in
            let id = console.auth.confidentialClient.id
            let clientCredentials = { (secret: String) in
                try await console.auth.token(["grant_type": "client_credentials", "client_id": id, "client_secret": secret])
            }
            #expect(try await clientCredentials(console.auth.confidentialSecret).status == 200)
            let bobTokens = try await console.auth.token([
                "grant_type": "password", "username": "bob", "password": AuthFixture.password, "client_id": id,
                "client_secret": console.auth.confidentialSecret,
            ])
            let kept = try #require(bobTokens.json["access_token"] as? String)

            let rotated = try await console.submit(
                "/admin/clients/\(id)", form: "client.rotate_secret", to: "/admin/clients/\(id)/secret")
            #expect(rotated.status == 200, "\(rotated.body)")
            #expect(rotated.header("Cache-Control") == "no-store")
            #expect(rotated.header("Location") == nil)
            let regex = try NSRegularExpression(pattern: #"<code id="client-secret">(ocs_[^<]+)</code>"#)
            let match = try #require(
                regex.firstMatch(in: rotated.body, range: NSRange(rotated.body.startIndex..., in: rotated.body)))
            let secret = String(rotated.body[try #require(Range(match.range(at: 1), in: rotated.body))])
            #expect(!rotated.headers.contains { $0.0.lowercased() == "set-cookie" && $0.1.contains(secret) })
            #expect(try await clientCredentials(console.auth.confidentialSecret).status == 401)
            #expect(try await clientCredentials(secret).status == 200)
            // Without the checkbox the client's tokens stay valid.
            #expect(try await console.browser.get(console.base + "/me", authorization: "Bearer \(kept)").status == 200)

            let again = try await console.submit(
                "/admin/clients/\(id)", form: "client.rotate_secret", to: "/admin/clients/\(id)/secret",
                ["revoke_tokens": "on"])
            #expect(again.status == 200)
            #expect(!again.body.contains(secret))
            #expect(try await clientCredentials(secret).status == 401)
            #expect(try await console.browser.get(console.base + "/me", authorization: "Bearer \(kept)").status == 401)

            let publicClient = try await console.submit(
                "/admin/clients/\(console.auth.confidentialClient.id)", form: "client.rotate_secret",
                to: "/admin/clients/\(console.auth.publicClient.id)/secret")
            #expect(publicClient.status == 400)
            #expect(publicClient.body.contains("public client"))

            let events = try await Self.events(console, AuditAction.clientSecretRotated)
            #expect(events.map(\.detail["tokens_revoked"]) == ["false", "true"])
            #expect(events.allSatisfy { $0.actor == console.adaID && $0.subject == id })
            let text = AuditLogTests.text(try await AuditLogTests.events(console.auth.server))
            #expect(!text.contains(secret))
        }
    }

    @Test("removing a client needs the confirmation, revokes its tokens and is audited")
    func removeClient() async throws {
        try await Self.withConsole { console in
            let id = console.auth.publicClient.id
            let tokens = try await console.auth.passwordTokens("bob")
            let access = try #require(tokens["access_token"] as? String)
            let unconfirmed = try await console.submit(
                "/admin/clients/\(id)", form: "client.remove", to: "/admin/clients/\(id)/remove")
            #expect(unconfirmed.status == 400)
            #expect(unconfirmed.body.contains("Tick the confirmation"))
            let removed = try await console.submit(
                "/admin/clients/\(id)", form: "client.remove", to: "/admin/clients/\(id)/remove",
                ["confirm": "on"])
            #expect(removed.status == 303)
            #expect(removed.header("Location") == "/admin/clients")
            let list = try await console.get("/admin/clients")
            #expect(list.body.contains("Removed the client Test CLI"))
            #expect(try await console.get("/admin/clients/\(id)").status == 404)
            #expect(try await console.browser.get(console.base + "/me", authorization: "Bearer \(access)").status == 401)
            let events = try await Self.events(console, AuditAction.clientRemoved)
            #expect(events.count == 1)
            #expect(events.first?.actor == console.adaID)
            #expect(events.first?.subject == id)
        }
    }

    @Test("rotating the signing key: the new key is in use and in the JWKS, the old one retired, the rotation audited")
    func rotateKey() async throws {
        try await Self.withConsole { console in
            let jwks = try await console.get("/.well-known/jwks.json")
            let first = try #require((jwks.json["keys"] as? [[String: Any]])?.first?["kid"] as? String)
            let keys = try await console.get("/admin/keys")
            #expect(keys.body.contains(first))
            #expect(keys.body.contains("in use"))
            let rotated = try await console.submit("/admin/keys", form: "signing_key.rotate", to: "/admin/keys/rotate")
            #expect(rotated.status == 303)
            let storage = try await console.auth.server.openStorage()
            let stored = try await storage.signingKeys()
            try await storage.close()
            let current = try #require(stored.first { $0.retiredAt == nil })
            #expect(current.kid != first)
            #expect(stored.first { $0.kid == first }?.retiredAt != nil)
            let after = try await console.get("/admin/keys")
            #expect(after.body.contains("New signing key \(current.kid) is in use."))
            #expect(after.body.contains("retired"))
            let events = try await Self.events(console, AuditAction.signingKeyRotated)
            #expect(events.count == 1)
            #expect(events.first?.actor == console.adaID)
            #expect(events.first?.subject == current.kid)
        }
    }

    @Test("the audit log: newest first, filtered by action and time, paged by 50, users shown by name")
    func auditLog() async throws {
        try await Self.withConsole { console in
            let storage = try await console.auth.server.openStorage()
            do {
                let log = AuditLog(storage: storage, logger: .init(label: "test"))
                for index in 0..<60 {
                    await log.record(AuditEvent(actor: console.adaID, action: "test.step", subject: "step-\(index)"))
                }
                await log.record(AuditEvent(actor: nil, action: "test.other", subject: "<b>bold</b>"))
                try await storage.close()
            } catch {
                try? await storage.close()
                throw error
            }
            let first = try await console.get("/admin/audit?action=test.step")
            #expect(first.status == 200)
            #expect(first.body.contains("step-59"))
            #expect(!first.body.contains("step-9<"))
            #expect(first.body.components(separatedBy: "<code>test.step</code>").count - 1 == 50)
            #expect(first.body.contains("<a href=\"/admin/users/\(console.adaID)\">ada</a>"))
            let next = try #require(first.body.firstMatch(of: #/id="next-page" href="([^"]+)"/#).map { String($0.1) })
            let second = try await console.get(TestBrowser.Page.unescape(next))
            #expect(second.status == 200)
            #expect(second.body.components(separatedBy: "<code>test.step</code>").count - 1 == 10)
            #expect(second.body.contains("step-0<"))
            #expect(!second.body.contains("next-page"))
            if let newest = first.body.range(of: "step-59"), let older = first.body.range(of: "step-58") {
                #expect(newest.lowerBound < older.lowerBound)
            }
            let other = try await console.get("/admin/audit?action=test.other")
            #expect(other.body.contains("&lt;b&gt;bold&lt;/b&gt;"))
            let future = try await console.get("/admin/audit?since=2999-01-01")
            #expect(future.body.contains("No event matches."))
            let badSince = try await console.get("/admin/audit?since=yesterday")
            #expect(badSince.status == 400)
            #expect(badSince.body.contains("Give “since” as a date"))
        }
    }

    @Test("recent errors: 5xx recorded by route pattern without the query, bounded to the last 200")
    func recentErrors() async throws {
        try await Self.withConsole { console in
            let secret = "leak-\(UUID().uuidString)"
            let failed = try await console.browser.postJSON(console.base + "/lambdas/boom?access_token=\(secret)", [:])
            #expect(failed.status == 500)
            let page = try await console.get("/admin/errors")
            #expect(page.status == 200)
            #expect(page.body.contains("<code>/lambdas/{name}</code>"))
            #expect(page.body.contains("<code>lambda_failed</code>"))
            #expect(!page.body.contains(secret))
            #expect(!page.body.contains("boom"))
            #expect(page.body.contains("this instance"))
            // An unknown record (404) is the caller's business, not an operator's.
            _ = try await console.get("/records/notes/missing")
            #expect(!(try await console.get("/admin/errors")).body.contains("/records/{type}/{id}"))

            for _ in 0..<205 {
                _ = try await console.browser.postJSON(console.base + "/lambdas/boom", [:])
            }
            let full = try await console.get("/admin/errors")
            #expect(full.body.contains("Failed requests (200)"))
            #expect(full.body.components(separatedBy: "<code>/lambdas/{name}</code>").count - 1 == 50)
            let last = try await console.get("/admin/errors?offset=150")
            #expect(last.body.components(separatedBy: "<code>/lambdas/{name}</code>").count - 1 == 50)
            #expect(!last.body.contains("next-page"))
        }
    }

    @Test("live changes: the latest changes newest first, the admin-only feed after a position, the type filter")
    func liveChanges() async throws {
        try await Self.withConsole { console in
            for text in ["one", "two"] {
                #expect(try await console.browser.postJSON(console.base + "/records/notes", ["text": text]).status == 201)
            }
            #expect(try await console.browser.postJSON(console.base + "/records/todos", ["text": "x"]).status == 201)
            let page = try await console.get("/admin/changes")
            #expect(page.status == 200)
            #expect(page.header("Content-Security-Policy")?.contains("script-src 'self'") == true)
            #expect(page.body.contains("aria-live=\"polite\""))
            #expect(page.body.contains("id=\"show-newer\""))
            let todos = try #require(page.body.range(of: "todos"))
            let notes = try #require(page.body.range(of: "<td>notes</td>"))
            #expect(todos.lowerBound < notes.lowerBound)
            let after = try #require(page.body.firstMatch(of: #/data-after="(\d+)"/#).map { String($0.1) })

            let filtered = try await console.get("/admin/changes?type=notes")
            #expect(!filtered.body.contains("<td>todos</td>"))
            #expect(filtered.body.components(separatedBy: "<td>notes</td>").count - 1 == 2)
            #expect(try await console.get("/admin/changes?type=%3Cx%3E").status == 400)

            let empty = try await console.get("/admin/changes/feed?after=\(after)")
            #expect(empty.status == 200)
            #expect((empty.json["changes"] as? [Any])?.isEmpty == true)
            #expect(try await console.browser.postJSON(console.base + "/records/notes", ["text": "three"]).status == 201)
            let feed = try await console.get("/admin/changes/feed?after=\(after)&type=notes")
            let changes = try #require(feed.json["changes"] as? [[String: Any]])
            #expect(changes.count == 1)
            #expect(changes.first?["type"] as? String == "notes")
            #expect(changes.first?["change"] as? String == "created")
            #expect(changes.first?["record"] == nil, "the feed shows no record fields")
            #expect(feed.header("Cache-Control") == "no-store")
            #expect(try await console.get("/admin/changes/feed?after=x").status == 400)

            let script = try await console.get("/admin/console.js")
            #expect(script.status == 200)
            #expect(script.header("Content-Type")?.hasPrefix("text/javascript") == true)
            #expect(script.body.contains("visibilitychange"))
        }
    }
}
