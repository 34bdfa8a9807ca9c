import Foundation
@_spi(OutpostInternal) import OutpostCore
import PostgresNIO

extension PostgresStorage {
    public func writeRecords(
        _ writes: [RecordBatchWrite], key: IdempotencyKey?, lifetime: Duration,
        respond: @Sendable ([RecordBatchResult]) -> StoredResponse
    ) async throws -> (claim: IdempotencyClaim, response: StoredResponse?) {
        try await withTransaction { connection in
            let now = Identifiers.nowMilliseconds()
            if let key, let claim = try await Self.claimIdempotencyKey(key, now: now, lifetime: lifetime, on: connection) {
                return (claim, nil)
            }
            var results: [RecordBatchResult] = []
            results.reserveCapacity(writes.count)
            for (index, write) in writes.enumerated() {
                do {
                    results.append(try await Self.apply(write, now: now, on: connection))
                } catch {
                    throw RecordBatchFailure(index: index, error: error)
                }
            }
            let response = respond(results)
            if let key { try await Self.finishIdempotencyKey(key, response: response, on: connection) }
            return (.claimed(token: ""), response)
        }
    }

    /// One write of a batch on the transaction's connection. `FOR UPDATE` holds each record it
    /// reads until the batch commits, against writers on every instance.
    private static func apply(_ write: RecordBatchWrite, now: Int64, on connection: PostgresConnection) async throws
        -> RecordBatchResult
    {
        switch write {
        case .create(let type, let owner, let isPrivate, let fields):
            return .created(
                try await insertRecord(
                    type: type, fields: try fields(), owner: owner, isPrivate: isPrivate, now: now, on: connection))
        case .update(let type, let id, let change):
            let current = try await currentRecord(type: type, id: id, on: connection)
            let body = try RecordBodyText.text(try change(current))
            guard
                let written = try await rows(
                    """
                    UPDATE records SET body = \(body), version = version + 1, updated_at = \(now)
                    WHERE seq = \(current.seq) RETURNING \(unescaped: columns)
                    """, on: connection
                ).first
            else { throw RecordWriteFailure.notFound }
            return .updated(try record(from: written))
        case .delete(let type, let id, let check):
            let current = try await currentRecord(type: type, id: id, on: connection)
            try check(current)
            try await execute("DELETE FROM records WHERE seq = \(current.seq)", on: connection)
            return .deleted(current)
        }
    }

    private static func currentRecord(type: String, id: String, on connection: PostgresConnection) async throws -> StoredRecord {
        guard
            let row = try await rows(
                "SELECT \(unescaped: columns) FROM records WHERE type = \(type) AND id = \(id) FOR UPDATE", on: connection
            ).first
        else { throw RecordWriteFailure.notFound }
        return try record(from: row)
    }
}
