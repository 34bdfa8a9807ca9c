import Foundation
@_spi(OutpostInternal) import OutpostCore

/// The console's building blocks: its style sheet and the HTML of tables, fields, lists and pagers.
///
/// Every function escapes the text it is given, except parameters named `html`, which must already
/// be HTML (built by these functions, or escaped with `HTMLPage.escape`).
enum AdminHTML {
    /// One style sheet for every width: the navigation wraps, a wide table scrolls inside its own
    /// focusable region (never the page), and text keeps WCAG 2.2 AA contrast (4.5:1 and more)
    /// against its background. The focus ring is a dark outline inside a yellow one, visible on the
    /// white page and the dark header alike.
    static let style = """
        *, *::before, *::after { box-sizing: border-box; }
        body { margin: 0; font: 16px/1.5 system-ui, sans-serif; color: #1b1b1b; background: #fff; }
        a { color: #0b57d0; }
        a:visited { color: #5b2b9c; }
        .skip { position: absolute; left: .5rem; top: -3rem; background: #fff; color: #1b1b1b; padding: .5rem 1rem; z-index: 2; }
        .skip:focus { top: .5rem; }
        :focus-visible { outline: 3px solid #1b1b1b; outline-offset: 1px; box-shadow: 0 0 0 6px #ffdd00; }
        .top { display: flex; flex-wrap: wrap; align-items: center; justify-content: space-between; gap: .5rem 1rem; padding: .5rem 1rem; background: #16324f; color: #fff; }
        .top a, .top a:visited { color: #fff; }
        .top .brand { margin: 0; font-weight: 700; }
        .top form { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem; margin: 0; }
        nav ul { display: flex; flex-wrap: wrap; gap: .25rem 1rem; list-style: none; margin: 0; padding: .5rem 1rem; border-bottom: 1px solid #8a8a8a; }
        nav a { display: inline-block; padding: .25rem 0; }
        nav a[aria-current=page] { font-weight: 700; color: #1b1b1b; text-decoration-thickness: 3px; }
        main { padding: 0 1rem 2rem; max-width: 80rem; }
        main:focus { outline: none; }
        h1 { font-size: 1.6rem; margin: 1rem 0; }
        h2 { font-size: 1.25rem; margin: 1.5rem 0 .5rem; }
        label { display: block; margin-top: .75rem; font-weight: 600; }
        .hint { margin: .1rem 0 .25rem; color: #4a4a4a; font-size: .9rem; }
        input[type=text], input[type=search], input[type=password], input[type=number], select, textarea {
            display: block; width: 100%; max-width: 36rem; padding: .45rem; font: inherit; color: #1b1b1b; background: #fff; border: 1px solid #6b6b6b; border-radius: 3px; }
        textarea { font-family: ui-monospace, monospace; font-size: .9rem; min-height: 12rem; max-width: 60rem; }
        input[type=checkbox] { width: 1.25rem; height: 1.25rem; vertical-align: middle; }
        form { margin: .75rem 0; }
        button { min-height: 2.5rem; margin-top: .75rem; padding: .45rem 1rem; font: inherit; border-radius: 3px; border: 2px solid transparent; cursor: pointer; }
        button.primary { background: #0b57d0; color: #fff; }
        button.danger { background: #a50e0e; color: #fff; }
        button.secondary { background: #fff; color: #1b1b1b; border-color: #1b1b1b; }
        .top button.secondary { margin-top: 0; min-height: 2rem; }
        .inline { display: flex; flex-wrap: wrap; align-items: flex-end; gap: .5rem 1rem; }
        .inline label { margin-top: 0; }
        .actions { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: flex-start; }
        .actions form { margin: 0; }
        .notice { border-left: 4px solid #1e6b30; padding: .5rem .75rem; background: #eef7f0; color: #1b1b1b; }
        .error { border-left: 4px solid #a50e0e; padding: .5rem .75rem; background: #fbeeee; color: #1b1b1b; }
        .table { overflow-x: auto; max-width: 100%; margin: .5rem 0 1rem; }
        table { border-collapse: collapse; min-width: 100%; }
        caption { text-align: left; font-weight: 600; padding: .25rem 0; }
        th, td { text-align: left; vertical-align: top; padding: .4rem .6rem; border-bottom: 1px solid #b0b0b0; }
        th { background: #f1f3f6; }
        td code, dd code, pre { overflow-wrap: anywhere; }
        pre { background: #f6f6f6; padding: .75rem; overflow-x: auto; max-width: 60rem; white-space: pre-wrap; }
        dl { display: grid; grid-template-columns: minmax(8rem, max-content) 1fr; gap: .25rem 1rem; margin: .5rem 0 1rem; }
        dt { font-weight: 600; }
        dd { margin: 0; overflow-wrap: anywhere; }
        .muted { color: #4a4a4a; }
        .pager { display: flex; gap: 1rem; margin: 1rem 0; }
        @media (max-width: 40rem) {
            dl { grid-template-columns: 1fr; }
            dd { margin-bottom: .5rem; }
            h1 { font-size: 1.35rem; }
        }
        """

    /// A table named by its caption, inside a region that scrolls by itself when the table is wider
    /// than the page and that the keyboard can reach (so it can be scrolled without a mouse).
    ///
    /// - Parameter rows: Each row's cells as HTML.
    static func table(id: String, caption: String, headers: [String], rows: [[String]], empty: String) -> String {
        guard !rows.isEmpty else { return "<p id=\"\(HTMLPage.escape(id))-empty\" class=\"muted\">\(HTMLPage.escape(empty))</p>" }
        let head = headers.map { "<th scope=\"col\">\(HTMLPage.escape($0))</th>" }.joined()
        let body = rows.map { "<tr>" + $0.map { "<td>\($0)</td>" }.joined() + "</tr>" }.joined(separator: "\n")
        let captionID = HTMLPage.escape(id) + "-caption"
        return """
            <div class="table" role="region" aria-labelledby="\(captionID)" tabindex="0">
            <table id="\(HTMLPage.escape(id))">
            <caption id="\(captionID)">\(HTMLPage.escape(caption))</caption>
            <thead><tr>\(head)</tr></thead>
            <tbody>
            \(body)
            </tbody>
            </table>
            </div>
            """
    }

    /// A definition list of `(term, html)` pairs.
    static func definitions(id: String, _ items: [(term: String, html: String)]) -> String {
        let content = items.map { "<dt>\(HTMLPage.escape($0.term))</dt><dd>\($0.html)</dd>" }.joined()
        return "<dl id=\"\(HTMLPage.escape(id))\">\(content)</dl>"
    }

    /// A labelled text field (`type` text, search, password or number).
    static func field(
        id: String, label: String, name: String? = nil, value: String = "", type: String = "text", maxLength: Int,
        required: Bool = false, hint: String? = nil
    ) -> String {
        let hintID = "\(id)-hint"
        let hintHTML = hint.map { "<p class=\"hint\" id=\"\(HTMLPage.escape(hintID))\">\(HTMLPage.escape($0))</p>" } ?? ""
        let described = hint == nil ? "" : " aria-describedby=\"\(HTMLPage.escape(hintID))\""
        return """
            <label for="\(HTMLPage.escape(id))">\(HTMLPage.escape(label))</label>\(hintHTML)
            <input type="\(HTMLPage.escape(type))" id="\(HTMLPage.escape(id))" name="\(HTMLPage.escape(name ?? id))" value="\(HTMLPage.escape(value))" maxlength="\(maxLength)" autocomplete="off" spellcheck="false"\(required ? " required" : "")\(described)>
            """
    }

    /// A labelled multi-line field (JSON, rules).
    static func textArea(id: String, label: String, name: String? = nil, value: String, maxLength: Int, hint: String? = nil)
        -> String
    {
        let hintID = "\(id)-hint"
        let hintHTML = hint.map { "<p class=\"hint\" id=\"\(HTMLPage.escape(hintID))\">\(HTMLPage.escape($0))</p>" } ?? ""
        let described = hint == nil ? "" : " aria-describedby=\"\(HTMLPage.escape(hintID))\""
        return """
            <label for="\(HTMLPage.escape(id))">\(HTMLPage.escape(label))</label>\(hintHTML)
            <textarea id="\(HTMLPage.escape(id))" name="\(HTMLPage.escape(name ?? id))" maxlength="\(maxLength)" spellcheck="false"\(described)>\(HTMLPage.escape(value))</textarea>
            """
    }

    /// A link to the next page of a list, when there is one.
    static func pager(next: String?, label: String = "Next page") -> String {
        guard let next else { return "" }
        return
            "<p class=\"pager\"><a id=\"next-page\" href=\"\(HTMLPage.escape(next))\" rel=\"next\">\(HTMLPage.escape(label))</a></p>"
    }

    /// A link to a console path. `path` is a path built by the console; `text` is escaped.
    static func link(_ path: String, _ text: String, id: String? = nil) -> String {
        let idAttribute = id.map { " id=\"\(HTMLPage.escape($0))\"" } ?? ""
        return "<a href=\"\(HTMLPage.escape(path))\"\(idAttribute)>\(HTMLPage.escape(text))</a>"
    }

    /// `text` as one path segment: everything but RFC 3986's unreserved characters percent-encoded.
    static func pathComponent(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    /// `path?name=value&…`, the values form-encoded; pairs with a `nil` value are left out.
    static func query(_ path: String, _ pairs: [(String, String?)]) -> String {
        let present = pairs.compactMap { pair in pair.1.map { (pair.0, $0) } }
        return present.isEmpty ? path : path + "?" + URLEncodedForm.encode(present)
    }

    static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// A time (milliseconds since 1970) in a `<time>` element, as UTC.
    static func time(_ milliseconds: Int64) -> String {
        let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        let machine = date.formatted(.iso8601)
        let shown = machine.replacingOccurrences(of: "T", with: " ").replacingOccurrences(of: "Z", with: " UTC")
        return "<time datetime=\"\(machine)\">\(shown)</time>"
    }

    /// Text in code font.
    static func code(_ text: String) -> String { "<code>\(HTMLPage.escape(text))</code>" }
}
