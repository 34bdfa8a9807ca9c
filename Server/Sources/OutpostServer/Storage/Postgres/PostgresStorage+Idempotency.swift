import Foundation
@_spi(OutpostInternal) public import OutpostCore
import PostgresNIO

extension PostgresStorage {
    public func createRecord(
        type: String, fields: [String: JSONValue], owner: String?, isPrivate: Bool, key: IdempotencyKey,
        lifetime: Duration,
        respond: @Sendable (StoredRecord) -> StoredResponse
    ) async throws -> (claim: IdempotencyClaim, response: StoredResponse?) {
        try await withTransaction { connection in
            let now = Identifiers.nowMilliseconds()
            // The key first, so a concurrent request with it waits for this one's response.
            if let claim = try await Self.claimIdempotencyKey(key, now: now, lifetime: lifetime, on: connection) {
                return (claim, nil)
            }
            let record = try await Self.insertRecord(
                type: type, fields: fields, owner: owner, isPrivate: isPrivate, now: now, on: connection)
            let response = respond(record)
            try await Self.finishIdempotencyKey(key, response: response, on: connection)
            return (.claimed(token: ""), response)
        }
    }

    /// Claims `key` inside the caller's transaction: `nil` when it is this request's, or what an
    /// earlier request with it holds. A concurrent request with the same key (on any instance)
    /// waits on the claim until the transaction ends, then finds the stored response.
    static func claimIdempotencyKey(_ key: IdempotencyKey, now: Int64, lifetime: Duration, on connection: PostgresConnection)
        async throws -> IdempotencyClaim?
    {
        let expires = now + IdempotencyRow.milliseconds(lifetime)
        try await execute("DELETE FROM idempotency_keys WHERE expires_at < \(now)", on: connection)
        let claimed = try await rows(
            """
            INSERT INTO idempotency_keys (caller, key, fingerprint, state, claim, locked_until, created_at, expires_at)
            VALUES (\(key.caller), \(key.key), \(key.fingerprint), 'in_progress', '', 0, \(now), \(expires))
            ON CONFLICT (caller, key) DO NOTHING RETURNING caller
            """, on: connection)
        if !claimed.isEmpty { return nil }
        guard let existing = try await idempotencyRow(key, on: connection) else { return .inProgress }
        return IdempotencyRow.classify(existing, key: key, now: now).claim
    }

    /// Stores the response of a key claimed by ``claimIdempotencyKey(_:now:lifetime:on:)``.
    static func finishIdempotencyKey(_ key: IdempotencyKey, response: StoredResponse, on connection: PostgresConnection)
        async throws
    {
        try await execute(
            """
            UPDATE idempotency_keys SET state = 'done', status = \(Int64(response.status)),
                headers = \(IdempotencyRow.headerText(response.headers)), body = \(response.body)
            WHERE caller = \(key.caller) AND key = \(key.key)
            """, on: connection)
    }

    public func claimIdempotencyKey(_ key: IdempotencyKey, lease: Duration, lifetime: Duration) async throws
        -> IdempotencyClaim
    {
        for _ in 0..<3 {
            let now = Identifiers.nowMilliseconds()
            try await execute("DELETE FROM idempotency_keys WHERE expires_at < \(now)")
            let token = Identifiers.random()
            let lockedUntil = now + IdempotencyRow.milliseconds(lease)
            let inserted = try await rows(
                """
                INSERT INTO idempotency_keys (caller, key, fingerprint, state, claim, locked_until, created_at, expires_at)
                VALUES (\(key.caller), \(key.key), \(key.fingerprint), 'in_progress', \(token), \(lockedUntil), \(now),
                        \(now + IdempotencyRow.milliseconds(lifetime)))
                ON CONFLICT (caller, key) DO NOTHING RETURNING claim
                """)
            if !inserted.isEmpty { return .claimed(token: token) }
            guard let existing = try await withTransaction({ try await Self.idempotencyRow(key, on: $0) }) else { continue }
            let (claim, stale) = IdempotencyRow.classify(existing, key: key, now: now)
            guard stale else { return claim }
            // The request holding the key stopped without finishing (its server died): take over.
            let taken = try await rows(
                """
                UPDATE idempotency_keys SET claim = \(token), locked_until = \(lockedUntil)
                WHERE caller = \(key.caller) AND key = \(key.key) AND state = 'in_progress' AND claim = \(existing.claim)
                RETURNING claim
                """)
            return taken.isEmpty ? .inProgress : .claimed(token: token)
        }
        return .inProgress
    }

    public func completeIdempotencyKey(_ key: IdempotencyKey, token: String, response: StoredResponse, lifetime: Duration)
        async throws
    {
        let expires = Identifiers.nowMilliseconds() + IdempotencyRow.milliseconds(lifetime)
        try await execute(
            """
            UPDATE idempotency_keys SET state = 'done', status = \(Int64(response.status)),
                headers = \(IdempotencyRow.headerText(response.headers)), body = \(response.body), expires_at = \(expires)
            WHERE caller = \(key.caller) AND key = \(key.key) AND claim = \(token) AND state = 'in_progress'
            """)
    }

    public func releaseIdempotencyKey(_ key: IdempotencyKey, token: String) async throws {
        try await execute(
            """
            DELETE FROM idempotency_keys
            WHERE caller = \(key.caller) AND key = \(key.key) AND claim = \(token) AND state = 'in_progress'
            """)
    }

    static func idempotencyRow(_ key: IdempotencyKey, on connection: PostgresConnection) async throws -> IdempotencyRow? {
        guard
            let row = try await rows(
                """
                SELECT fingerprint, state, claim, locked_until, status, headers, body FROM idempotency_keys
                WHERE caller = \(key.caller) AND key = \(key.key)
                """, on: connection
            ).first
        else { return nil }
        var response: StoredResponse?
        if let status = try row.optionalInt64("status"), let headers = try row.optionalString("headers") {
            let body = try row["body"].decode(Data?.self) ?? Data()
            response = StoredResponse(status: Int(status), headers: IdempotencyRow.headers(fromText: headers), body: body)
        }
        return IdempotencyRow(
            fingerprint: try row.string("fingerprint"), state: try row.string("state"), claim: try row.string("claim"),
            lockedUntil: try row.int64("locked_until"), response: response)
    }
}
