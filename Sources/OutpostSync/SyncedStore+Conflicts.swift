import Foundation
import GRDB
import HTTPTypes
import OutpostCore

extension SyncedStore {
    /// Resolves a patch whose base the server's record (`server`, at `version`) has moved past,
    /// by the type's policy, and reports the resolution on ``conflicts``.
    func resolve(
        _ write: PendingWrite, path: String, server: [String: JSONValue], version: Int?, client: OutpostClient
    ) async throws {
        let policy = policies[write.type] ?? .serverWins
        var server = server
        var version = version
        for _ in 0..<Self.maxConflictRounds {
            do {
                switch policy {
                case .serverWins:
                    let (kept, keptVersion) = (server, version)
                    try await database.write { db in
                        try Self.dropLocalWrites(db, type: write.type, id: write.recordID)
                        try RecordRows.confirm(db, type: write.type, server: kept, version: keptVersion)
                    }
                    report(write, .serverWon, server)
                case .clientWins:
                    let result = try await sendPatch(write, path: path, ifMatch: version ?? 0, client: client)
                    report(write, .clientWon, result)
                case .merge(let merge):
                    let result = try await sendMerged(
                        write, path: path, policy: merge, server: server, version: version ?? 0, client: client)
                    report(write, .merged, result)
                }
                return
            } catch let error as OutpostError where error.status == 412 {
                (server, version) = try await fetch(path, type: write.type, client: client)
            }
        }
        throw SyncError(
            "The server's \(write.type) record \(write.recordID) changed during each of \(Self.maxConflictRounds) attempts to resolve a conflict; push again later"
        )
    }

    /// Sends the merge closure's fields with `PUT` and `If-Match`, replacing the local writes of the record.
    private func sendMerged(
        _ write: PendingWrite, path: String,
        policy merge: @Sendable ([String: JSONValue], [String: JSONValue], [String: JSONValue]) -> [String: JSONValue],
        server: [String: JSONValue], version: Int, client: OutpostClient
    ) async throws -> [String: JSONValue] {
        let known = try await database.read { db in try RecordRows.fetch(db, type: write.type, id: write.recordID) }
        let owned = Self.serverOwned
        let merged = merge(
            (known?.base ?? [:]).filter { !owned.contains($0.key) },
            (known?.record.fields ?? [:]).filter { !owned.contains($0.key) },
            server.filter { !owned.contains($0.key) })
        let request = Request(
            method: .put, path: path, headers: [.ifMatch: "\"v\(version)\""],
            body: .json(.object(merged.filter { !owned.contains($0.key) })))
        let response = try await client.send(request, operationName: "sync merge \(write.type)")
        let result = try Self.record(of: response, type: write.type)
        let newVersion = Self.version(of: response)
        try await database.write { db in
            try Self.dropLocalWrites(db, type: write.type, id: write.recordID)
            try RecordRows.confirm(db, type: write.type, server: result, version: newVersion)
        }
        return result
    }

    static func dropLocalWrites(_ db: Database, type: String, id: String) throws {
        try db.execute(sql: "DELETE FROM pending WHERE type = ? AND record_id = ?", arguments: [type, id])
    }

    func report(_ write: PendingWrite, _ resolution: ConflictEvent.Resolution, _ fields: [String: JSONValue]) {
        conflictSink.yield(ConflictEvent(type: write.type, id: write.recordID, resolution: resolution, fields: fields))
    }
}
