import Foundation
import HTTPTypes
import Outpost
import OutpostServer
import Testing

/// The console's records section against a live server (SQLite, or PostgreSQL with
/// `OUTPOST_TEST_LIVE_BACKEND=postgres`): record types, their rules (changed and tried), and
/// records browsed, edited and deleted, each compared with what real client requests get.
@Suite("The admin console's record types, rules and records", .closesWhatItOpens, .timeLimit(.minutes(3)))
struct AdminRecordsTests {
    static func token(_ fixture: AdminConsoleFixture, _ username: String) async throws -> String {
        try #require(try await fixture.auth.passwordTokens(username)["access_token"] as? String)
    }

    static func create(_ fixture: AdminConsoleFixture, _ token: String?, _ type: String, _ body: JSONValue) async throws
        -> String
    {
        let reply = try await PrivateRecordsTests.send(
            fixture.auth.server.baseURL, .post, "/records/\(type)", token: token, body: body)
        #expect(reply.status == 201, "\(String(decoding: reply.body, as: UTF8.self))")
        return try #require(try reply.json()["id"]?.stringValue)
    }

    static func stored(_ fixture: AdminConsoleFixture, _ type: String, _ id: String) async throws -> StoredRecord? {
        try await fixture.auth.withStorage { try await $0.record(type: type, id: id) }
    }

    static func events(_ fixture: AdminConsoleFixture, _ action: String) async throws -> [AuditEvent] {
        try await fixture.auth.withStorage { storage in
            try await #require(storage as? any AuditStorage).auditEvents(AuditQuery(actionPrefix: action))
        }
    }

    static func adminID(_ fixture: AdminConsoleFixture) async throws -> String {
        try await fixture.auth.withStorage { try #require(try await $0.user(username: AdminConsoleFixture.admin)).id }
    }

    /// Runs `body` with a browser signed in as the admin, and always shuts the browser down.
    static func withAdmin(_ fixture: AdminConsoleFixture, _ body: (TestBrowser) async throws -> Void) async throws {
        let browser = try await fixture.signedIn()
        do {
            try await body(browser)
        } catch {
            try? await browser.shutdown()
            throw error
        }
        try await browser.shutdown()
    }

    /// The text of the trial's answer on a type's page.
    static func outcome(_ page: TestBrowser.Page) -> String? {
        guard let start = page.body.range(of: #"<p id="trial-outcome">"#),
            let end = page.body[start.upperBound...].range(of: "</p>")
        else { return nil }
        return TestBrowser.Page.unescape(String(page.body[start.upperBound..<end.lowerBound]))
    }

    @Test("anonymous visitors are sent to sign in, plain users get 403, cross-site posts 403 and foreign form tokens 400")
    func gate() async throws {
        try await withAdminConsole { fixture in
            let anonymous = TestBrowser()
            let bob = try await fixture.signedIn(AdminConsoleFixture.plainUser)
            let ada = try await fixture.signedIn()
            let id = try await Self.create(fixture, try await Self.token(fixture, "ada"), "memos", ["title": "x"])
            for path in ["/admin/records", "/admin/records/memos", "/admin/records/memos/list", "/admin/records/memos/\(id)"] {
                let page = try await anonymous.get(fixture.base + path)
                #expect(page.status == 303, "\(path)")
                #expect(page.header("Location")?.hasPrefix("/admin/sign-in?return_to=") == true, "\(path)")
                #expect(try await bob.get(fixture.base + path).status == 403, "\(path)")
                #expect(try await ada.get(fixture.base + path).status == 200, "\(path)")
            }
            let page = try await ada.get(fixture.base + "/admin/records/memos")
            let token = try #require(AdminConsoleFixture.formToken(named: "rule.change", in: page.body))
            let fields = ["form": "rule.change", "form_token": token, "operation": "create", "expression": "false"]
            let crossSite = try await ada.postForm(
                fixture.base + "/admin/records/memos/rules", fields,
                headers: ["Origin": "https://attacker.example", "Sec-Fetch-Site": "cross-site"])
            #expect(crossSite.status == 403)
            var foreign = fields
            let trialToken = try #require(AdminConsoleFixture.formToken(named: "rule.trial", in: page.body))
            foreign["form_token"] = trialToken
            let wrongForm = try await ada.postForm(
                fixture.base + "/admin/records/memos/rules", foreign,
                headers: ["Origin": fixture.base, "Sec-Fetch-Site": "same-origin"])
            #expect(wrongForm.status == 400)
            let bobPost = try await bob.postForm(
                fixture.base + "/admin/records/memos/rules", fields,
                headers: ["Origin": fixture.base, "Sec-Fetch-Site": "same-origin"])
            #expect(bobPost.status == 403)
            #expect(try await fixture.auth.withStorage { try await $0.rules() }.contains { $0.type == "memos" } == false)
            #expect(try await Self.stored(fixture, "memos", id) != nil)
            for browser in [anonymous, bob, ada] { try await browser.shutdown() }
        }
    }

    @Test("a rule saved in the console decides the next request at once, though rules are kept an hour; audited")
    func ruleChange() async throws {
        try await withAdminConsole(configure: { $0.accessRulesMaxAge = .seconds(3600) }) { fixture in
            try await Self.withAdmin(fixture) { ada in
                let bob = try await Self.token(fixture, "bob")
                let base = fixture.auth.server.baseURL
                // The rules in force are read and kept before the change.
                _ = try await Self.create(fixture, bob, "memos", ["title": "before"])
                let saved = try await fixture.submit(
                    ada, page: "/admin/records/memos", form: "rule.change", ["operation": "create", "expression": "false"])
                #expect(saved.status == 303)
                #expect(saved.header("Location") == "/admin/records/memos")
                let refused = try await PrivateRecordsTests.send(
                    base, .post, "/records/memos", token: bob, body: ["title": "after"])
                #expect(refused.status == 403)
                #expect(try refused.json()["error"]?["details"]?["rule"] == "memos.create")
                let page = try await ada.get(fixture.base + "/admin/records/memos")
                #expect(page.body.contains("Rule memos.create is set."))
                #expect(page.body.contains("<td>create</td><td><code>false</code></td><td>memos.create</td>"))
                let events = try await Self.events(fixture, "rule.changed")
                let event = try #require(events.first)
                #expect(event.actor == (try await Self.adminID(fixture)))
                #expect(event.subject == "memos")
                #expect(event.detail["expression"] == "false" && event.detail["operation"] == "create")

                let invalid = try await fixture.submit(
                    ada, page: "/admin/records/memos", form: "rule.change",
                    ["operation": "read", "expression": "record.owner =="])
                #expect(invalid.status == 400)
                #expect(invalid.body.contains("types.memos.read:"), "\(invalid.body)")
                let unknown = try await fixture.submit(
                    ada, page: "/admin/records/memos", form: "rule.change", ["operation": "erase", "expression": "true"])
                #expect(unknown.status == 400)
                #expect(unknown.body.contains("is not an operation a rule decides"))
                #expect(try await fixture.auth.withStorage { try await $0.rules() }.filter { $0.type == "memos" }.count == 1)

                let cleared = try await fixture.submit(
                    ada, page: "/admin/records/memos", form: "rule.change", ["operation": "create", "expression": ""])
                #expect(cleared.status == 303)
                let allowed = try await PrivateRecordsTests.send(
                    base, .post, "/records/memos", token: bob, body: ["title": "again"])
                #expect(allowed.status == 201)
                #expect(try await Self.events(fixture, "rule.changed").last?.detail["change"] == "cleared")
            }
        }
    }

    @Test("a rule test answers what real requests get: read, update, delete and create for the owner, another user and nobody")
    func ruleTrial() async throws {
        try await withAdminConsole(configure: { $0.accessRulesMaxAge = .zero }) { fixture in
            try await Self.withAdmin(fixture) { ada in
                let base = fixture.auth.server.baseURL
                let tokens = ["ada": try await Self.token(fixture, "ada"), "bob": try await Self.token(fixture, "bob")]
                try await fixture.auth.withStorage { storage in
                    try await storage.setRule(
                        type: "memos", operation: "read", expression: "record.owner == caller.user || record.shared == true")
                    try await storage.setRule(
                        type: "memos", operation: "create", expression: "caller.signed_in && request.body.title != null")
                    try await storage.setRule(
                        type: "memos", operation: "update",
                        expression: "record.owner == caller.user || \"editor\" in caller.roles")
                    let bob = try #require(try await storage.user(username: "bob"))
                    try await storage.addRole("editor", userID: bob.id)
                }
                let own = try await Self.create(fixture, tokens["ada"], "memos", ["title": "private"])
                let shared = try await Self.create(fixture, tokens["ada"], "memos", ["title": "shared", "shared": true])
                func trial(_ fields: [String: String]) async throws -> String {
                    let page = try await fixture.submit(ada, page: "/admin/records/memos", form: "rule.trial", fields)
                    #expect(page.status == 200, "\(page.body)")
                    return try #require(Self.outcome(page), "\(page.body)")
                }
                for (user, id) in [("ada", own), ("bob", own), ("", own), ("bob", shared), ("", shared)] {
                    let token = user.isEmpty ? nil : tokens[user]
                    for operation in ["read", "update", "delete"] where !(operation == "delete" && user == "ada") {
                        let method: HTTPRequest.Method = operation == "read" ? .get : operation == "update" ? .put : .delete
                        let answer = try await trial(["operation": operation, "username": user, "record_id": id])
                        let real = try await PrivateRecordsTests.send(
                            base, method, "/records/memos/\(id)", token: token,
                            body: operation == "update" ? ["title": "x", "shared": id == shared ? true : false] : nil)
                        #expect(answer.hasPrefix("\(real.status) "), "\(operation) by '\(user)': \(answer) vs \(real.status)")
                    }
                }
                for (user, body) in [("bob", #"{"title": "t"}"#), ("bob", #"{"text": "no title"}"#), ("", #"{"title": "t"}"#)] {
                    let answer = try await trial(["operation": "create", "username": user, "record_json": body])
                    let real = try await PrivateRecordsTests.send(
                        base, .post, "/records/memos", token: user.isEmpty ? nil : tokens[user],
                        body: try JSONValue(parsing: Data(body.utf8)))
                    #expect(answer.hasPrefix("\(real.status) "), "create by '\(user)' of \(body): \(answer) vs \(real.status)")
                }
                let page = try await fixture.submit(
                    ada, page: "/admin/records/memos", form: "rule.trial",
                    ["operation": "read", "username": "bob", "record_json": #"{"owner": "someone", "shared": false}"#])
                #expect(page.body.contains("Result: denied"))
                #expect(page.body.contains("Rule memos.read denies"))
                let both = try await fixture.submit(
                    ada, page: "/admin/records/memos", form: "rule.trial",
                    ["operation": "read", "record_id": own, "record_json": "{}"])
                #expect(both.status == 400)
                #expect(both.body.contains("not both"))
                let nobody = try await fixture.submit(
                    ada, page: "/admin/records/memos", form: "rule.trial",
                    ["operation": "read", "username": "nobody-here", "record_id": own])
                #expect(nobody.status == 400)
                #expect(nobody.body.contains("No user"))
            }
        }
    }

    @Test(
        "an edit from a stale version is 409 and loses nothing; bad JSON is 400 with the reason; a good edit is written and audited"
    )
    func edit() async throws {
        try await withAdminConsole { fixture in
            try await Self.withAdmin(fixture) { ada in
                let base = fixture.auth.server.baseURL
                let token = try await Self.token(fixture, "ada")
                let id = try await Self.create(fixture, token, "memos", ["title": "one"])
                let path = "/admin/records/memos/\(id)"
                let shown = try await ada.get(fixture.base + path)
                #expect(shown.hiddenFields["version"] == "1")
                #expect(shown.body.contains("&quot;title&quot;: &quot;one&quot;"))
                let patched = try await PrivateRecordsTests.send(
                    base, .patch, "/records/memos/\(id)", token: token, body: ["title": "two"])
                #expect(patched.status == 200)

                let stale = try await fixture.submit(
                    ada, page: path, form: "record.update", ["version": "1", "json": #"{"title": "admin"}"#])
                #expect(stale.status == 409)
                #expect(stale.body.contains("changed while you edited it"))
                #expect(stale.body.contains("&quot;title&quot;: &quot;admin&quot;"), "the admin's text stays in the form")
                #expect(try await Self.stored(fixture, "memos", id)?.body == #"{"title":"two"}"#)

                for (text, reason) in [
                    ("{\"title\": ", "not valid JSON"),
                    (String(repeating: "[", count: 300) + String(repeating: "]", count: 300), "deeper than"),
                    ("[1, 2]", "A record is a JSON object"),
                ] {
                    let whole = try await fixture.submit(ada, page: path, form: "record.update", ["version": "2", "json": text])
                    #expect(whole.status == 400)
                    #expect(whole.body.contains(reason), "\(reason): \(whole.body)")
                }
                #expect(try await Self.stored(fixture, "memos", id)?.version == 2)

                let saved = try await fixture.submit(
                    ada, page: path, form: "record.update",
                    ["version": "2", "json": #"{"title": "admin", "big": 18446744073709551616, "id": "ignored"}"#])
                #expect(saved.status == 303)
                let read = try await PrivateRecordsTests.send(base, .get, "/records/memos/\(id)", token: token)
                #expect(read.headerFields[.eTag] == "\"v3\"")
                #expect(try read.json()["title"] == "admin")
                #expect(String(decoding: read.body, as: UTF8.self).contains(#""big":18446744073709551616"#))
                #expect(try read.json()["id"]?.stringValue == id)
                let event = try #require(try await Self.events(fixture, "record.updated").first)
                #expect(event.actor == (try await Self.adminID(fixture)))
                #expect(event.subject == "memos/\(id)")
                #expect(event.detail["version"] == "3")
                // Shown again as it is stored: saving the text unchanged writes the same fields.
                let again = try await ada.get(fixture.base + path)
                #expect(again.body.contains("&quot;big&quot;: 18446744073709551616"))
            }
        }
    }

    @Test("delete asks for its confirmation, then removes the record and writes record.deleted")
    func delete() async throws {
        try await withAdminConsole { fixture in
            try await Self.withAdmin(fixture) { ada in
                let token = try await Self.token(fixture, "bob")
                let id = try await Self.create(fixture, token, "memos", ["title": "doomed"])
                let path = "/admin/records/memos/\(id)"
                let unconfirmed = try await fixture.submit(ada, page: path, form: "record.delete", [:])
                #expect(unconfirmed.status == 400)
                #expect(unconfirmed.body.contains("Tick &quot;I understand&quot;"))
                #expect(try await Self.stored(fixture, "memos", id) != nil)
                let stale = try await fixture.submit(ada, page: path, form: "record.delete", ["confirm": "yes", "version": "7"])
                #expect(stale.status == 409)
                #expect(try await Self.stored(fixture, "memos", id) != nil)
                let deleted = try await fixture.submit(
                    ada, page: path, form: "record.delete", ["confirm": "yes", "version": "1"])
                #expect(deleted.status == 303)
                #expect(deleted.header("Location") == "/admin/records/memos/list")
                #expect(try await Self.stored(fixture, "memos", id) == nil)
                let read = try await PrivateRecordsTests.send(
                    fixture.auth.server.baseURL, .get, "/records/memos/\(id)", token: token)
                #expect(read.status == 404)
                let event = try #require(try await Self.events(fixture, "record.deleted").first)
                #expect(event.subject == "memos/\(id)")
                #expect(event.actor == (try await Self.adminID(fixture)))
                #expect(try await ada.get(fixture.base + path).status == 404)
            }
        }
    }

    @Test("an attacker's record content is shown escaped on the list and record pages")
    func hostileContent() async throws {
        try await withAdminConsole { fixture in
            try await Self.withAdmin(fixture) { ada in
                let token = try await Self.token(fixture, "bob")
                let id = try await Self.create(
                    fixture, token, "memos",
                    [
                        "<b>key</b>": "<script>alert(1)</script>", "x": #""><img src=x onerror=alert(1)>"#,
                        "y": "</textarea><script>alert(2)</script>",
                    ])
                for path in ["/admin/records/memos/list", "/admin/records/memos/\(id)"] {
                    let page = try await ada.get(fixture.base + path)
                    #expect(page.status == 200)
                    #expect(!page.body.contains("<script>alert"), "\(path)")
                    #expect(!page.body.contains("<img src=x"), "\(path)")
                    #expect(!page.body.contains("<b>key"), "\(path)")
                    #expect(!page.body.contains("</textarea><script>"), "\(path)")
                    #expect(page.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "\(path)")
                }
            }
        }
    }

    @Test("the types page lists types with records or rules; the records list pages by 50, filters, and shows private records")
    func browse() async throws {
        try await withAdminConsole { fixture in
            try await Self.withAdmin(fixture) { ada in
                let bob = try await Self.token(fixture, "bob")
                try await fixture.auth.withStorage { try await $0.setRule(type: "ruled", operation: "read", expression: "false") }
                for number in 0..<53 { _ = try await Self.create(fixture, bob, "items", ["n": .int(number)]) }
                let hidden = try await PrivateRecordsTests.send(
                    fixture.auth.server.baseURL, .post, "/records/items?visibility=private", token: bob, body: ["n": 100])
                let hiddenID = try #require(try hidden.json()["id"]?.stringValue)
                let types = try await ada.get(fixture.base + "/admin/records")
                for type in ["items", "ruled", "*"] {
                    #expect(types.body.contains(">\(type)</a>"), "\(type): \(types.body)")
                }
                let first = try await ada.get(
                    fixture.base + "/admin/records/items/list?filter=" + "record.n >= 0".addingPercentEncoding(
                        withAllowedCharacters: .alphanumerics)!)
                #expect(first.status == 200)
                #expect(first.body.components(separatedBy: "<tr><td>").count - 1 == 50)
                let next = try #require(first.body.range(of: #"id="next-page" href="([^"]*)""#, options: .regularExpression))
                let href = TestBrowser.Page.unescape(
                    String(first.body[next].dropFirst(#"id="next-page" href=""#.count).dropLast()))
                let second = try await ada.get(fixture.base + href)
                #expect(second.body.components(separatedBy: "<tr><td>").count - 1 == 4)
                #expect(second.body.contains(hiddenID), "the admin sees a private record")
                let filtered = try await ada.get(fixture.base + "/admin/records/items/list?filter=record.n%20%3D%3D%20100")
                #expect(filtered.body.components(separatedBy: "<tr><td>").count - 1 == 1)
                let bad = try await ada.get(fixture.base + "/admin/records/items/list?filter=record.n%20%3E%3D")
                #expect(bad.status == 400)
                #expect(bad.body.contains("The filter does not parse"))
                let forged = try await ada.get(fixture.base + "/admin/records/items/list?after=forged.cursor")
                #expect(forged.status == 400)
            }
        }
    }
}
