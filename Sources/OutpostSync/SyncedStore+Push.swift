import Foundation
import GRDB
import HTTPTypes
@_spi(OutpostInternal) import OutpostCore

/// One entry of the outbox.
struct PendingWrite: Sendable {
    var seq: Int64
    var type: String
    var recordID: String
    var kind: String
    var body: [String: JSONValue]
    var idempotencyKey: String?
}

extension SyncedStore {
    /// How many times a conflict resolved for the client is sent again when the server's record
    /// keeps changing in between.
    static let maxConflictRounds = 5

    /// Sends the pending writes, oldest first, and marks what the server accepted as confirmed.
    ///
    /// - A create goes out as `POST /records/{type}` with the `Idempotency-Key` stored with it, so
    ///   sending it again after a lost reply creates nothing twice; the local record then takes the
    ///   server's id.
    /// - A patch goes out as `PATCH` (merge patch) with `If-Match` of the version the local edit
    ///   was based on. For a record loaded from a list (whose version is unknown) the server's
    ///   record is read first: unchanged since the load, its version is the base; changed, that is a
    ///   conflict. A conflict (412) is resolved by the type's ``ConflictPolicy`` and reported on
    ///   ``conflicts``.
    /// - A patch of a record the server no longer has (404) drops the local record and its writes,
    ///   reported on ``conflicts`` as ``ConflictEvent/Resolution/serverWon`` with empty fields.
    /// - Another 4xx (but 401, 408, 409 and 429) marks the record ``SyncState/failed(_:)`` and
    ///   keeps its writes out of the queue (``status()`` counts them).
    /// - A network error, a 5xx or one of those statuses stops the push and leaves the rest pending.
    ///
    /// - Throws: ``SyncError`` for a store without a client, the error that stopped the push, or a
    ///   database error.
    public func push() async throws {
        let client = try requireClient()
        try await exclusive { store in try await store.pushNow(client: client) }
    }

    /// The types ``pull(_:)`` has loaded into this store.
    ///
    /// - Returns: the types, sorted.
    /// - Throws: a database error.
    public func pulledTypes() async throws -> [String] {
        try await database.read { db in try String.fetchAll(db, sql: "SELECT type FROM positions ORDER BY type") }
    }

    func pushNow(client: OutpostClient) async throws {
        while let write = try await nextWrite() {
            do {
                switch write.kind {
                case "create": try await sendCreate(write, client: client)
                case "delete": try await sendDelete(write, client: client)
                default: try await sendPatch(write, client: client)
                }
            } catch let error as OutpostError where error.status == 404 && write.kind == "patch" {
                try await gone(write)
            } catch let error as OutpostError where Self.isRefusal(error) {
                try await markFailed(write, message: error.serverMessage ?? error.message)
            }
        }
    }

    /// A patched record the server no longer has (deleted there, or no longer readable): the
    /// server's side wins whatever the policy, since there is no record to patch. The local record
    /// and its writes go, and ``conflicts`` reports it with empty fields.
    func gone(_ write: PendingWrite) async throws {
        try await database.write { db in
            try Self.dropLocalWrites(db, type: write.type, id: write.recordID)
            try db.execute(sql: "DELETE FROM records WHERE type = ? AND id = ?", arguments: [write.type, write.recordID])
        }
        report(write, .serverWon, [:])
    }

    /// A 4xx that sending again would not cure.
    static func isRefusal(_ error: OutpostError) -> Bool {
        guard let status = error.status else { return false }
        return (400..<500).contains(status) && ![401, 408, 409, 412, 429].contains(status)
    }

    func nextWrite() async throws -> PendingWrite? {
        try await database.read { db in
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT * FROM pending WHERE failed IS NULL ORDER BY seq LIMIT 1")
            else { return nil }
            return PendingWrite(
                seq: row["seq"], type: row["type"], recordID: row["record_id"], kind: row["kind"],
                body: try RecordRows.decode(row["body"]), idempotencyKey: row["idempotency_key"])
        }
    }

    func markFailed(_ write: PendingWrite, message: String) async throws {
        try await database.write { db in
            try db.execute(sql: "UPDATE pending SET failed = ? WHERE seq = ?", arguments: [message, write.seq])
            try db.execute(
                sql: "UPDATE records SET state = 'failed', error = ? WHERE type = ? AND id = ?",
                arguments: [message, write.type, write.recordID])
        }
    }

    func sendCreate(_ write: PendingWrite, client: OutpostClient) async throws {
        var request = Request.post("/records/\(Request.pathSegment(write.type))", json: .object(write.body))
        if let key = write.idempotencyKey { request.headers[.idempotencyKey] = key }
        let response = try await client.send(request, operationName: "sync create \(write.type)")
        let server = try Self.record(of: response, type: write.type)
        let version = Self.version(of: response)
        try await database.write { db in
            guard let id = server["id"]?.stringValue else { throw SyncError("The server answered a create without an id") }
            try db.execute(sql: "DELETE FROM pending WHERE seq = ?", arguments: [write.seq])
            if id != write.recordID {
                // A pull may have brought the record already (the create's first reply was lost,
                // the change feed was not): one row stays, the one with local writes if any.
                if try RecordRows.fetch(db, type: write.type, id: id, includingDeleted: true) != nil {
                    let keepServerRow = try RecordRows.hasLocalWrites(db, type: write.type, id: id)
                    try db.execute(
                        sql: "DELETE FROM records WHERE type = ? AND id = ?",
                        arguments: [write.type, keepServerRow ? write.recordID : id])
                }
                try db.execute(
                    sql: "UPDATE records SET id = ? WHERE type = ? AND id = ?", arguments: [id, write.type, write.recordID])
                try db.execute(
                    sql: "UPDATE pending SET record_id = ? WHERE type = ? AND record_id = ?",
                    arguments: [id, write.type, write.recordID])
            }
            try Self.accepted(db, type: write.type, server: server, version: version)
        }
    }

    func sendPatch(_ write: PendingWrite, client: OutpostClient) async throws {
        let path = "/records/\(Request.pathSegment(write.type))/\(Request.pathSegment(write.recordID))"
        let known = try await database.read { db in try RecordRows.fetch(db, type: write.type, id: write.recordID) }
        guard let known else {
            try await markFailed(write, message: "the record is no longer in the store")
            return
        }
        var version = known.record.version
        if version == nil {
            let (server, current) = try await fetch(path, type: write.type, client: client)
            guard server == known.base, let current else {
                return try await resolve(write, path: path, server: server, version: current, client: client)
            }
            version = current
        }
        do {
            try await sendPatch(write, path: path, ifMatch: version ?? 0, client: client)
        } catch let error as OutpostError where error.status == 412 {
            let (server, current) = try await fetch(path, type: write.type, client: client)
            try await resolve(write, path: path, server: server, version: current, client: client)
        }
    }

    /// Sends a delete with `If-Match` of the version known here (without one when no version is
    /// known); a record already gone (404) counts as deleted. A 412 is resolved by the type's
    /// policy: ``ConflictPolicy/serverWins`` keeps the server's record, the others delete it anyway.
    func sendDelete(_ write: PendingWrite, client: OutpostClient) async throws {
        let path = "/records/\(Request.pathSegment(write.type))/\(Request.pathSegment(write.recordID))"
        let version = try await database.read { db in
            try Int.fetchOne(
                db, sql: "SELECT version FROM records WHERE type = ? AND id = ?", arguments: [write.type, write.recordID])
        }
        do {
            try await sendDelete(write, path: path, ifMatch: version, client: client)
        } catch let error as OutpostError where error.status == 412 {
            let (server, current) = try await fetch(path, type: write.type, client: client)
            if case .serverWins = policies[write.type] ?? .serverWins {
                try await database.write { db in
                    try Self.dropLocalWrites(db, type: write.type, id: write.recordID)
                    try RecordRows.confirm(db, type: write.type, server: server, version: current)
                }
                report(write, .serverWon, server)
            } else {
                try await sendDelete(write, path: path, ifMatch: nil, client: client)
                report(write, .clientWon, [:])
            }
        }
    }

    private func sendDelete(_ write: PendingWrite, path: String, ifMatch version: Int?, client: OutpostClient) async throws {
        var request = Request.delete(path)
        if let version { request.headers[.ifMatch] = "\"v\(version)\"" }
        do {
            _ = try await client.send(request, operationName: "sync delete \(write.type)")
        } catch let error as OutpostError where error.status == 404 {
            // Deleted elsewhere, or never readable: gone either way.
        }
        try await database.write { db in
            try Self.dropLocalWrites(db, type: write.type, id: write.recordID)
            try db.execute(sql: "DELETE FROM records WHERE type = ? AND id = ?", arguments: [write.type, write.recordID])
        }
    }

    /// Sends `write`'s patch with `If-Match` of `version` and stores the answer.
    @discardableResult
    func sendPatch(
        _ write: PendingWrite, path: String, ifMatch version: Int, client: OutpostClient
    ) async throws -> [String: JSONValue] {
        let body = Data(JSONValue.object(write.body).jsonString().utf8)
        let request = Request(
            method: .patch, path: path, headers: [.ifMatch: "\"v\(version)\""],
            body: .data(body, contentType: "application/merge-patch+json"))
        let response = try await client.send(request, operationName: "sync patch \(write.type)")
        let server = try Self.record(of: response, type: write.type)
        let newVersion = Self.version(of: response)
        try await database.write { db in
            try db.execute(sql: "DELETE FROM pending WHERE seq = ?", arguments: [write.seq])
            try Self.accepted(db, type: write.type, server: server, version: newVersion)
        }
        return server
    }

    /// Stores the server's answer to a write: confirmed when no other local write of the record
    /// waits, else the local fields stay (with the server's `id`, `created_at`, `updated_at`) and
    /// the version and base move on.
    static func accepted(_ db: Database, type: String, server: [String: JSONValue], version: Int?) throws {
        guard let id = server["id"]?.stringValue else { return }
        guard try RecordRows.hasLocalWrites(db, type: type, id: id),
            var local = try RecordRows.fetch(db, type: type, id: id, includingDeleted: true)?.record
        else {
            return try RecordRows.confirm(db, type: type, server: server, version: version)
        }
        for key in serverOwned { local.fields[key] = server[key] }
        try db.execute(
            sql: "UPDATE records SET fields = ?, version = ?, base = ? WHERE type = ? AND id = ?",
            arguments: [try RecordRows.encode(local.fields), version, try RecordRows.encode(server), type, id])
    }

    /// The server's record at `path` and its version.
    func fetch(_ path: String, type: String, client: OutpostClient) async throws -> ([String: JSONValue], Int?) {
        let response = try await client.send(.get(path), operationName: "sync read \(type)")
        return (try Self.record(of: response, type: type), Self.version(of: response))
    }

    static func record(of response: ClientResponse, type: String) throws -> [String: JSONValue] {
        guard response.body.count <= RecordRows.maxFieldsBytes, let record = try response.json().objectValue else {
            throw SyncError("The server answered a \(type) write with something other than a record")
        }
        return record
    }

    /// The version of a strong ETag `"v<version>"`.
    static func version(of response: ClientResponse) -> Int? {
        guard let etag = response.headerFields[.eTag], etag.hasPrefix("\"v"), etag.hasSuffix("\"") else { return nil }
        return Int(etag.dropFirst(2).dropLast())
    }
}
