import Foundation
import OutpostServer
import Testing

/// The console's users screens against a live server (SQLite, or PostgreSQL with
/// `OUTPOST_TEST_LIVE_BACKEND=postgres`): who may see and change them, each change's effect in
/// storage and its audit event, lock-out protection, and an attacker's input.
@Suite("The admin console's users screens", .closesWhatItOpens, .timeLimit(.minutes(3)))
struct AdminUsersTests {
    static func user(_ fixture: AdminConsoleFixture, _ username: String) async throws -> StoredUser {
        try await UserDisableTests.withAdmin(fixture.auth) { storage, _ in
            try #require(try await storage.user(username: username))
        }
    }

    static func events(_ fixture: AdminConsoleFixture) async throws -> [AuditEvent] {
        try await AuditLogTests.events(fixture.auth.server)
    }

    static func path(_ user: StoredUser) -> String { "/admin/users/\(user.id)" }

    @Test("anonymous visitors are sent to the sign-in; a user without the admin role gets 403 on every page and action")
    func refusals() async throws {
        try await withAdminConsole { fixture in
            let bob = try await Self.user(fixture, "bob")
            let anonymous = TestBrowser()
            let list = try await anonymous.get(fixture.base + "/admin/users?q=a")
            #expect(list.status == 303)
            #expect(list.header("Location") == "/admin/sign-in?return_to=%2Fadmin%2Fusers%3Fq%3Da")
            #expect(try await anonymous.get(fixture.base + Self.path(bob)).status == 303)
            try await anonymous.shutdown()

            let plain = try await fixture.signedIn(AdminConsoleFixture.plainUser)
            #expect(try await plain.get(fixture.base + "/admin/users").status == 403)
            #expect(try await plain.get(fixture.base + Self.path(bob)).status == 403)
            // A form token of the admin's cannot be used by bob: his post is refused before it is read.
            let admin = try await fixture.signedIn()
            let page = try await admin.get(fixture.base + Self.path(bob))
            let token = try #require(AdminConsoleFixture.formToken(named: "user.disable", in: page.body))
            let posted = try await plain.postForm(
                fixture.base + Self.path(bob) + "/disable", ["form": "user.disable", "form_token": token],
                headers: ["Origin": fixture.base, "Sec-Fetch-Site": "same-origin"])
            #expect(posted.status == 403)
            #expect(try await Self.user(fixture, "bob").isDisabled == false)
            try await plain.shutdown()
            try await admin.shutdown()
        }
    }

    @Test("a cross-site post is refused with 403 and a missing or foreign form token with 400; nothing changes")
    func forgedPosts() async throws {
        try await withAdminConsole { fixture in
            let bob = try await Self.user(fixture, "bob")
            let admin = try await fixture.signedIn()
            let page = try await admin.get(fixture.base + Self.path(bob))
            let token = try #require(AdminConsoleFixture.formToken(named: "user.disable", in: page.body))
            let url = fixture.base + Self.path(bob) + "/disable"
            let crossSite = try await admin.postForm(
                url, ["form": "user.disable", "form_token": token], headers: ["Sec-Fetch-Site": "cross-site"])
            #expect(crossSite.status == 403)
            let missing = try await admin.postForm(url, ["form": "user.disable"], headers: ["Sec-Fetch-Site": "same-origin"])
            #expect(missing.status == 400)
            // A token of another form (sign out everywhere) does not disable.
            let other = try #require(AdminConsoleFixture.formToken(named: "user.sign-out", in: page.body))
            let foreign = try await admin.postForm(
                url, ["form": "user.disable", "form_token": other], headers: ["Sec-Fetch-Site": "same-origin"])
            #expect(foreign.status == 400)
            // Another browser's token (bound to its form cookie) is refused too.
            let stranger = try await fixture.signedIn()
            let theirs = try await stranger.get(fixture.base + Self.path(bob))
            let strangerToken = try #require(AdminConsoleFixture.formToken(named: "user.disable", in: theirs.body))
            let borrowed = try await admin.postForm(
                url, ["form": "user.disable", "form_token": strangerToken], headers: ["Sec-Fetch-Site": "same-origin"])
            #expect(borrowed.status == 400)
            #expect(try await Self.user(fixture, "bob").isDisabled == false)
            try await stranger.shutdown()
            try await admin.shutdown()
        }
    }

    @Test("the list shows users with e-mail, roles and status, searches (escaping % and _), pages, and refuses a long search")
    func list() async throws {
        try await withAdminConsole { fixture in
            try await UserDisableTests.withAdmin(fixture.auth) { storage, _ in
                for index in 0..<55 {
                    _ = try await storage.addUser(username: "user\(index)", password: AuthFixture.password, cost: 4)
                }
                _ = try await storage.addUser(username: "z_score", password: AuthFixture.password, cost: 4)
                let mail = try #require(storage as? any MailStorage)
                let bob = try #require(try await storage.user(username: "bob"))
                #expect(try await mail.setEmail("bob@example.com", verified: true, userID: bob.id))
            }
            let admin = try await fixture.signedIn()
            let first = try await admin.get(fixture.base + "/admin/users")
            #expect(first.status == 200)
            #expect(first.body.contains("<h1>Users</h1>"))
            #expect(first.body.contains(#"aria-current="page">Users</a>"#))
            #expect(first.body.contains("bob@example.com (verified)"))
            #expect(first.body.contains("<td>admin</td>"))
            #expect(first.body.components(separatedBy: "<tr>").count - 2 == 50)
            let next = try #require(first.body.range(of: #"id="next-page" href="([^"]*)""#, options: .regularExpression))
            let href = TestBrowser.Page.unescape(
                String(first.body[next].dropFirst(#"id="next-page" href=""#.count).dropLast()))
            let second = try await admin.get(fixture.base + href)
            #expect(second.status == 200)
            #expect(second.body.contains("z_score"))
            #expect(!second.body.contains(">ada</a>"))
            #expect(!second.body.contains("id=\"next-page\""))

            let underscore = try await admin.get(fixture.base + "/admin/users?q=_")
            #expect(underscore.body.contains(">z_score</a>"))
            #expect(!underscore.body.contains(">user1</a>"))
            let percent = try await admin.get(fixture.base + "/admin/users?q=%25")
            #expect(percent.body.contains("No user matches this search."))
            let byMail = try await admin.get(fixture.base + "/admin/users?q=EXAMPLE")
            #expect(byMail.body.contains(">bob</a>"))
            #expect(!byMail.body.contains(">ada</a>"))
            // Escaped, not run: a search is shown back as text.
            let markup = try await admin.get(fixture.base + "/admin/users?q=%3Cscript%3E")
            #expect(markup.status == 200)
            #expect(!markup.body.contains("<script>"))
            #expect(markup.body.contains("&lt;script&gt;"))

            let long = try await admin.get(fixture.base + "/admin/users?q=" + String(repeating: "a", count: 101))
            #expect(long.status == 400)
            #expect(long.body.contains("at most 100 characters"))
            let cursor = try await admin.get(fixture.base + "/admin/users?after=" + String(repeating: "a", count: 600))
            #expect(cursor.status == 400)
            try await admin.shutdown()
        }
    }

    @Test("disable, enable and sign out everywhere change storage, write audit events with the admin as actor, and say so")
    func accessActions() async throws {
        try await withAdminConsole { fixture in
            let bobTokens = try await fixture.auth.passwordTokens("bob")
            let access = try #require(bobTokens["access_token"] as? String)
            let bob = try await Self.user(fixture, "bob")
            let ada = try await Self.user(fixture, "ada")
            let admin = try await fixture.signedIn()
            let page = try await admin.get(fixture.base + Self.path(bob))
            #expect(page.status == 200)
            #expect(page.body.contains("<h1>User bob</h1>"))
            #expect(page.body.contains("Active: may sign in"))

            let disabled = try await fixture.submit(admin, page: Self.path(bob), form: "user.disable")
            #expect(disabled.status == 303)
            #expect(disabled.header("Location") == Self.path(bob))
            #expect(try await Self.user(fixture, "bob").isDisabled)
            #expect(
                try await fixture.auth.browser.get(fixture.base + "/me", authorization: "Bearer \(access)").status == 401)
            let shown = try await admin.get(fixture.base + Self.path(bob))
            #expect(shown.body.contains("bob is disabled and signed out everywhere."))
            #expect(shown.body.contains("Disabled since"))
            #expect(shown.body.contains(#"id="enable""#))
            #expect(!shown.body.contains(#"id="disable""#))
            #expect(try await UserDisableTests.passwordGrant(fixture.auth, "bob").status == 400)

            #expect(try await fixture.submit(admin, page: Self.path(bob), form: "user.enable").status == 303)
            #expect(try await Self.user(fixture, "bob").isDisabled == false)
            let again = try await UserDisableTests.passwordGrant(fixture.auth, "bob")
            #expect(again.status == 200)
            let newAccess = try #require(again.json["access_token"] as? String)

            #expect(try await fixture.submit(admin, page: Self.path(bob), form: "user.sign-out").status == 303)
            #expect(
                try await fixture.auth.browser.get(fixture.base + "/me", authorization: "Bearer \(newAccess)").status == 401)
            #expect(try await Self.user(fixture, "bob").isDisabled == false)

            let events = try await Self.events(fixture)
            for action in [AuditAction.userDisabled, AuditAction.userEnabled, AuditAction.userSignedOut] {
                #expect(
                    events.contains {
                        $0.action == action && $0.actor == ada.id && $0.subject == bob.id && $0.detail["via"] == "console"
                    }, "\(action)")
            }
            try await admin.shutdown()
        }
    }

    @Test("an admin cannot disable themselves or take their own admin role (400); they can take another's")
    func lockOut() async throws {
        try await withAdminConsole { fixture in
            let ada = try await Self.user(fixture, "ada")
            let bob = try await Self.user(fixture, "bob")
            let admin = try await fixture.signedIn()
            let own = try await admin.get(fixture.base + Self.path(ada))
            #expect(!own.body.contains(#"id="disable""#))
            #expect(own.body.contains("you cannot disable it from here"))
            // The form token of bob's page, posted to ada's own action.
            let selfDisable = try await fixture.submit(
                admin, page: Self.path(bob), form: "user.disable", action: Self.path(ada) + "/disable")
            #expect(selfDisable.status == 400)
            #expect(selfDisable.body.contains("You cannot disable your own account"))
            #expect(try await Self.user(fixture, "ada").isDisabled == false)
            let selfRole = try await fixture.submit(admin, page: Self.path(ada), form: "user.role-remove", ["role": "admin"])
            #expect(selfRole.status == 400)
            #expect(selfRole.body.contains("You cannot take your own admin role"))
            let adaRoles = try await UserDisableTests.withAdmin(fixture.auth) { storage, _ in
                try await storage.roles(userID: ada.id)
            }
            #expect(adaRoles == ["admin"])
            // The page still works after the refusals: ada is still an admin.
            #expect(try await admin.get(fixture.base + "/admin/users").status == 200)
            try await admin.shutdown()
        }
    }

    @Test("roles are given and taken through the forms, audited; a bad role name is 400 with the rule")
    func roles() async throws {
        try await withAdminConsole { fixture in
            let ada = try await Self.user(fixture, "ada")
            let bob = try await Self.user(fixture, "bob")
            let admin = try await fixture.signedIn()
            let added = try await fixture.submit(admin, page: Self.path(bob), form: "user.role-add", ["role": "editor"])
            #expect(added.status == 303)
            let page = try await admin.get(fixture.base + Self.path(bob))
            #expect(page.body.contains("bob has the role editor."))
            #expect(page.body.contains(#"id="remove-role-editor""#))
            for bad in ["", "no spaces", String(repeating: "r", count: 65), "<b>"] {
                let refused = try await fixture.submit(admin, page: Self.path(bob), form: "user.role-add", ["role": bad])
                #expect(refused.status == 400, "\(bad)")
                #expect(refused.body.contains("A role is 1–64 letters"), "\(bad)")
            }
            let missing = try await fixture.submit(admin, page: Self.path(bob), form: "user.role-remove", ["role": "editor"])
            #expect(missing.status == 303)
            // The remove form of ada's own admin role, posted for bob's editor role he no longer has.
            let absent = try await fixture.submit(
                admin, page: Self.path(ada), form: "user.role-remove", action: Self.path(bob) + "/roles/remove",
                ["role": "editor"])
            #expect(absent.status == 400)
            #expect(absent.body.contains("bob does not have the role editor."))
            let bobRoles = try await UserDisableTests.withAdmin(fixture.auth) { storage, _ in
                try await storage.roles(userID: bob.id)
            }
            #expect(bobRoles.isEmpty)
            let events = try await Self.events(fixture).filter { $0.action == AuditAction.userRolesChanged && $0.actor == ada.id }
            #expect(events.contains { $0.detail["added"] == "editor" && $0.subject == bob.id })
            #expect(events.contains { $0.detail["removed"] == "editor" && $0.subject == bob.id })
            try await admin.shutdown()
        }
    }

    @Test("quotas take numbers with k, m, g, default and none, as the CLI does; bad values are 400 and change nothing")
    func quotas() async throws {
        try await withAdminConsole { fixture in
            let bob = try await Self.user(fixture, "bob")
            let admin = try await fixture.signedIn()
            let set = try await fixture.submit(
                admin, page: Self.path(bob), form: "user.quotas",
                ["records": "20", "record_bytes": "none", "file_bytes": "5m", "pending_uploads": "default"])
            #expect(set.status == 303)
            var expected = QuotaOverrides()
            expected.records = .limit(20)
            expected.recordBytes = .unlimited
            expected.fileBytes = .limit(5 << 20)
            try await UserDisableTests.withAdmin(fixture.auth) { storage, _ in
                let quotas = try #require(storage as? any QuotaStorage)
                #expect(try await quotas.quotaOverrides(user: bob.id) == expected)
                _ = try await storage.createRecord(type: "notes", fields: [:], owner: bob.id)
            }
            let page = try await admin.get(fixture.base + Self.path(bob))
            #expect(page.body.contains("The quotas of bob are set."))
            #expect(page.body.contains(#"id="records" name="records" value="20""#))
            #expect(page.body.contains("<td>Records</td><td>1</td><td>20</td>"))
            for bad in ["-1", "1.5", "12x", "", String(repeating: "9", count: 40), "9000000000g"] {
                let refused = try await fixture.submit(
                    admin, page: Self.path(bob), form: "user.quotas",
                    ["records": bad, "record_bytes": "none", "file_bytes": "5m", "pending_uploads": "default"])
                #expect(refused.status == 400, "\(bad)")
                #expect(refused.body.contains("Records takes a number"), "\(bad)")
            }
            let after = try await UserDisableTests.withAdmin(fixture.auth) { storage, _ in
                try await (storage as? any QuotaStorage)?.quotaOverrides(user: bob.id)
            }
            #expect(after == expected)
            let events = try await Self.events(fixture).filter { $0.action == AuditAction.userQuotaChanged }
            #expect(events.count == 1)
            #expect(events.first?.detail["records"] == "20")
            #expect(events.first?.detail["record_bytes"] == "none")
            #expect(events.first?.detail["pending_uploads"] == nil)
            try await admin.shutdown()
        }
    }

    @Test("an unknown or overlong user id is a 404 page, for pages and actions alike")
    func unknownUser() async throws {
        try await withAdminConsole { fixture in
            let bob = try await Self.user(fixture, "bob")
            let admin = try await fixture.signedIn()
            #expect(try await admin.get(fixture.base + "/admin/users/u_nobody").status == 404)
            #expect(try await admin.get(fixture.base + "/admin/users/" + String(repeating: "u", count: 300)).status == 404)
            let badEncoding = try await admin.get(fixture.base + "/admin/users/%ZZ")
            #expect(badEncoding.status == 404, "\(badEncoding.status) \(badEncoding.body)")
            let posted = try await fixture.submit(
                admin, page: Self.path(bob), form: "user.disable", action: "/admin/users/u_nobody/disable")
            #expect(posted.status == 404)
            try await admin.shutdown()
        }
    }
}
