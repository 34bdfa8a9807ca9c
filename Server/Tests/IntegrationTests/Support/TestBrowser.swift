import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// A scripted browser for the server's HTML pages: real HTTP, no redirect following (so tests read
/// `Location`), a cookie jar (the sign-in session and the form cookie), and extra headers such as
/// `Origin` and `Sec-Fetch-Site` when a test plays a browser on another site. Two instances are two
/// browsers: they share no cookies.
final class TestBrowser: Sendable {
    struct Page: Sendable {
        var status: Int
        var headers: [(String, String)]
        var body: String

        func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }

        /// The body as JSON (token endpoint replies).
        var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:]
        }

        /// The hidden fields of the page's form.
        var hiddenFields: [String: String] {
            var fields: [String: String] = [:]
            let pattern = #"<input type="hidden" name="([^"]*)" value="([^"]*)">"#
            guard let regex = try? NSRegularExpression(pattern: pattern) else { return fields }
            let range = NSRange(body.startIndex..., in: body)
            for match in regex.matches(in: body, range: range) {
                guard let name = Range(match.range(at: 1), in: body), let value = Range(match.range(at: 2), in: body) else {
                    continue
                }
                fields[Self.unescape(String(body[name]))] = Self.unescape(String(body[value]))
            }
            return fields
        }

        static func unescape(_ text: String) -> String {
            text.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
                .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
                .replacingOccurrences(of: "&amp;", with: "&")
        }
    }

    private let client: HTTPClient
    private let cookies = CookieJar()

    init() {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    func shutdown() async throws { try await client.shutdown() }

    func get(_ url: String, authorization: String? = nil, headers: [String: String] = [:]) async throws -> Page {
        try await send(url, method: .GET, body: nil, authorization: authorization, headers: headers)
    }

    func delete(_ url: String, authorization: String? = nil) async throws -> Page {
        try await send(url, method: .DELETE, body: nil, authorization: authorization)
    }

    /// The value of a cookie in the jar.
    func cookie(_ name: String) -> String? { cookies.value(name) }

    func postForm(
        _ url: String, _ fields: [String: String], authorization: String? = nil, headers: [String: String] = [:]
    ) async throws -> Page {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let body = fields.map {
            "\($0.key.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")=\($0.value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")"
        }
        .joined(separator: "&")
        return try await send(url, method: .POST, body: body, authorization: authorization, headers: headers)
    }

    /// POSTs `object` as JSON.
    func postJSON(_ url: String, _ object: [String: String], authorization: String? = nil) async throws -> Page {
        let body = String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
        return try await send(url, method: .POST, body: body, authorization: authorization, contentType: "application/json")
    }

    /// PATCHes `json` as it is.
    func patchJSON(_ url: String, _ json: String, authorization: String? = nil) async throws -> Page {
        try await send(url, method: .PATCH, body: json, authorization: authorization, contentType: "application/json")
    }

    private func send(
        _ url: String, method: HTTPMethod, body: String?, authorization: String? = nil, headers extra: [String: String] = [:],
        contentType: String = "application/x-www-form-urlencoded"
    ) async throws -> Page {
        var request = HTTPClientRequest(url: url)
        if let authorization { request.headers.add(name: "Authorization", value: authorization) }
        for (name, value) in extra { request.headers.add(name: name, value: value) }
        request.method = method
        if let cookie = cookies.header { request.headers.add(name: "Cookie", value: cookie) }
        if let body {
            request.headers.add(name: "Content-Type", value: contentType)
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await client.execute(request, timeout: .seconds(10))
        let buffer = try await response.body.collect(upTo: 1 << 20)
        let headers = response.headers.map { ($0.name, $0.value) }
        for (name, value) in headers where name.lowercased() == "set-cookie" { cookies.store(value) }
        return Page(status: Int(response.status.code), headers: headers, body: String(buffer: buffer))
    }
}

private final class CookieJar: Sendable {
    private let values = NSLockedDictionary()

    var header: String? {
        let all = values.all
        return all.isEmpty ? nil : all.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
    }

    func value(_ name: String) -> String? { values.all[name] }

    func store(_ setCookie: String) {
        guard let pair = setCookie.split(separator: ";").first, let equals = pair.firstIndex(of: "=") else { return }
        let name = String(pair[..<equals])
        let value = String(pair[pair.index(after: equals)...])
        values.set(name, value.isEmpty ? nil : value)
    }
}

private final class NSLockedDictionary: @unchecked Sendable {
    // A lock guards the dictionary; the cookie jar is shared by concurrent requests of one test.
    private let lock = NSLock()
    private var storage: [String: String] = [:]

    var all: [String: String] { lock.withLock { storage } }

    func set(_ key: String, _ value: String?) { lock.withLock { storage[key] = value } }
}
