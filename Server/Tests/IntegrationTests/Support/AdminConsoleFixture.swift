import Foundation
import OutpostServer
import Testing

/// The console's test fixture: the auth fixture's server, where ada has the `admin` role and bob has
/// none, and browsers signed in to the console through its own sign-in page.
struct AdminConsoleFixture {
    let auth: AuthFixture
    var base: String { auth.base }

    static let admin = "ada"
    static let plainUser = "bob"

    /// A browser signed in to the console as `username` (its session cookie in the jar).
    func signedIn(_ username: String = Self.admin) async throws -> TestBrowser {
        let browser = TestBrowser()
        let signedIn = try await signIn(browser, username)
        #expect(signedIn.status == 303, "\(signedIn.body)")
        return browser
    }

    /// The console's sign-in form, read at `/admin/sign-in?query` and posted by `browser` with
    /// `username` and `password`.
    func signIn(
        _ browser: TestBrowser, _ username: String, password: String = AuthFixture.password, query: String = ""
    ) async throws -> TestBrowser.Page {
        let form = try await browser.get(base + "/admin/sign-in" + (query.isEmpty ? "" : "?" + query))
        #expect(form.status == 200, "\(form.body)")
        var fields = form.hiddenFields
        fields["username"] = username
        fields["password"] = password
        return try await browser.postForm(base + "/admin/sign-in", fields)
    }

    /// Posts the form whose hidden `form` field is `name` on the page at `pagePath`, with `fields`
    /// added, as a browser on the console's own origin does.
    func submit(
        _ browser: TestBrowser, page pagePath: String, form name: String, action: String? = nil,
        _ fields: [String: String] = [:]
    ) async throws -> TestBrowser.Page {
        let page = try await browser.get(base + pagePath)
        #expect(page.status == 200, "\(page.status) \(page.body)")
        let token = try #require(Self.formToken(named: name, in: page.body), "no form \(name) on \(pagePath)")
        let target = try #require(action ?? Self.action(ofForm: name, in: page.body), "no action for \(name)")
        var body = fields
        body["form"] = name
        body["form_token"] = token
        return try await browser.postForm(base + target, body, headers: ["Origin": base, "Sec-Fetch-Site": "same-origin"])
    }

    /// The form token of the first form named `name` in `html`.
    static func formToken(named name: String, in html: String) -> String? {
        guard let form = formHTML(named: name, in: html),
            let range = form.range(of: #"name="form_token" value="([^"]*)""#, options: .regularExpression)
        else { return nil }
        let attribute = form[range]
        return TestBrowser.Page.unescape(String(attribute.dropFirst(#"name="form_token" value=""#.count).dropLast()))
    }

    /// The `action` of the first form named `name` in `html`.
    static func action(ofForm name: String, in html: String) -> String? {
        guard let start = html.range(of: #"name="form" value="\#(name)""#)?.lowerBound,
            let open = html[..<start].range(of: "<form ", options: .backwards),
            let attribute = html[open.upperBound..<start].range(of: #"action="([^"]*)""#, options: .regularExpression)
        else { return nil }
        let text = html[open.upperBound..<start][attribute]
        return TestBrowser.Page.unescape(String(text.dropFirst(#"action=""#.count).dropLast()))
    }

    static func formHTML(named name: String, in html: String) -> Substring? {
        guard let start = html.range(of: #"name="form" value="\#(name)""#),
            let open = html[..<start.lowerBound].range(of: "<form ", options: .backwards),
            let close = html[start.upperBound...].range(of: "</form>")
        else { return nil }
        return html[open.lowerBound..<close.upperBound]
    }
}

/// Runs `body` with a console fixture (ada is an admin) and stops its server.
func withAdminConsole(
    configure: (inout ServerConfiguration) -> Void = { _ in }, _ body: (AdminConsoleFixture) async throws -> Void
) async throws {
    try await withAuthFixture(configure: configure) { auth in
        let storage = try await auth.server.openStorage()
        do {
            let ada = try #require(try await storage.user(username: AdminConsoleFixture.admin))
            try await storage.addRole("admin", userID: ada.id)
            try await storage.close()
        } catch {
            try? await storage.close()
            throw error
        }
        try await body(AdminConsoleFixture(auth: auth))
    }
}
