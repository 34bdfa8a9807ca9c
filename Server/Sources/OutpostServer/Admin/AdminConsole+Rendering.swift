import Foundation
import HTTPTypes
import Hummingbird
@_spi(OutpostInternal) import OutpostCore

/// The console's layout and answers: pages, forms, redirects with a notice, refusals.
extension AdminConsole {
    /// A short-lived cookie carrying the notice of the last change to the next page (post, redirect, get).
    static let noticeCookie = "outpost_admin_notice"
    /// The longest notice kept.
    static let maxNoticeLength = 300

    /// A console page: the skip link, the header with who is signed in and a sign-out button, the
    /// navigation with `section` marked current, and `body` under one `<h1>` of `title`.
    ///
    /// - Parameters:
    ///   - body: HTML; every value from storage or the request in it must be escaped
    ///     (`HTMLPage.escape`).
    ///   - error: Shown above the body as an alert, for a refused change (with a 4xx `status`).
    ///   - script: Whether the page loads the console's own script, `/admin/console.js`.
    func page(
        _ visit: AdminVisit, title: String, section: Section?, body: String, status: HTTPResponse.Status = .ok,
        error: String? = nil, script: Bool = false
    ) -> Response {
        let notice = Self.notice(in: visit.request)
        let navigation = Self.sections.map { item in
            let current = item == section ? " aria-current=\"page\"" : ""
            return "<li><a href=\"\(item.path)\"\(current)>\(HTMLPage.escape(item.title))</a></li>"
        }.joined()
        let header = """
            <header class="top">
            <p class="brand"><a href="\(Self.root)">Outpost console</a></p>
            \(form(visit, name: Self.signOutForm, action: Self.signOutPath, body: "<span class=\"who\">Signed in as <strong id=\"signed-in-as\">\(HTMLPage.escape(visit.admin.username))</strong></span>", submit: "Sign out", id: "sign-out", secondary: true))
            </header>
            <nav aria-label="Console sections"><ul>\(navigation)</ul></nav>
            """
        let main =
            (notice.map { "<p class=\"notice\" id=\"notice\" role=\"status\">\(HTMLPage.escape($0))</p>" } ?? "")
            + HTMLPage.error(error) + body
        var response = Self.document(title: title, header: header, main: main, status: status, script: script)
        if let cookie = visit.setFormCookie { response.headers.append(HTTPField(name: .setCookie, value: cookie)) }
        if notice != nil { response.headers.append(HTTPField(name: .setCookie, value: Self.clearedNotice)) }
        return response
    }

    /// A form posting to `action`, with the hidden `form` name and a form token bound to this browser.
    ///
    /// - Parameters:
    ///   - body: The fields' HTML (each `<input>` with its `<label for>`).
    ///   - danger: Whether the button does something that cannot be undone (drawn in red).
    ///   - secondary: A quieter button (sign out, cancel).
    func form(
        _ visit: AdminVisit, name: String, action: String, body: String = "", submit: String, id: String? = nil,
        danger: Bool = false, secondary: Bool = false
    ) -> String {
        form(
            binding: visit.formBinding, name: name, action: action, body: body, submit: submit, id: id, danger: danger,
            secondary: secondary)
    }

    /// ``form(_:name:action:body:submit:id:danger:secondary:)`` for a browser's form cookie `binding`.
    func form(
        binding: String, name: String, action: String, body: String = "", submit: String, id: String? = nil,
        danger: Bool = false, secondary: Bool = false
    ) -> String {
        let fields = ["form": name]
        let token = auth.formToken(for: fields, binding: binding)
        let style = danger ? "danger" : secondary ? "secondary" : "primary"
        let formID = id.map { " id=\"\(HTMLPage.escape($0))-form\"" } ?? ""
        let buttonID = id.map { " id=\"\(HTMLPage.escape($0))\"" } ?? ""
        return """
            <form method="post" action="\(HTMLPage.escape(action))"\(formID)>
            \(HTMLPage.hidden(fields.merging(["form_token": token]) { $1 }))
            \(body)
            <button type="submit" class="\(style)"\(buttonID)>\(HTMLPage.escape(submit))</button>
            </form>
            """
    }

    /// 303 to `location` (a console path), with `notice` shown once on the page it leads to.
    func seeOther(_ location: String, notice: String) -> Response {
        let text = String(notice.prefix(Self.maxNoticeLength))
        let value = text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        var response = Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
        response.headers.append(
            HTTPField(
                name: .setCookie, value: "\(Self.noticeCookie)=\(value); Path=\(Self.root); HttpOnly; SameSite=Strict; Max-Age=60"
            ))
        return response
    }

    static let clearedNotice = "\(noticeCookie)=; Path=\(root); HttpOnly; SameSite=Strict; Max-Age=0"

    static func notice(in request: Request) -> String? {
        guard let value = OAuthRoutes.cookie(noticeCookie, in: request), !value.isEmpty,
            value.utf8.count <= maxNoticeLength * 9, let text = value.removingPercentEncoding
        else { return nil }
        return String(text.prefix(maxNoticeLength))
    }

    // MARK: Pages for anyone

    /// A whole page with the console's style and headers. `header` and `main` are HTML.
    static func document(
        title: String, header: String, main: String, status: HTTPResponse.Status = .ok, script: Bool = false
    ) -> Response {
        let text = """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(HTMLPage.escape(title)) · Outpost console</title>
            <style>\(AdminHTML.style)</style>
            \(script ? "<script src=\"\(root)/console.js\" defer></script>" : "")
            </head>
            <body>
            <a class="skip" href="#main">Skip to content</a>
            \(header)
            <main id="main" tabindex="-1">
            <h1>\(HTMLPage.escape(title))</h1>
            \(main)
            </main>
            </body>
            </html>
            """
        var response = OAuthRoutes.html(text, status: status)
        let scripts = script ? " script-src 'self'; connect-src 'self';" : ""
        response.headers[.contentSecurityPolicy] =
            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self';\(scripts) form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        return response
    }

    /// A page without the navigation: sign-in, refusals.
    static func plainPage(title: String, body: String, status: HTTPResponse.Status = .ok) -> Response {
        document(
            title: title, header: "<header class=\"top\"><p class=\"brand\">Outpost console</p></header>", main: body,
            status: status)
    }

    /// 303 to the console's sign-in, coming back to this page afterwards (after a form post, whose
    /// address is no page, to the overview).
    func signInRedirect(_ request: Request) -> Response {
        var target = request.uri.path
        if let query = request.uri.query, !query.isEmpty { target += "?" + query }
        let page = request.method == .get || request.method == .head
        let returnTo = page ? Self.safeReturn(target) ?? Self.root : Self.root
        let location = Self.signInPath + "?" + URLEncodedForm.encode([("return_to", returnTo)])
        return Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
    }

    /// 403 for a signed-in user without the role, with a way to sign out and in as someone else.
    func notAnOperator(_ request: Request, _ user: StoredUser) -> Response {
        let binding = pages.formBinding(request)
        let body = """
            <p class="error" id="error" role="alert">You are signed in as <strong>\(HTMLPage.escape(user.username))</strong>, which has no \(Self.role) role, so the console is closed to you.</p>
            <p>An operator can give the role with <code>outpost users role add \(HTMLPage.escape(user.username)) \(Self.role)</code>.</p>
            \(form(binding: binding.value, name: Self.signOutForm, action: Self.signOutPath, submit: "Sign out and use another account", id: "sign-out"))
            """
        var response = Self.plainPage(title: "Not an operator", body: body, status: .forbidden)
        if let cookie = binding.setCookie { response.headers.append(HTTPField(name: .setCookie, value: cookie)) }
        return response
    }

    func crossSiteRefusal() -> Response {
        Self.plainPage(
            title: "Change refused",
            body:
                "<p class=\"error\" id=\"error\" role=\"alert\">This form was sent from another site, so nothing was changed. Open the console from its own address and try again.</p>",
            status: .forbidden)
    }

    /// `target` when it is a console path this server can send a browser back to: it starts with
    /// `/admin`, has no `//`, `\`, `.` or `..` segment, and only printable ASCII.
    static func safeReturn(_ target: String?) -> String? {
        guard let target, target.utf8.count <= 512,
            target == root || target.hasPrefix(root + "/") || target.hasPrefix(root + "?"),
            !target.contains("//"), !target.contains("\\"),
            target.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
        else { return nil }
        let path = target.prefix { $0 != "?" }
        guard !path.split(separator: "/").contains(where: { $0 == "." || $0 == ".." }) else { return nil }
        return target
    }
}
