import Foundation
import GRDB
import OutpostCore

/// Reading and writing rows of the `records` and `pending` tables.
enum RecordRows {
    /// The largest fields object the store keeps (encoded), as a bound on what it parses back.
    static let maxFieldsBytes = 4 << 20

    static func encode(_ fields: [String: JSONValue]) throws -> String {
        let text = JSONValue.object(fields).jsonString()
        guard text.utf8.count <= maxFieldsBytes else {
            throw SyncError("The record's fields take \(text.utf8.count) bytes encoded; keep them under \(maxFieldsBytes)")
        }
        return text
    }

    static func decode(_ text: String) throws -> [String: JSONValue] {
        guard text.utf8.count <= maxFieldsBytes, let object = try JSONValue(parsing: Data(text.utf8)).objectValue else {
            throw SyncError("A stored record is not a JSON object; delete the store's folder and pull again")
        }
        return object
    }

    static func record(from row: Row) throws -> SyncedRecord {
        let state: SyncState =
            switch row["state"] as String {
            case "pending": .pending
            case "failed": .failed(row["error"] ?? "refused by the server")
            default: .confirmed
            }
        return SyncedRecord(
            type: row["type"], id: row["id"], fields: try decode(row["fields"]), version: row["version"], state: state)
    }

    /// The record and its base; a record deleted here (until the server accepts the delete) only
    /// with `includingDeleted`.
    static func fetch(
        _ db: Database, type: String, id: String, includingDeleted: Bool = false
    ) throws -> (record: SyncedRecord, base: [String: JSONValue]?)? {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT * FROM records WHERE type = ? AND id = ?"), arguments: [type, id]),
            includingDeleted || row["state"] != "deleted"
        else { return nil }
        let base: String? = row["base"]
        return (try record(from: row), try base.map(decode))
    }

    /// Stores the server's record as confirmed (fields and base alike).
    static func confirm(_ db: Database, type: String, server: [String: JSONValue], version: Int?) throws {
        guard let id = server["id"]?.stringValue else { throw SyncError("The server sent a \(type) record without an id") }
        let text = try encode(server)
        try db.cachedStatement(
            sql: """
                INSERT INTO records (type, id, fields, version, base, state, error) VALUES (?, ?, ?, ?, ?, 'confirmed', NULL)
                ON CONFLICT (type, id) DO UPDATE SET fields = excluded.fields, version = excluded.version,
                    base = excluded.base, state = 'confirmed', error = NULL
                """
        ).execute(arguments: [type, id, text, version, text])
    }

    /// Whether the record has local writes not yet accepted (queued or refused).
    static func hasLocalWrites(_ db: Database, type: String, id: String) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM pending WHERE type = ? AND record_id = ?)"),
            arguments: [type, id]) ?? false
    }

    static func enqueue(
        _ db: Database, type: String, id: String, kind: String, body: [String: JSONValue], key: String? = nil
    ) throws {
        try db.execute(
            sql: "INSERT INTO pending (type, record_id, kind, body, idempotency_key) VALUES (?, ?, ?, ?, ?)",
            arguments: [type, id, kind, try encode(body), key])
    }
}

/// RFC 7396 JSON merge patch: `null` removes a member, objects merge, anything else replaces.
enum MergePatch {
    static func apply(_ patch: [String: JSONValue], to target: [String: JSONValue]) -> [String: JSONValue] {
        var result = target
        for (key, value) in patch {
            switch value {
            case .null:
                result[key] = nil
            case .object(let members):
                result[key] = .object(apply(members, to: result[key]?.objectValue ?? [:]))
            default:
                result[key] = value
            }
        }
        return result
    }
}
