import Foundation
import GRDB
import OutpostCore

/// Reading and writing rows of the `records` and `pending` tables.
enum RecordRows {
    /// The largest fields object the store keeps (encoded), as a bound on what it parses back.
    static let maxFieldsBytes = 4 << 20

    /// Compact JSON text of `fields` with keys in order, so that equal fields give equal text (the
    /// store compares stored fields as text). Written directly rather than through `JSONEncoder`,
    /// which took most of a pull's time.
    static func encode(_ fields: [String: JSONValue]) throws -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256)
        try write(.object(fields), to: &bytes)
        guard bytes.count <= maxFieldsBytes else {
            throw SyncError("The record's fields take \(bytes.count) bytes encoded; keep them under \(maxFieldsBytes)")
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func write(_ value: JSONValue, to bytes: inout [UInt8]) throws {
        switch value {
        case .null: bytes += "null".utf8
        case .bool(let flag): bytes += (flag ? "true" : "false").utf8
        case .int(let number): bytes += String(number).utf8
        case .largeInteger(let digits): bytes += digits.utf8
        case .double(let number):
            guard number.isFinite else {
                throw SyncError("A record's field holds \(number), which JSON cannot hold; store a finite number or null")
            }
            bytes += "\(number)".utf8
        case .string(let text): writeString(text, to: &bytes)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                try write(element, to: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                writeString(key, to: &bytes)
                bytes.append(UInt8(ascii: ":"))
                try write(members[key]!, to: &bytes)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// A JSON string: `"` and `\` escaped, control characters as `\u00XX` (or their short form).
    private static func writeString(_ text: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes += [UInt8(ascii: "\\"), byte]
            case UInt8(ascii: "\n"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case UInt8(ascii: "\r"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case UInt8(ascii: "\t"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
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
