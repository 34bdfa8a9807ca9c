import Foundation
import HTTPTypes
import Hummingbird
@_spi(OutpostInternal) import OutpostCore

/// `/admin/changes`: the latest record changes from the change feed, newest first, of one type or
/// all. The page works without script (its "Show newer" link reloads it); with the console's
/// script it polls `/admin/changes/feed` (admin only, by the session cookie) and adds new changes
/// at the top as they come. Changes show the record's type, id, owner and version, never its fields.
extension AdminConsole {
    static let changesPath = "\(root)/changes"
    static let changesFeedPath = "\(root)/changes/feed"
    /// The longest record type the filter takes, as `/records/{type}` does.
    static let maxTypeLength = 64

    func addChanges(to router: Router<OutpostRequestContext>) {
        get(router, RouterPath(Self.changesPath)) { visit in try await changesPage(visit) }
        get(router, RouterPath(Self.changesFeedPath)) { visit in try await changesFeed(visit) }
        router.get(RouterPath("\(Self.root)/console.js")) { _, _ in Self.script }
    }

    /// The `type` filter of `request`: `nil` for all types; a refusal message for a type that cannot be one.
    static func typeFilter(_ request: Request) -> Result<String?, TypeFilterRefusal> {
        let text = ((try? request.queryFields())?["type"] ?? "").trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty else { return .success(nil) }
        guard text.utf8.count <= maxTypeLength,
            text.utf8.allSatisfy({ byte in
                (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                    || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                    || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "_")
                    || byte == UInt8(ascii: "-")
            })
        else { return .failure(TypeFilterRefusal()) }
        return .success(text)
    }

    struct TypeFilterRefusal: Error {
        let message = "A record type is 1–64 letters, digits, '_' or '-', e.g. notes."
    }

    func changesPage(_ visit: AdminVisit) async throws -> Response {
        let type: String?
        var error: String?
        switch Self.typeFilter(visit.request) {
        case .success(let found): type = found
        case .failure(let refusal):
            type = nil
            error = refusal.message
        }
        let filter = """
            <form method="get" action="\(Self.changesPath)" id="filter-form" class="inline">
            <div>\(AdminHTML.field(id: "type", label: "Record type", value: type ?? "", type: "search", maxLength: Self.maxTypeLength, hint: "Empty for every type."))</div>
            <button type="submit" class="secondary" id="filter">Show</button>
            </form>
            """
        guard error == nil else {
            return page(visit, title: "Live changes", section: .changes, body: filter, status: .badRequest, error: error)
        }
        guard let feed = storage as? any ChangeFeedStorage else {
            return page(
                visit, title: "Live changes", section: .changes,
                body: "<p>This storage keeps no change feed; use SQLite or PostgreSQL.</p>")
        }
        let changes = try await feed.latestChanges(type: type, before: .max, limit: Self.pageSize)
        var after = changes.first?.position ?? 0
        if changes.isEmpty { after = try await feed.changeBounds().latest }
        let names = try await usernames(of: Set(changes.compactMap(\.record.owner)))
        let rows = changes.map { change in
            let cells = Self.changeCells(change, ownerName: change.record.owner.flatMap { names[$0] })
            return "<tr>" + cells.map { "<td>\($0)</td>" }.joined() + "</tr>"
        }.joined(separator: "\n")
        let here = AdminHTML.query(Self.changesPath, [("type", type)])
        let feedURL = AdminHTML.query(Self.changesFeedPath, [("type", type)])
        let headers = ["Position", "Time", "Change", "Type", "Record id", "Owner", "Version"]
            .map { "<th scope=\"col\">\($0)</th>" }.joined()
        let body = """
            \(filter)
            <p id="live-status" class="muted" aria-live="polite"></p>
            <div class="table" role="region" aria-labelledby="changes-caption" tabindex="0">
            <table id="changes" data-feed="\(HTMLPage.escape(feedURL))" data-after="\(after)">
            <caption id="changes-caption">The latest \(Self.pageSize) changes\(type.map { " of \(HTMLPage.escape($0))" } ?? ""), newest first</caption>
            <thead><tr>\(headers)</tr></thead>
            <tbody id="changes-rows">
            \(rows)
            </tbody>
            </table>
            </div>
            \(changes.isEmpty ? "<p id=\"changes-empty\" class=\"muted\">No change yet.</p>" : "")
            <p class="pager"><a id="show-newer" href="\(HTMLPage.escape(here))">Show newer</a></p>
            """
        return page(visit, title: "Live changes", section: .changes, body: body, script: true)
    }

    /// A change's cells as HTML, in the table's column order.
    static func changeCells(_ change: RecordChange, ownerName: String?) -> [String] {
        let owner: String
        if let id = change.record.owner {
            owner = AdminHTML.link("\(root)/users/\(AdminHTML.pathComponent(id))", ownerName ?? id)
        } else {
            owner = "<span class=\"muted\">none</span>"
        }
        return [
            "\(change.position)", AdminHTML.time(change.at), HTMLPage.escape(change.kind.rawValue),
            HTMLPage.escape(change.record.type), AdminHTML.code(change.record.id), owner, "\(change.record.version)",
        ]
    }

    /// `GET /admin/changes/feed?after=N[&type=T]`: up to ``pageSize`` changes after position `N`,
    /// oldest first, as JSON `{"after": the position to ask from next, "changes": [{"position",
    /// "time", "change", "type", "id", "owner", "owner_name", "version"}]}`.
    func changesFeed(_ visit: AdminVisit) async throws -> Response {
        let headers: HTTPFields = [.cacheControl: "no-store", .xContentTypeOptions: "nosniff"]
        guard case .success(let type) = Self.typeFilter(visit.request),
            let text = (try? visit.request.queryFields())?["after"], text.utf8.count <= 19, let after = Int64(text),
            after >= 0
        else {
            return .json(
                ["error": ["code": "invalid_query", "message": "Give after=POSITION (a number) and, if you like, type=TYPE"]],
                status: .badRequest, headers: headers)
        }
        guard let feed = storage as? any ChangeFeedStorage else {
            return .json(["after": .int(Int(after)), "changes": []], headers: headers)
        }
        let changes = try await feed.changes(type: type, after: after, limit: Self.pageSize)
        let names = try await usernames(of: Set(changes.compactMap(\.record.owner)))
        let items: [JSONValue] = changes.map { change in
            let owner = change.record.owner
            return [
                "position": .int(Int(change.position)),
                "time": .string(Date(timeIntervalSince1970: Double(change.at) / 1000).formatted(.iso8601)),
                "change": .string(change.kind.rawValue), "type": .string(change.record.type), "id": .string(change.record.id),
                "owner": owner.map(JSONValue.string) ?? .null,
                "owner_name": owner.flatMap { names[$0] }.map(JSONValue.string) ?? .null,
                "version": .int(Int(change.record.version)),
            ]
        }
        let next = changes.last?.position ?? after
        return .json(["after": .int(Int(next)), "changes": .array(items)], headers: headers)
    }
}
