import Foundation
import HTTPTypes
import Hummingbird

/// `GET /admin/records/{type}/list?filter=…&after=…`: a type's records, every one of them (the
/// admin is not held by the read rule), in pages bounded as the list route's are.
extension AdminConsole {
    /// The longest filter the page takes (an expression's longest source).
    static let maxFilterLength = 4096
    /// The most characters of a record's fields the list shows; the record's page shows them all.
    static let previewLength = 120

    func recordsListPage(_ visit: AdminVisit) async throws -> Response {
        let type = try RecordRoutes.type(visit.context)
        let query = try visit.request.queryFields()
        let filter = query["filter"].flatMap { $0.allSatisfy(\.isWhitespace) ? nil : $0 }
        let after = query["after"].flatMap { $0.isEmpty ? nil : $0 }
        let path = Self.typePath(type) + "/list"
        var body = filterForm(path: path, filter: filter)
        var status = HTTPResponse.Status.ok
        var error: String?
        do {
            if let filter, filter.utf8.count > Self.maxFilterLength {
                throw ServerError.badRequest("invalid_filter", "A filter is at most \(Self.maxFilterLength) bytes; shorten it")
            }
            let found = try await recordsPage(type: type, filter: filter, after: after, address: visit.context.clientAddress)
            body += recordsTable(type: type, found.records)
            body += AdminHTML.pager(next: found.next.map { AdminHTML.query(path, [("filter", filter), ("after", $0)]) })
            if after != nil {
                body +=
                    "<p>" + AdminHTML.link(AdminHTML.query(path, [("filter", filter)]), "First page", id: "first-page") + "</p>"
            }
        } catch let failure as ServerError where [.badRequest, .serviceUnavailable].contains(failure.status) {
            status = failure.status
            error = failure.message
        }
        body += "<p>" + AdminHTML.link(Self.typePath(type), "Rules of \(type)", id: "type-rules") + "</p>"
        return page(visit, title: "Records of \(type)", section: .records, body: body, status: status, error: error)
    }

    /// A `GET` form: it changes nothing, and the page's address says what it shows.
    func filterForm(path: String, filter: String?) -> String {
        let field = AdminHTML.field(
            id: "filter", label: "Filter", value: filter ?? "", type: "search", maxLength: Self.maxFilterLength,
            hint: "As a list request's filter, e.g. record.status == \"draft\" && record.owner != null. Empty: every record.")
        return """
            <form method="get" action="\(HTMLPage.escape(path))" role="search">
            \(field)
            <button type="submit" class="primary" id="show">Show</button>
            </form>
            """
    }

    func recordsTable(type: String, _ records: [StoredRecord]) -> String {
        let rows = records.map { record -> [String] in
            var preview = record.body
            if preview.count > Self.previewLength { preview = String(preview.prefix(Self.previewLength)) + "…" }
            return [
                AdminHTML.link(Self.recordPath(type, record.id), record.id), HTMLPage.escape(record.owner ?? "none"),
                record.isPrivate ? "private" : "public", "\(record.version)", AdminHTML.time(record.updatedAt),
                AdminHTML.code(preview),
            ]
        }
        return AdminHTML.table(
            id: "records", caption: "Records of \(type), oldest first",
            headers: ["Id", "Owner", "Visibility", "Version", "Updated", "Fields"], rows: rows, empty: "No records match.")
    }
}
