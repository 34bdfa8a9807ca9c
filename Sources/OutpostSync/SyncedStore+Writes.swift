import Foundation
import GRDB
public import OutpostCore

extension SyncedStore {
    /// The members of a record the server owns; a local write does not set them.
    static let serverOwned: Set<String> = ["id", "created_at", "updated_at"]

    /// Creates a record locally, at once, as ``SyncState/pending``; ``push()`` sends it.
    ///
    /// The record and its outbox entry commit in one transaction: after a crash the create is
    /// both stored and queued, or neither.
    ///
    /// - Parameters:
    ///   - type: the record's type (1–64 letters, digits, `_` or `-`).
    ///   - fields: the record's fields; `id`, `created_at` and `updated_at` are ignored.
    /// - Returns: the record's local id, `local-` and a UUID, until the server assigns one.
    /// - Throws: ``SyncError`` for an invalid type or fields over 4 MiB encoded, or a database error.
    @discardableResult
    public func create(_ type: String, fields: [String: JSONValue]) async throws -> String {
        try RecordNames.check(type: type)
        let body = fields.filter { !Self.serverOwned.contains($0.key) }
        let id = "local-" + UUID().uuidString.lowercased()
        let text = try RecordRows.encode(body)
        try await database.write { db in
            try db.execute(
                sql: "INSERT INTO records (type, id, fields, state) VALUES (?, ?, ?, 'pending')",
                arguments: [type, id, text])
            try RecordRows.enqueue(db, type: type, id: id, kind: "create", body: body, key: UUID().uuidString)
        }
        return id
    }

    /// Changes a record locally with a JSON merge patch (RFC 7396: `null` removes a field), at
    /// once, as ``SyncState/pending``; ``push()`` sends it with `If-Match` of the version the
    /// record had here.
    ///
    /// The change and its outbox entry commit in one transaction. A record whose earlier writes
    /// the server refused (``SyncState/failed(_:)``) has them queued again with this one.
    ///
    /// - Parameters:
    ///   - type: the record's type.
    ///   - id: the record's id (a server id, or the local id ``create(_:fields:)`` returned).
    ///   - fields: the merge patch; `id`, `created_at` and `updated_at` are ignored.
    /// - Returns: the record as it is now locally.
    /// - Throws: ``SyncError`` when the store holds no such record, or a database error.
    @discardableResult
    public func patch(_ type: String, id: String, fields: [String: JSONValue]) async throws -> SyncedRecord {
        try RecordNames.check(type: type)
        let patch = fields.filter { !Self.serverOwned.contains($0.key) }
        return try await database.write { db in
            guard var record = try RecordRows.fetch(db, type: type, id: id)?.record else {
                throw SyncError("This store holds no \(type) record \(id); pull \(type) first, or create it")
            }
            record.fields = MergePatch.apply(patch, to: record.fields)
            record.state = .pending
            try db.execute(
                sql: "UPDATE records SET fields = ?, state = 'pending', error = NULL WHERE type = ? AND id = ?",
                arguments: [try RecordRows.encode(record.fields), type, id])
            try db.execute(
                sql: "UPDATE pending SET failed = NULL WHERE type = ? AND record_id = ?", arguments: [type, id])
            try RecordRows.enqueue(db, type: type, id: id, kind: "patch", body: patch)
            return record
        }
    }

    /// Deletes a record locally, at once: queries no longer see it, and ``push()`` sends
    /// `DELETE` with `If-Match` of the version the record had here.
    ///
    /// The delete replaces the record's queued patches. A record created here and not yet
    /// confirmed is still created first, with its Idempotency-Key, and then deleted: its create
    /// may have reached the server with the reply lost. A delete the server refuses with 412 (the record changed there
    /// since) is resolved by the type's policy: ``ConflictPolicy/serverWins`` brings the server's
    /// record back; the other policies delete it anyway. Either way ``conflicts`` reports it.
    ///
    /// - Parameters:
    ///   - type: the record's type.
    ///   - id: the record's id (a server id, or the local id ``create(_:fields:)`` returned).
    /// - Throws: ``SyncError`` when the store holds no such record, or a database error.
    public func delete(_ type: String, id: String) async throws {
        try RecordNames.check(type: type)
        try await database.write { db in
            guard try RecordRows.fetch(db, type: type, id: id) != nil else {
                throw SyncError("This store holds no \(type) record \(id); pull \(type) first")
            }
            // The delete supersedes the record's queued patches; a queued create still goes first
            // (its reply may have been lost, so the server may hold the record already).
            try db.execute(
                sql: "DELETE FROM pending WHERE type = ? AND record_id = ? AND kind = 'patch'", arguments: [type, id])
            try db.execute(
                sql: "UPDATE records SET state = 'deleted', error = NULL WHERE type = ? AND id = ?", arguments: [type, id])
            try db.execute(
                sql: "UPDATE pending SET failed = NULL WHERE type = ? AND record_id = ?", arguments: [type, id])
            try RecordRows.enqueue(db, type: type, id: id, kind: "delete", body: [:])
        }
    }

    /// The local writes not yet accepted by the server, per type (types without any are left out).
    ///
    /// - Returns: pending and failed counts per type.
    /// - Throws: a database error.
    public func status() async throws -> [String: SyncTypeStatus] {
        try await database.read { db in
            var counts: [String: SyncTypeStatus] = [:]
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT type, SUM(failed IS NULL) AS pending, SUM(failed IS NOT NULL) AS failed
                    FROM pending GROUP BY type
                    """)
            for row in rows { counts[row["type"]] = SyncTypeStatus(pending: row["pending"], failed: row["failed"]) }
            return counts
        }
    }
}
