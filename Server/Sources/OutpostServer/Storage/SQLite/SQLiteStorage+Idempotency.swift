import Foundation
@_spi(OutpostInternal) public import OutpostCore
import SQLiteNIO

extension SQLiteStorage {
    /// Migration 6: one row per (caller, key). A row is `in_progress` while a lambda or
    /// handler runs (`claim` names the request holding it, until `locked_until`), then `done` with
    /// the response. Rows past `expires_at` are deleted as requests come.
    static let idempotencyMigration = [
        """
        CREATE TABLE idempotency_keys (
            caller TEXT NOT NULL,
            key TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            state TEXT NOT NULL,
            claim TEXT NOT NULL,
            locked_until INTEGER NOT NULL,
            status INTEGER,
            headers TEXT,
            body BLOB,
            created_at INTEGER NOT NULL,
            expires_at INTEGER NOT NULL,
            PRIMARY KEY (caller, key)
        )
        """,
        "CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (expires_at)",
    ]

    public func createRecord(
        type: String, fields: [String: JSONValue], owner: String?, isPrivate: Bool, key: IdempotencyKey,
        lifetime: Duration,
        respond: @Sendable (StoredRecord) -> StoredResponse
    ) async throws -> (claim: IdempotencyClaim, response: StoredResponse?) {
        // The transaction runs on the writer connection, one at a time in this process; BEGIN
        // IMMEDIATE takes the database's write lock, so servers sharing the file take turns too.
        try await withTransaction { writer in
            let now = Identifiers.nowMilliseconds()
            try await purgeIdempotencyKeys(now: now, on: writer)
            if let existing = try await idempotencyRow(key, on: writer) {
                return (IdempotencyRow.classify(existing, key: key, now: now).claim, nil)
            }
            let record = try await insertRecord(
                type: type, fields: fields, owner: owner, isPrivate: isPrivate, now: now, on: writer)
            let response = respond(record)
            try await insertIdempotentResponse(response, key: key, now: now, lifetime: lifetime, on: writer)
            return (.claimed(token: ""), response)
        }
    }

    /// Keeps `response` under `key` as a finished request's (inside the caller's transaction).
    func insertIdempotentResponse(
        _ response: StoredResponse, key: IdempotencyKey, now: Int64, lifetime: Duration, on writer: BusyBoundedConnection
    ) async throws {
        _ = try await writer.query(
            """
            INSERT INTO idempotency_keys
                (caller, key, fingerprint, state, claim, locked_until, status, headers, body, created_at, expires_at)
            VALUES (?, ?, ?, 'done', '', 0, ?, ?, ?, ?, ?)
            """,
            [
                .text(key.caller), .text(key.key), .text(key.fingerprint), .integer(response.status),
                .text(IdempotencyRow.headerText(response.headers)), .blob(.init(bytes: response.body)), .integer(Int(now)),
                .integer(Int(now + IdempotencyRow.milliseconds(lifetime))),
            ])
    }

    public func claimIdempotencyKey(_ key: IdempotencyKey, lease: Duration, lifetime: Duration) async throws
        -> IdempotencyClaim
    {
        for _ in 0..<3 {
            let now = Identifiers.nowMilliseconds()
            try await purgeIdempotencyKeys(now: now, on: connection)
            let token = Identifiers.random()
            let inserted = try await connection.query(
                """
                INSERT INTO idempotency_keys (caller, key, fingerprint, state, claim, locked_until, created_at, expires_at)
                VALUES (?, ?, ?, 'in_progress', ?, ?, ?, ?) ON CONFLICT (caller, key) DO NOTHING RETURNING claim
                """,
                [
                    .text(key.caller), .text(key.key), .text(key.fingerprint), .text(token),
                    .integer(Int(now + IdempotencyRow.milliseconds(lease))), .integer(Int(now)),
                    .integer(Int(now + IdempotencyRow.milliseconds(lifetime))),
                ])
            if !inserted.isEmpty { return .claimed(token: token) }
            guard let existing = try await idempotencyRow(key, on: connection) else { continue }  // expired meanwhile
            let (claim, stale) = IdempotencyRow.classify(existing, key: key, now: now)
            guard stale else { return claim }
            // The request holding the key stopped without finishing (its server died): take over.
            let taken = try await connection.query(
                """
                UPDATE idempotency_keys SET claim = ?, locked_until = ?
                WHERE caller = ? AND key = ? AND state = 'in_progress' AND claim = ? RETURNING claim
                """,
                [
                    .text(token), .integer(Int(now + IdempotencyRow.milliseconds(lease))), .text(key.caller), .text(key.key),
                    .text(existing.claim),
                ])
            return taken.isEmpty ? .inProgress : .claimed(token: token)
        }
        return .inProgress
    }

    public func completeIdempotencyKey(_ key: IdempotencyKey, token: String, response: StoredResponse, lifetime: Duration)
        async throws
    {
        let now = Identifiers.nowMilliseconds()
        _ = try await connection.query(
            """
            UPDATE idempotency_keys SET state = 'done', status = ?, headers = ?, body = ?, expires_at = ?
            WHERE caller = ? AND key = ? AND claim = ? AND state = 'in_progress'
            """,
            [
                .integer(response.status), .text(IdempotencyRow.headerText(response.headers)), .blob(.init(bytes: response.body)),
                .integer(Int(now + IdempotencyRow.milliseconds(lifetime))), .text(key.caller), .text(key.key), .text(token),
            ])
    }

    public func releaseIdempotencyKey(_ key: IdempotencyKey, token: String) async throws {
        _ = try await connection.query(
            "DELETE FROM idempotency_keys WHERE caller = ? AND key = ? AND claim = ? AND state = 'in_progress'",
            [.text(key.caller), .text(key.key), .text(token)])
    }

    // MARK: Helpers

    func idempotencyRow(_ key: IdempotencyKey, on connection: BusyBoundedConnection) async throws -> IdempotencyRow? {
        let rows = try await connection.query(
            """
            SELECT fingerprint, state, claim, locked_until, status, headers, body FROM idempotency_keys
            WHERE caller = ? AND key = ?
            """,
            [.text(key.caller), .text(key.key)])
        guard let row = rows.first else { return nil }
        var response: StoredResponse?
        if let status = row.column("status")?.integer, let headers = row.column("headers")?.string {
            let body = row.column("body")?.blob.map { Data($0.readableBytesView) } ?? Data()
            response = StoredResponse(status: status, headers: IdempotencyRow.headers(fromText: headers), body: body)
        }
        return IdempotencyRow(
            fingerprint: row.column("fingerprint")?.string ?? "", state: row.column("state")?.string ?? "",
            claim: row.column("claim")?.string ?? "", lockedUntil: Int64(row.column("locked_until")?.integer ?? 0),
            response: response)
    }

    func purgeIdempotencyKeys(now: Int64, on connection: BusyBoundedConnection) async throws {
        _ = try await connection.query("DELETE FROM idempotency_keys WHERE expires_at < ?", [.integer(Int(now))])
    }
}
