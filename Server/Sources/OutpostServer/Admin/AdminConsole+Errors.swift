import Foundation
import Hummingbird

/// `/admin/errors`: the last failed requests of this instance (``RecentErrors``): kept in memory,
/// so each instance shows its own and a restart empties the list.
extension AdminConsole {
    static let errorsPath = "\(root)/errors"

    func addErrors(to router: Router<OutpostRequestContext>) {
        get(router, RouterPath(Self.errorsPath)) { visit in errorsPage(visit) }
    }

    func errorsPage(_ visit: AdminVisit) -> Response {
        let entries = recentErrors.entries
        let offset = Self.offset(visit.request, count: entries.count)
        let rows = entries.dropFirst(offset).prefix(Self.pageSize).map { entry in
            [
                AdminHTML.time(entry.time), HTMLPage.escape(entry.method), AdminHTML.code(entry.route), "\(entry.status)",
                entry.code.map(AdminHTML.code) ?? "", AdminHTML.code(entry.requestID),
            ]
        }
        let next = offset + Self.pageSize < entries.count ? "\(Self.errorsPath)?offset=\(offset + Self.pageSize)" : nil
        let body = """
            <p id="scope">The last \(recentErrors.capacity) failed requests <strong>this instance</strong> answered, newest first: every 5xx, and the refusals for the server's own limits (408 slow request, 413 too large, 429 rate limited, 431 headers too large). Other instances keep their own; a restart empties the list. Routes are shown as patterns, never with the path's values or the query; the request id finds the request in this instance's log.</p>
            \(AdminHTML.table(
                id: "errors", caption: "Failed requests (\(entries.count))",
                headers: ["Time", "Method", "Route", "Status", "Error code", "Request id"], rows: Array(rows),
                empty: "No failed request since this instance started."))
            \(AdminHTML.pager(next: next, label: "Older errors"))
            """
        return page(visit, title: "Recent errors", section: .errors, body: body)
    }
}
