import Foundation
import HTTPTypes
import HTTPTypesFoundation
import OutpostTesting

@_spi(OutpostInternal) @testable import OutpostCore

/// An in-memory backend that speaks the Outpost records protocol (or, with `restFramework`, the
/// Django REST framework shape), for unit tests of entities and pagination.
final class FakeRecordsServer: @unchecked Sendable {  // `types` and `counter` are guarded by `lock`
    enum Shape { case outpost, restFramework }

    struct Record {
        var id: String
        var fields: [String: JSONValue]
        var version: Int
        var created: Int
    }

    let shape: Shape
    let baseURL = "http://scripted.test"
    private let lock = NSLock()
    private var types: [String: [Record]] = [:]
    private var counter = 0

    init(shape: Shape = .outpost) {
        self.shape = shape
    }

    /// Stores records directly, as if created in this order.
    func seed(_ type: String, _ records: [[String: JSONValue]]) {
        lock.withLock {
            for fields in records {
                counter += 1
                types[type, default: []].append(Record(id: "r\(counter)", fields: fields, version: 1, created: counter))
            }
        }
    }

    func record(_ type: String, id: String) -> JSONValue? {
        lock.withLock { types[type]?.first { $0.id == id }.map(Self.representation) }
    }

    /// Changes a stored record behind the client's back (a concurrent writer).
    func touch(_ type: String, id: String, field: String, value: JSONValue) {
        lock.withLock {
            guard let index = types[type]?.firstIndex(where: { $0.id == id }) else { return }
            types[type]![index].fields[field] = value
            types[type]![index].version += 1
        }
    }

    func transport() -> ScriptedTransport {
        ScriptedTransport { [self] request, body in handle(request, body: body) }
    }

    static func representation(_ record: Record) -> JSONValue {
        var object = record.fields
        object["id"] = .string(record.id)
        object["created_at"] = .string("2025-01-01T00:00:\(String(format: "%02d", record.created % 60))Z")
        object["updated_at"] = .string("2025-01-02T00:00:00Z")
        return .object(object)
    }

    private static func etag(_ record: Record) -> String { "\"\(record.version)\"" }

    private static func error(_ status: Int, _ code: String, _ message: String) -> (HTTPResponse, Data) {
        ScriptedTransport.reply(status, json: ["error": ["code": .string(code), "message": .string(message)]])
    }

    func handle(_ request: HTTPRequest, body: Data?) -> (HTTPResponse, Data) {
        guard let url = request.url, let components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            return Self.error(400, "bad_request", "no URL")
        }
        let query = Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        var segments = components.path.split(separator: "/").map(String.init)
        if shape == .outpost {
            guard segments.first == "records" else { return Self.error(404, "not_found", "no route") }
            segments.removeFirst()
        }
        return lock.withLock {
            switch (request.method, segments.count) {
            case (.get, 1): return list(segments[0], query: query)
            case (.post, 1): return create(segments[0], body: body)
            case (_, 2): return item(request, type: segments[0], id: segments[1], body: body)
            default: return Self.error(404, "not_found", "no route")
            }
        }
    }

    private func create(_ type: String, body: Data?) -> (HTTPResponse, Data) {
        guard let body, case .object(var fields)? = try? JSONValue(parsing: body) else {
            return Self.error(400, "bad_body", "expected a JSON object")
        }
        for key in ["id", "created_at", "updated_at"] { fields.removeValue(forKey: key) }
        counter += 1
        let record = Record(id: "r\(counter)", fields: fields, version: 1, created: counter)
        types[type, default: []].append(record)
        var headers = HTTPFields()
        headers[.location] = (shape == .outpost ? "/records/" : "/") + "\(type)/\(record.id)"
        headers[.eTag] = Self.etag(record)
        return ScriptedTransport.reply(201, json: Self.representation(record), headers: headers)
    }

    private func item(_ request: HTTPRequest, type: String, id: String, body: Data?) -> (HTTPResponse, Data) {
        guard let index = types[type]?.firstIndex(where: { $0.id == id }) else {
            return Self.error(404, "not_found", "no \(type) \(id)")
        }
        var record = types[type]![index]
        if request.method != .get, let expected = request.headerFields[.ifMatch], expected != Self.etag(record) {
            return Self.error(412, "precondition_failed", "the record changed")
        }
        switch request.method {
        case .get:
            if request.headerFields[.ifNoneMatch] == Self.etag(record) {
                return ScriptedTransport.reply(304, headers: [.eTag: Self.etag(record)])
            }
        case .put:
            guard let body, case .object(var fields)? = try? JSONValue(parsing: body) else {
                return Self.error(400, "bad_body", "expected a JSON object")
            }
            for key in ["id", "created_at", "updated_at"] { fields.removeValue(forKey: key) }
            record.fields = fields
            record.version += 1
        case .patch:
            // Django REST framework takes only application/json: a partial update of top-level fields.
            let wanted = shape == .restFramework ? "application/json" : "application/merge-patch+json"
            guard request.headerFields[.contentType] == wanted else {
                return Self.error(415, "unsupported_media_type", "send \(wanted)")
            }
            guard let body, let patch = try? JSONValue(parsing: body), case .object(let changes) = patch else {
                return Self.error(400, "bad_patch", "expected a JSON object")
            }
            var fields = record.fields
            if shape == .restFramework {
                for (key, value) in changes { fields[key] = value }
            } else {
                guard case .object(let merged) = MergePatch.apply(patch, to: .object(record.fields)) else {
                    return Self.error(400, "bad_patch", "not an object")
                }
                fields = merged
            }
            record.fields = fields
            record.version += 1
        case .delete:
            types[type]!.remove(at: index)
            return ScriptedTransport.reply(204)
        default:
            return Self.error(405, "method_not_allowed", "no")
        }
        types[type]![index] = record
        return ScriptedTransport.reply(200, json: Self.representation(record), headers: [.eTag: Self.etag(record)])
    }

    private func list(_ type: String, query: [String: String]) -> (HTTPResponse, Data) {
        var records = types[type] ?? []
        let reserved: Set = ["limit", "cursor", "page", "per_page", "page_size", "sort"]
        for (field, value) in query where !reserved.contains(field) {
            records = records.filter { $0.fields[field]?.stringValue == value }
        }
        let results = { (slice: ArraySlice<Record>) in JSONValue.array(slice.map(Self.representation)) }
        switch shape {
        case .restFramework:
            let size = Int(query["page_size"] ?? "") ?? 4
            let page = Int(query["page"] ?? "") ?? 1
            let start = (page - 1) * size
            guard start >= 0, start <= records.count, page >= 1 else { return Self.error(404, "not_found", "Invalid page.") }
            let end = min(start + size, records.count)
            func link(_ number: Int) -> JSONValue {
                .string("\(baseURL)/\(type)/?page=\(number)" + (query["page_size"].map { "&page_size=\($0)" } ?? ""))
            }
            return ScriptedTransport.reply(
                200,
                json: [
                    "count": .int(records.count), "results": results(records[start..<end]),
                    "next": end < records.count ? link(page + 1) : nil, "previous": page > 1 ? link(page - 1) : nil,
                ])
        case .outpost:
            if let page = query["page"].flatMap(Int.init) {
                let size = min(Int(query["per_page"] ?? "") ?? 20, 100)
                let start = min((page - 1) * size, records.count)
                let end = min(start + size, records.count)
                return ScriptedTransport.reply(
                    200,
                    json: [
                        "results": results(records[start..<end]), "page": .int(page), "per_page": .int(size),
                        "total_pages": .int((records.count + size - 1) / size), "total": .int(records.count),
                    ])
            }
            let size = min(Int(query["limit"] ?? "") ?? 20, 100)
            let start = query["cursor"].flatMap { Int($0.dropFirst(3)) } ?? 0
            let end = min(start + size, records.count)
            let next: JSONValue = end < records.count ? .string("cur\(end)") : nil
            let previous: JSONValue = start > 0 ? .string("cur\(max(0, start - size))") : nil
            func link(_ cursor: JSONValue) -> JSONValue {
                guard let cursor = cursor.stringValue else { return nil }
                return .string("\(baseURL)/records/\(type)?limit=\(size)&cursor=\(cursor)")
            }
            return ScriptedTransport.reply(
                200,
                json: [
                    "results": results(records[start..<end]), "next_cursor": next, "prev_cursor": previous,
                    "next": link(next), "previous": link(previous),
                ])
        }
    }
}
