import AsyncHTTPClient
import Foundation
import HTTPTypes
import Logging
import Outpost
import OutpostServer
import Synchronization

/// The operators' console at `/admin`: an operator account gets the `admin` role (as
/// `outpost users role add operator admin` does), signs in on the console's own page and reads its
/// pages, as a browser would, keeping the session cookie.
enum ConsoleTour {
    /// Returns the operator's password (for `outpost demo --keep-serving`).
    static func run(baseURL: URL, databasePath: String, log: TourLog) async throws -> String {
        log.section("The operators' console")
        var logger = Logger(label: "demo.console")
        logger.logLevel = .critical
        let password = "operator-" + UUID().uuidString.prefix(8).lowercased()
        let storage = try await SQLiteStorage.open(path: databasePath, logger: logger)
        do {
            let user = try await storage.addUser(username: "operator", password: password, cost: 8)
            try await storage.addRole("admin", userID: user.id)
            try await storage.close()
        } catch {
            try? await storage.close()
            throw error
        }
        log.step("outpost users add operator; outpost users role add operator admin")
        var configuration = AsyncHTTPClientTransport.defaultConfiguration
        configuration.redirectConfiguration = .disallow
        let client = OutpostClient(
            configuration: .init(baseURL: baseURL), ownedTransport: AsyncHTTPClientTransport(configuration: configuration))
        do {
            try await tour(ConsoleVisitor(client: client, base: baseURL), password: password, log: log)
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
        return password
    }

    private static func tour(_ visitor: ConsoleVisitor, password: String, log: TourLog) async throws {
        let before = try await visitor.get("/admin")
        log.step("GET /admin without a session → \(before.status.code), to \(before.location ?? "?")")
        let signIn = try await visitor.submit(
            page: "/admin/sign-in", action: "/admin/sign-in", fields: ["username": "operator", "password": password])
        log.step("the console's sign-in as operator → \(signIn.status.code), to \(signIn.location ?? "?")")
        let overview = try await visitor.get("/admin")
        log.detail("GET /admin → \(overview.status.code) \"\(overview.heading)\"")
        for path in overview.hrefs(in: "parts") {
            let page = try await visitor.get(path)
            let tables = page.tables.map { "\($0.caption): \($0.rows) \($0.rows == 1 ? "row" : "rows")" }.joined(separator: "; ")
            log.detail("GET \(path) → \(page.status.code) \"\(page.heading)\"\(tables.isEmpty ? "" : " — " + tables)")
        }
        log.detail("`outpost demo --keep-serving` keeps this server up to open the console in a browser")
    }
}

/// A browser for the console: real HTTP, redirects read rather than followed, cookies kept.
final class ConsoleVisitor: Sendable {
    struct Page: Sendable {
        var status: HTTPResponse.Status
        var location: String?
        var body: String

        /// The text of the page's `<h1>`.
        var heading: String { between("<h1>", "</h1>") ?? "" }

        /// The targets of the links in the list with id `id`.
        func hrefs(in id: String) -> [String] {
            guard let start = body.range(of: "id=\"\(id)\""), let end = body[start.upperBound...].range(of: "</ul>") else {
                return []
            }
            return body[start.upperBound..<end.lowerBound].components(separatedBy: "href=\"").dropFirst().compactMap { part in
                part.firstIndex(of: "\"").map { DemoBrowser.unescape(String(part[..<$0])) }
            }
        }

        /// Each table's caption and how many rows its body has.
        var tables: [(caption: String, rows: Int)] {
            body.components(separatedBy: "<table").dropFirst().map { table in
                let caption = table.range(of: "<caption").flatMap { start in
                    table[start.upperBound...].range(of: ">").flatMap { open in
                        table[open.upperBound...].range(of: "</caption>").map {
                            DemoBrowser.unescape(String(table[open.upperBound..<$0.lowerBound]))
                        }
                    }
                }
                let rows = table.components(separatedBy: "</table>")[0].components(separatedBy: "<tr").count - 2
                return (caption ?? "table", max(0, rows))
            }
        }

        func between(_ open: String, _ close: String) -> String? {
            guard let start = body.range(of: open), let end = body[start.upperBound...].range(of: close) else { return nil }
            return DemoBrowser.unescape(String(body[start.upperBound..<end.lowerBound]))
        }
    }

    let client: OutpostClient
    let base: URL
    private let cookies = Mutex<[String: String]>([:])

    init(client: OutpostClient, base: URL) {
        self.client = client
        self.base = base
    }

    func get(_ path: String) async throws -> Page {
        try await send(HTTPRequest(method: .get, url: URL(string: path, relativeTo: base)!.absoluteURL), body: nil)
    }

    /// Reads the form on `page`, adds `fields` to its hidden ones and posts it to `action`, as a
    /// browser on the console's own origin does.
    func submit(page: String, action: String, fields: [String: String]) async throws -> Page {
        let form = try await get(page)
        var post = HTTPRequest(method: .post, url: URL(string: action, relativeTo: base)!.absoluteURL)
        post.headerFields[.contentType] = "application/x-www-form-urlencoded"
        post.headerFields[.origin] =
            base.absoluteString.hasSuffix("/") ? String(base.absoluteString.dropLast()) : base.absoluteString
        post.headerFields[HTTPField.Name("Sec-Fetch-Site")!] = "same-origin"
        let all = DemoBrowser.hiddenFields(form.body).merging(fields) { $1 }
        return try await send(post, body: Data(DemoBrowser.encode(all).utf8))
    }

    private func send(_ request: HTTPRequest, body: Data?) async throws -> Page {
        var request = request
        let jar = cookies.withLock { $0 }
        if !jar.isEmpty {
            request.headerFields[.cookie] = jar.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
        }
        let (response, data) = try await client.transport.send(
            request, body: body, options: TransportOptions(timeout: .seconds(10), maxResponseBytes: 1 << 20))
        for value in response.headerFields[values: .setCookie] {
            guard let pair = value.split(separator: ";").first, let equals = pair.firstIndex(of: "=") else { continue }
            let name = String(pair[..<equals])
            let content = String(pair[pair.index(after: equals)...])
            cookies.withLock { $0[name] = content.isEmpty ? nil : content }
        }
        return Page(
            status: response.status, location: response.headerFields[.location], body: String(decoding: data, as: UTF8.self))
    }
}
