import Foundation
import Hummingbird
@_spi(OutpostInternal) import OutpostCore

/// `/admin`: what the server runs on, and where each part of the console is.
extension AdminConsole {
    func addOverview(to router: Router<OutpostRequestContext>) {
        get(router, RouterPath(Self.root)) { visit in try await overview(visit) }
    }

    func overview(_ visit: AdminVisit) async throws -> Response {
        let database = storage is PostgresStorage ? "PostgreSQL" : storage is SQLiteStorage ? "SQLite" : "custom storage"
        let facts = AdminHTML.definitions(
            id: "server",
            [
                ("Database", HTMLPage.escape(database)),
                ("Schema version", "\(try await storage.schemaVersion())"),
                ("Issuer", AdminHTML.code(auth.issuer)),
                ("OAuth clients", "\(try await storage.clients().count)"),
            ])
        let parts = Self.sections.filter { $0 != .overview }.map { section in
            "<li>\(AdminHTML.link(section.path, section.title, id: "go-\(section.rawValue)")): \(HTMLPage.escape(section.summary))</li>"
        }.joined()
        let body = """
            <h2 id="server-heading">This server</h2>
            \(facts)
            <h2 id="parts-heading">Parts of the console</h2>
            <ul id="parts">\(parts)</ul>
            """
        return page(visit, title: "Overview", section: .overview, body: body)
    }
}

extension AdminConsole.Section {
    /// One sentence on what the section's pages do.
    var summary: String {
        switch self {
        case .overview: "This page."
        case .users: "Find users; disable, enable or sign them out everywhere; their roles, quotas and usage."
        case .clients: "Register OAuth clients, rotate a client's secret, remove a client."
        case .keys: "The keys that sign ID tokens, and rotating them."
        case .records: "Record types and their access rules (view, edit, test); browse, edit and delete records."
        case .changes: "Record changes as they happen."
        case .errors: "The server's latest failed requests."
        case .audit: "Sign-ins and administrative changes, newest first."
        }
    }
}
