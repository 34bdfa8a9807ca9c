import Foundation
import GRDB
@_spi(OutpostInternal) import OutpostCore

extension SyncedStore {
    /// The most records one list page asks for (the server's maximum).
    static let pageSize = 100
    /// The most list pages one initial load reads (a million records), a bound on a server that
    /// keeps answering with a next cursor.
    static let maxPages = 10_000

    /// Brings the local copy of `type` up to date with the server.
    ///
    /// The first pull loads the type's list page by page (`GET /records/{type}?limit=100&cursor=…`)
    /// after noting the change feed's position; every pull then applies the changes after the
    /// store's position (`GET /records/{type}/changes?after=…`). When the server no longer has
    /// those changes (410 `changes_expired` or `unknown_position`), the type is loaded again from
    /// scratch. Records with local writes not yet accepted keep their local fields: ``push()``
    /// meets the server's changes to them as conflicts.
    ///
    /// - Parameter type: the records' type.
    /// - Throws: ``SyncError`` for an invalid type or a store without a client, `OutpostError`
    ///   when the server cannot be reached or refuses (401, 403), or a database error.
    public func pull(_ type: String) async throws {
        try RecordNames.check(type: type)
        let client = try requireClient()
        try await exclusive { store in try await store.pullNow(type, client: client) }
    }

    nonisolated func requireClient() throws -> OutpostClient {
        guard let client else {
            throw SyncError("This store was opened without a client; open it with one (and the server's address) to pull or push")
        }
        return client
    }

    func pullNow(_ type: String, client: OutpostClient) async throws {
        let reader = ChangeReader(client: client, type: type)
        let stored = try await database.read { db in
            try String.fetchOne(db, sql: "SELECT position FROM positions WHERE type = ?", arguments: [type])
        }
        var position = stored.flatMap { Int64($0) }
        if position == nil { position = try await load(type, reader: reader, client: client) }
        do {
            try await catchUp(type, from: position ?? 0, reader: reader)
        } catch let error as OutpostError
            where error.status == 410 && ["changes_expired", "unknown_position"].contains(error.serverCode ?? "")
        {
            let reloaded = try await load(type, reader: reader, client: client)
            try await catchUp(type, from: reloaded, reader: reader)
        }
    }

    /// Loads every record of `type` the caller may read, replacing the confirmed local ones;
    /// returns the feed position noted before the first page (changes during the load are
    /// applied again by the catch-up, which is harmless: a change carries the whole record).
    func load(_ type: String, reader: ChangeReader, client: OutpostClient) async throws -> Int64 {
        let position = try await reader.latestPosition()
        // Pages are stored ten at a time, so memory holds at most ten pages and the ids; the
        // position is stored last, so a load cut short is done again by the next pull.
        var ids = Set<String>()
        var cursor: String?
        var unwritten: [[String: JSONValue]] = []
        for _ in 0..<Self.maxPages {
            var query = [URLQueryItem(name: "limit", value: String(Self.pageSize))]
            if let cursor { query.append(URLQueryItem(name: "cursor", value: cursor)) }
            let page = try await client.send(
                .get("/records/\(Request.pathSegment(type))", query: query), operationName: "sync list \(type)"
            ).json()
            for result in page["results"]?.arrayValue ?? [] {
                guard let record = result.objectValue, let id = record["id"]?.stringValue else {
                    throw SyncError("The \(type) list holds a value that is not a record with an id")
                }
                unwritten.append(record)
                ids.insert(id)
            }
            cursor = page["next_cursor"]?.stringValue
            // Ten pages a transaction: each commit waits for the disk.
            if unwritten.count >= Self.pageSize * 10 || cursor == nil {
                try await store(unwritten, type: type)
                unwritten.removeAll(keepingCapacity: true)
            }
            if cursor == nil { break }
        }
        try await store(unwritten, type: type)
        let listed = ids
        let limit = limits.limit(of: type)
        try await database.write { db in
            // Confirmed records the list no longer holds were deleted or are no longer readable.
            for id in try String.fetchAll(
                db, sql: "SELECT id FROM records WHERE type = ? AND state = 'confirmed'", arguments: [type])
            where !listed.contains(id) {
                try db.execute(sql: "DELETE FROM records WHERE type = ? AND id = ?", arguments: [type, id])
            }
            try Self.evict(db, type: type, limit: limit)
            try Self.setPosition(db, type: type, position)
        }
        return position
    }

    /// Stores records of a list as confirmed, in one transaction; records with local writes keep theirs.
    private func store(_ records: [[String: JSONValue]], type: String) async throws {
        guard !records.isEmpty else { return }
        try await database.write { db in
            let withWrites = Set(
                try String.fetchAll(db, sql: "SELECT DISTINCT record_id FROM pending WHERE type = ?", arguments: [type]))
            // A list page carries no version: the one known stays when the fields are the same.
            let upsert = try db.cachedStatement(
                sql: """
                    INSERT INTO records (type, id, fields, version, base, state, error)
                    VALUES (?, ?, ?, NULL, ?, 'confirmed', NULL)
                    ON CONFLICT (type, id) DO UPDATE SET
                        version = CASE WHEN records.fields = excluded.fields THEN records.version END,
                        fields = excluded.fields, base = excluded.base, state = 'confirmed', error = NULL
                    """)
            for record in records {
                let id = record["id"]?.stringValue ?? ""
                if withWrites.contains(id) { continue }
                let text = try RecordRows.encode(record)
                try upsert.execute(arguments: [type, id, text, text])
            }
        }
    }

    /// Evicts the confirmed records of `type` updated longest ago, down to `limit` (``SyncLimits``).
    static func evict(_ db: Database, type: String, limit: Int) throws {
        let count =
            try Int.fetchOne(
                db, sql: "SELECT count(*) FROM records WHERE type = ? AND state = 'confirmed'", arguments: [type]) ?? 0
        guard count > limit else { return }
        try db.execute(
            sql: """
                DELETE FROM records WHERE rowid IN (
                    SELECT rowid FROM records WHERE type = ? AND state = 'confirmed'
                    ORDER BY json_extract(fields, '$.updated_at'), id LIMIT ?)
                """, arguments: [type, count - limit])
    }

    func catchUp(_ type: String, from position: Int64, reader: ChangeReader) async throws {
        let latest = try await reader.latestPosition()
        let database = self.database
        let limit = limits.limit(of: type)
        try await reader.read(after: position, through: latest) { changes, reached in
            try await database.write { db in
                try Self.apply(changes, type: type, reaching: reached, limit: limit, in: db)
            }
        }
    }

    /// Applies a batch of changes and stores the position they reach, in one transaction, then
    /// evicts down to `limit` if the batch may have added records.
    static func apply(_ changes: [FeedChange], type: String, reaching position: Int64, limit: Int, in db: Database) throws {
        for change in changes { try apply(change, type: type, in: db) }
        if changes.contains(where: { $0.kind != "deleted" && $0.kind != "left" }) { try evict(db, type: type, limit: limit) }
        try setPosition(db, type: type, position)
    }

    /// Applies one change to a record without local writes; records with local writes keep theirs.
    static func apply(_ change: FeedChange, type: String, in db: Database) throws {
        if try RecordRows.hasLocalWrites(db, type: type, id: change.id) { return }
        switch change.kind {
        case "created", "updated":
            guard let record = change.record else { return }
            if let known = try RecordRows.fetch(db, type: type, id: change.id)?.record,
                let version = known.version, version >= change.version
            {
                return
            }
            try RecordRows.confirm(db, type: type, server: record, version: change.version)
        default:
            try db.execute(sql: "DELETE FROM records WHERE type = ? AND id = ?", arguments: [type, change.id])
        }
    }

    static func setPosition(_ db: Database, type: String, _ position: Int64) throws {
        try db.cachedStatement(
            sql:
                "INSERT INTO positions (type, position) VALUES (?, ?) ON CONFLICT (type) DO UPDATE SET position = excluded.position"
        ).execute(arguments: [type, String(position)])
    }
}
