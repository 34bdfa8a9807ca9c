import Foundation
import HTTPTypes
import Outpost

/// Plays the person at the browser in the demo: reads the sign-in page, fills in the username and
/// password, allows, and follows the redirect back to the loopback listener. Real HTTP throughout,
/// with what a browser sends on a same-origin form post: the page's cookies, `Origin` and
/// `Sec-Fetch-Site`.
struct DemoBrowser: BrowserOpening {
    let client: OutpostClient
    let username: String
    let password: String

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    func open(_ url: URL) async throws {
        let (answer, _) = try await submit(
            page: url, action: "/oauth/authorize",
            fields: ["username": username, "password": password, "decision": "allow"])
        // The transport may have followed the redirect itself; if not, follow it here.
        if answer.status.kind == .redirection, let location = answer.headerFields[.location], let target = URL(string: location) {
            _ = try await send(HTTPRequest(method: .get, url: target), body: nil)
        }
    }

    /// Reads the form page at `page`, fills in `fields` beside its hidden ones, and posts it to
    /// `action` (a path on the page's server) as a browser would from that page.
    func submit(page url: URL, action path: String, fields filled: [String: String]) async throws -> (HTTPResponse, Data) {
        let (page, body) = try await send(HTTPRequest(method: .get, url: url), body: nil)
        guard page.status == .ok else { throw Failure(description: "\(url.path) answered \(page.status)") }
        let fields = Self.hiddenFields(String(decoding: body, as: UTF8.self)).merging(filled) { $1 }
        guard let action = URL(string: path, relativeTo: url)?.absoluteURL else {
            throw Failure(description: "no form address")
        }
        var post = HTTPRequest(method: .post, url: action)
        post.headerFields[.contentType] = "application/x-www-form-urlencoded"
        let cookies = page.headerFields[values: .setCookie].compactMap { $0.split(separator: ";").first.map(String.init) }
        if !cookies.isEmpty { post.headerFields[.cookie] = cookies.joined(separator: "; ") }
        if let scheme = url.scheme, let host = url.host {
            post.headerFields[.origin] = "\(scheme)://\(host)\(url.port.map { ":\($0)" } ?? "")"
        }
        post.headerFields[HTTPField.Name("Sec-Fetch-Site")!] = "same-origin"
        return try await send(post, body: Data(Self.encode(fields).utf8))
    }

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        try await client.transport.send(
            request, body: body, options: TransportOptions(timeout: .seconds(10), maxResponseBytes: 1 << 20))
    }

    /// `<input type="hidden" name="…" value="…">`, as the server's pages write them.
    static func hiddenFields(_ html: String) -> [String: String] {
        var fields: [String: String] = [:]
        guard let regex = try? NSRegularExpression(pattern: #"<input type="hidden" name="([^"]*)" value="([^"]*)">"#) else {
            return fields
        }
        for match in regex.matches(in: html, range: NSRange(html.startIndex..., in: html)) {
            guard let name = Range(match.range(at: 1), in: html), let value = Range(match.range(at: 2), in: html) else {
                continue
            }
            fields[unescape(String(html[name]))] = unescape(String(html[value]))
        }
        return fields
    }

    static func unescape(_ text: String) -> String {
        text.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    static func encode(_ fields: [String: String]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return fields.sorted { $0.key < $1.key }.map { name, value in
            (name.addingPercentEncoding(withAllowedCharacters: allowed) ?? name) + "="
                + (value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value)
        }.joined(separator: "&")
    }
}
