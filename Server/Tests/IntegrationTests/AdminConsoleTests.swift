import Foundation
import OutpostServer
import Testing

/// The console's door against a live server: who gets in, how the sign-in and sign-out behave
/// under an attacker's input, and the headers every console page carries.
@Suite("The admin console's sign-in, gate and pages", .closesWhatItOpens)
struct AdminConsoleTests {
    @Test("an anonymous visitor is sent to the sign-in and comes back to the page asked for")
    func anonymousVisitor() async throws {
        try await withAdminConsole { fixture in
            let browser = TestBrowser()
            let page = try await browser.get(fixture.base + "/admin?tab=x")
            #expect(page.status == 303)
            #expect(page.header("Location") == "/admin/sign-in?return_to=%2Fadmin%3Ftab%3Dx")
            let form = try await browser.get(fixture.base + "/admin/sign-in?return_to=%2Fadmin%3Ftab%3Dx")
            var fields = form.hiddenFields
            #expect(fields["return_to"] == "/admin?tab=x")
            fields["username"] = AdminConsoleFixture.admin
            fields["password"] = AuthFixture.password
            let signedIn = try await browser.postForm(fixture.base + "/admin/sign-in", fields)
            #expect(signedIn.status == 303)
            #expect(signedIn.header("Location") == "/admin?tab=x")
            let overview = try await browser.get(fixture.base + "/admin")
            #expect(overview.status == 200)
            #expect(overview.body.contains("<h1>Overview</h1>"))
            #expect(overview.body.contains(#"<strong id="signed-in-as">ada</strong>"#))
            try await browser.shutdown()
        }
    }

    @Test("every console page forbids framing and caching, sends no referrer off-site and allows no script")
    func headers() async throws {
        try await withAdminConsole { fixture in
            let browser = try await fixture.signedIn()
            let pages = [
                ("/admin", try await browser.get(fixture.base + "/admin")),
                ("/admin/sign-in", try await fixture.auth.browser.get(fixture.base + "/admin/sign-in")),
            ]
            for (path, shown) in pages {
                #expect(shown.status == 200, "\(path)")
                #expect(shown.header("X-Frame-Options") == "DENY", "\(path)")
                #expect(shown.header("Cache-Control") == "no-store", "\(path)")
                #expect(shown.header("Referrer-Policy") == "same-origin", "\(path)")
                let policy = try #require(shown.header("Content-Security-Policy"), "\(path)")
                #expect(policy.contains("default-src 'none'") && policy.contains("frame-ancestors 'none'"), "\(policy)")
                #expect(!policy.contains("script-src"), "\(policy)")
            }
            try await browser.shutdown()
        }
    }

    @Test("a user without the admin role is refused every console page with 403")
    func withoutTheRole() async throws {
        try await withAdminConsole { fixture in
            let browser = try await fixture.signedIn(AdminConsoleFixture.plainUser)
            let page = try await browser.get(fixture.base + "/admin")
            #expect(page.status == 403)
            #expect(page.body.contains("no admin role"))
            #expect(!page.body.contains("Schema version"))
            // The sign-in page does not send a signed-in non-admin anywhere: it offers the form again.
            #expect(try await browser.get(fixture.base + "/admin/sign-in").status == 200)
            try await browser.shutdown()
        }
    }

    @Test("a wrong password is refused with 401 and written to the audit log as a console sign-in")
    func wrongPassword() async throws {
        try await withAdminConsole { fixture in
            let browser = TestBrowser()
            let refused = try await fixture.signIn(browser, AdminConsoleFixture.admin, password: "not the password")
            #expect(refused.status == 401)
            #expect(refused.body.contains("The username or password is wrong."))
            #expect(browser.cookie("outpost_session") == nil)
            let storage = try await fixture.auth.server.openStorage()
            let events = try await #require(storage as? any AuditStorage).auditEvents(AuditQuery(actionPrefix: "sign_in."))
            try await storage.close()
            #expect(events.contains { $0.action == AuditAction.signInFailed && $0.detail["method"] == "console" })
            try await browser.shutdown()
        }
    }

    @Test(
        "return_to only leads back into the console",
        arguments: [
            "https://evil.example/admin", "//evil.example/admin", "/admin//evil.example", "/admin\\evil", "/adminx",
            "/admin/../oauth/authorize", "/oauth/authorize", "/admin/\r\nSet-Cookie: x=1", "/admin/ x",
        ])
    func returnTo(_ target: String) async throws {
        try await withAdminConsole { fixture in
            let browser = TestBrowser()
            let query = "return_to=" + (target.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
            let signedIn = try await fixture.signIn(browser, AdminConsoleFixture.admin, query: query)
            #expect(signedIn.status == 303)
            #expect(signedIn.header("Location") == "/admin", "\(target) → \(signedIn.header("Location") ?? "-")")
            try await browser.shutdown()
        }
    }

    @Test("a sign-in or sign-out posted from another site or without this browser's form token changes nothing")
    func forgedForms() async throws {
        try await withAdminConsole { fixture in
            // Login CSRF: another browser's valid form token does not sign this one in.
            let attacker = TestBrowser()
            var fields = try await attacker.get(fixture.base + "/admin/sign-in").hiddenFields
            fields["username"] = AdminConsoleFixture.plainUser
            fields["password"] = AuthFixture.password
            let victim = TestBrowser()
            let forged = try await victim.postForm(fixture.base + "/admin/sign-in", fields)
            #expect(forged.status == 400)
            #expect(victim.cookie("outpost_session") == nil)
            let crossSite = try await victim.postForm(
                fixture.base + "/admin/sign-in", fields, headers: ["Sec-Fetch-Site": "cross-site"])
            #expect(crossSite.status == 403)

            let admin = try await fixture.signedIn()
            let overview = try await admin.get(fixture.base + "/admin")
            let token = try #require(AdminConsoleFixture.formToken(named: "admin.sign-out", in: overview.body))
            let fromElsewhere = try await admin.postForm(
                fixture.base + "/admin/sign-out", ["form": "admin.sign-out", "form_token": token],
                headers: ["Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"])
            #expect(fromElsewhere.status == 403)
            let anonymous = try await victim.postForm(
                fixture.base + "/admin/sign-out", ["form": "admin.sign-out", "form_token": token],
                headers: ["Origin": fixture.base, "Sec-Fetch-Site": "same-origin"])
            #expect(anonymous.status == 400, "a token of another browser")
            let noToken = try await admin.postForm(fixture.base + "/admin/sign-out", ["form": "admin.sign-out"])
            #expect(noToken.status == 400)
            #expect(try await admin.get(fixture.base + "/admin").status == 200, "still signed in")

            let signedOut = try await fixture.submit(admin, page: "/admin", form: "admin.sign-out")
            #expect(signedOut.status == 303)
            #expect(signedOut.header("Location") == "/admin/sign-in")
            #expect(try await admin.get(fixture.base + "/admin").status == 303, "the session ended")
            for browser in [attacker, victim, admin] { try await browser.shutdown() }
        }
    }

    @Test("a browser signed in on the sign-in pages is signed in to the console: one session")
    func sharedSession() async throws {
        try await withAdminConsole { fixture in
            let browser = try await fixture.signedIn()
            let session = try #require(browser.cookie("outpost_session"))
            let other = TestBrowser()
            let page = try await other.get(fixture.base + "/admin", headers: ["Cookie": "outpost_session=\(session)"])
            #expect(page.status == 200)
            let forged = try await other.get(fixture.base + "/admin", headers: ["Cookie": "outpost_session=ops_forged"])
            #expect(forged.status == 303)
            try await browser.shutdown()
            try await other.shutdown()
        }
    }
}
