import Foundation
@_spi(OutpostInternal) import OutpostCore
import SQLiteNIO

extension SQLiteStorage {
    public func writeRecords(
        _ writes: [RecordBatchWrite], key: IdempotencyKey?, lifetime: Duration,
        respond: @Sendable ([RecordBatchResult]) -> StoredResponse
    ) async throws -> (claim: IdempotencyClaim, response: StoredResponse?) {
        // BEGIN IMMEDIATE takes the write lock first: the batch reads and writes every record
        // without another writer, of this process or another on the same file, in between.
        try await withTransaction { writer in
            let now = Identifiers.nowMilliseconds()
            if let key {
                try await purgeIdempotencyKeys(now: now, on: writer)
                if let existing = try await idempotencyRow(key, on: writer) {
                    return (IdempotencyRow.classify(existing, key: key, now: now).claim, nil)
                }
            }
            var results: [RecordBatchResult] = []
            results.reserveCapacity(writes.count)
            for (index, write) in writes.enumerated() {
                do {
                    results.append(try await apply(write, now: now, on: writer))
                } catch {
                    throw RecordBatchFailure(index: index, error: error)
                }
            }
            let response = respond(results)
            if let key { try await insertIdempotentResponse(response, key: key, now: now, lifetime: lifetime, on: writer) }
            return (.claimed(token: ""), response)
        }
    }

    /// One write of a batch on the transaction's connection.
    private func apply(_ write: RecordBatchWrite, now: Int64, on writer: BusyBoundedConnection) async throws -> RecordBatchResult
    {
        switch write {
        case .create(let type, let owner, let isPrivate, let fields):
            return .created(
                try await insertRecord(type: type, fields: try fields(), owner: owner, isPrivate: isPrivate, now: now, on: writer)
            )
        case .update(let type, let id, let change):
            let current = try await currentRecord(type: type, id: id, on: writer)
            let fields = try change(current)
            let rows = try await writer.query(
                "UPDATE records SET body = ?, version = version + 1, updated_at = ? WHERE seq = ? RETURNING \(Self.columns)",
                [.text(try RecordBodyText.text(fields)), .integer(Int(now)), .integer(Int(current.seq))])
            guard let row = rows.first else { throw RecordWriteFailure.notFound }
            return .updated(try Self.record(from: row))
        case .delete(let type, let id, let check):
            let current = try await currentRecord(type: type, id: id, on: writer)
            try check(current)
            _ = try await writer.query("DELETE FROM records WHERE seq = ?", [.integer(Int(current.seq))])
            return .deleted(current)
        }
    }

    private func currentRecord(type: String, id: String, on writer: BusyBoundedConnection) async throws -> StoredRecord {
        let rows = try await writer.query(
            "SELECT \(Self.columns) FROM records WHERE type = ? AND id = ?", [.text(type), .text(id)])
        guard let row = rows.first else { throw RecordWriteFailure.notFound }
        return try Self.record(from: row)
    }
}
