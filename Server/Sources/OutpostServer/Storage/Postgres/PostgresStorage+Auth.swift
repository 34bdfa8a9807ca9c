import Foundation
import PostgresNIO

extension PostgresStorage {
    public func createUser(username: String, passwordHash: String?) async throws -> StoredUser {
        let id = "u_" + Identifiers.random()
        let now = Identifiers.nowMilliseconds()
        do {
            try await translatingErrors {
                _ = try await client.query(
                    "INSERT INTO users (id, username, password_hash, created_at) VALUES (\(id), \(username), \(passwordHash), \(now))",
                    logger: logger
                ).collect()
            }
        } catch  where Self.isUniqueViolation(error, constraint: "users_by_username") {
            throw UserWriteFailure.usernameTaken
        }
        return StoredUser(id: id, username: username, passwordHash: passwordHash, entitlements: [], createdAt: now)
    }

    public func createUser(username: String, provider: String, subject: String) async throws -> StoredUser {
        let id = "u_" + Identifiers.random()
        let now = Identifiers.nowMilliseconds()
        do {
            return try await withTransaction { connection in
                try await Self.execute(
                    "INSERT INTO users (id, username, password_hash, created_at) VALUES (\(id), \(username), NULL, \(now))",
                    on: connection)
                // A concurrent first sign-in of the same identity holds this key until it commits;
                // then nothing is inserted here and the transaction (with its user) rolls back.
                let linked = try await Self.rows(
                    """
                    INSERT INTO user_identities (provider, subject, user_id) VALUES (\(provider), \(subject), \(id))
                    ON CONFLICT (provider, subject) DO NOTHING RETURNING user_id
                    """, on: connection)
                if linked.isEmpty {
                    let winner = try await Self.rows(
                        "SELECT user_id FROM user_identities WHERE provider = \(provider) AND subject = \(subject)",
                        on: connection
                    ).first?.string("user_id")
                    throw UserWriteFailure.identityLinked(userID: winner ?? "")
                }
                return StoredUser(id: id, username: username, passwordHash: nil, entitlements: [], createdAt: now)
            }
        } catch  where Self.isUniqueViolation(error, constraint: "users_by_username") {
            throw UserWriteFailure.usernameTaken
        }
    }

    public func user(id: String) async throws -> StoredUser? {
        try await rows("SELECT * FROM users WHERE id = \(id)").first.map(Self.user(from:))
    }

    public func user(username: String) async throws -> StoredUser? {
        try await rows("SELECT * FROM users WHERE lower(username) = lower(\(username))").first.map(Self.user(from:))
    }

    public func setEntitlements(_ entitlements: [String], userID: String) async throws {
        try await execute("UPDATE users SET entitlements = \(StoredText.json(entitlements)) WHERE id = \(userID)")
    }

    public func userID(provider: String, subject: String) async throws -> String? {
        try await rows("SELECT user_id FROM user_identities WHERE provider = \(provider) AND subject = \(subject)").first?
            .string("user_id")
    }

    public func link(provider: String, subject: String, userID: String) async throws {
        try await execute(
            """
            INSERT INTO user_identities (provider, subject, user_id) VALUES (\(provider), \(subject), \(userID))
            ON CONFLICT (provider, subject) DO UPDATE SET user_id = EXCLUDED.user_id
            """)
    }

    public func saveClient(_ client: OAuthClient) async throws {
        try await execute(
            """
            INSERT INTO oauth_clients (id, name, secret_hash, redirect_uris, grants, scopes, created_at)
            VALUES (\(client.id), \(client.name), \(client.secretHash), \(StoredText.json(client.redirectURIs)),
                    \(StoredText.json(client.grants)), \(StoredText.json(client.scopes)), \(client.createdAt))
            ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, secret_hash = EXCLUDED.secret_hash,
                redirect_uris = EXCLUDED.redirect_uris, grants = EXCLUDED.grants, scopes = EXCLUDED.scopes,
                created_at = EXCLUDED.created_at
            """)
    }

    public func client(id: String) async throws -> OAuthClient? {
        try await rows("SELECT * FROM oauth_clients WHERE id = \(id)").first.map(Self.client(from:))
    }

    public func clients() async throws -> [OAuthClient] {
        try await rows("SELECT * FROM oauth_clients ORDER BY created_at, id").map(Self.client(from:))
    }

    public func removeClient(id: String) async throws -> Bool {
        try await withTransaction { connection in
            let removed = try await Self.rows("DELETE FROM oauth_clients WHERE id = \(id) RETURNING id", on: connection)
            try await Self.execute("UPDATE tokens SET state = 'revoked' WHERE client_id = \(id)", on: connection)
            return !removed.isEmpty
        }
    }

    public func saveToken(_ token: StoredToken) async throws {
        try await translatingErrors { try await client.withConnection { try await Self.insert(token, on: $0) } }
    }

    /// Inserts `token`. A user's token first takes a share lock on the user's row (when there is
    /// one), held to the end of the insert's transaction, so that it and a disable
    /// (`UserAdminStorage.disableUser`, which updates that row before it revokes the user's
    /// tokens) are ordered: either the disable waits for this token to commit and then revokes it,
    /// or this insert waits for the disable to commit, and the issuer's check after saving sees the
    /// user disabled and revokes what it saved. Without the lock, a token committed between the
    /// disable's revocation and its commit would stay active.
    static func insert(_ token: StoredToken, on connection: PostgresConnection) async throws {
        try await execute(
            """
            WITH owner AS (SELECT id FROM users WHERE id = \(token.userID) FOR SHARE)
            INSERT INTO tokens (hash, kind, user_id, client_id, scope, family, expires_at, state, created_at)
            SELECT \(token.hash), \(token.kind.rawValue), \(token.userID), \(token.clientID), \(token.scope),
                   \(token.family), \(token.expiresAt), \(token.state), \(Identifiers.nowMilliseconds())
            FROM (SELECT 1) AS one LEFT JOIN owner ON true
            """, on: connection)
    }

    public func rotateToken(hash: String, replacements: [StoredToken], successor: SealedSuccessor?) async throws -> Bool {
        // The UPDATE locks the row: a concurrent rotation of the same token waits for this commit,
        // then finds it rotated (and its successor saved, for the reuse grace window).
        try await withTransaction { connection in
            // The user's row first, as a disable locks it first: the two never wait for each other
            // in opposite orders (see `insert(_:on:)`).
            if let userID = replacements.first?.userID {
                try await Self.execute("SELECT id FROM users WHERE id = \(userID) FOR SHARE", on: connection)
            }
            let rotated = try await Self.rows(
                "UPDATE tokens SET state = 'rotated' WHERE hash = \(hash) AND state = 'active' RETURNING hash", on: connection)
            guard !rotated.isEmpty else { return false }
            for token in replacements { try await Self.insert(token, on: connection) }
            if let successor {
                let now = Identifiers.nowMilliseconds()
                try await Self.execute("DELETE FROM token_successors WHERE expires_at <= \(now)", on: connection)
                try await Self.execute(
                    """
                    INSERT INTO token_successors (hash, sealed, expires_at)
                    VALUES (\(hash), \(successor.sealed), \(successor.expiresAt))
                    """, on: connection)
            }
            return true
        }
    }

    public func token(hash: String) async throws -> StoredToken? {
        return try await rows(TokenByHash(hash: hash)).first
    }

    public func transitionToken(hash: String, from: String, to: String) async throws -> Bool {
        // One UPDATE: of concurrent transitions of one token (on any instance), the first takes the
        // row lock, and the others re-check `state` after it commits and change nothing.
        try await !rows("UPDATE tokens SET state = \(to) WHERE hash = \(hash) AND state = \(from) RETURNING hash").isEmpty
    }

    public func successor(hash: String, now: Int64) async throws -> String? {
        try await rows("SELECT sealed FROM token_successors WHERE hash = \(hash) AND expires_at > \(now)").first?.string(
            "sealed")
    }

    public func revokeFamily(_ family: String) async throws {
        try await execute("UPDATE tokens SET state = 'revoked' WHERE family = \(family)")
    }

    public func saveCode(hash: String, _ code: StoredAuthorizationCode) async throws {
        try await execute(
            """
            INSERT INTO auth_codes (hash, client_id, user_id, redirect_uri, scope, code_challenge, expires_at, family)
            VALUES (\(hash), \(code.clientID), \(code.userID), \(code.redirectURI), \(code.scope), \(code.codeChallenge),
                    \(code.expiresAt), \(code.family))
            """)
    }

    public func useCode(hash: String) async throws -> StoredAuthorizationCode? {
        guard let row = try await rows("UPDATE auth_codes SET used = TRUE WHERE hash = \(hash) AND NOT used RETURNING *").first
        else { return nil }
        return StoredAuthorizationCode(
            clientID: try row.string("client_id"), userID: try row.string("user_id"),
            redirectURI: try row.string("redirect_uri"), scope: try row.string("scope"),
            codeChallenge: try row.optionalString("code_challenge"), expiresAt: try row.int64("expires_at"), used: false,
            family: try row.optionalString("family"))
    }

    public func codeFamily(hash: String) async throws -> String? {
        try await rows("SELECT family FROM auth_codes WHERE hash = \(hash)").first?.optionalString("family")
    }

    public func saveDeviceCode(_ code: StoredDeviceCode) async throws {
        try await execute(
            """
            INSERT INTO device_codes (hash, user_code, client_id, scope, expires_at, interval_seconds)
            VALUES (\(code.hash), \(code.userCode), \(code.clientID), \(code.scope), \(code.expiresAt), \(Int64(code.intervalSeconds)))
            """)
    }

    public func deviceCode(hash: String) async throws -> StoredDeviceCode? {
        try await rows("SELECT * FROM device_codes WHERE hash = \(hash)").first.map(Self.deviceCode(from:))
    }

    public func deviceCode(userCode: String) async throws -> StoredDeviceCode? {
        try await rows("SELECT * FROM device_codes WHERE user_code = \(userCode)").first.map(Self.deviceCode(from:))
    }

    public func updateDeviceCode(hash: String, status: String?, userID: String?, lastPoll: Int64?, interval: Int?) async throws {
        let interval = interval.map(Int64.init)
        try await execute(
            """
            UPDATE device_codes SET status = COALESCE(\(status), status), user_id = COALESCE(\(userID), user_id),
                last_poll = COALESCE(\(lastPoll), last_poll), interval_seconds = COALESCE(\(interval), interval_seconds)
            WHERE hash = \(hash)
            """)
    }

    public func saveSession(hash: String, userID: String, expiresAt: Int64) async throws {
        try await execute("INSERT INTO browser_sessions (hash, user_id, expires_at) VALUES (\(hash), \(userID), \(expiresAt))")
    }

    public func sessionUser(hash: String, now: Int64) async throws -> String? {
        try await rows("SELECT user_id FROM browser_sessions WHERE hash = \(hash) AND expires_at > \(now)").first?.string(
            "user_id")
    }

    public func removeSession(hash: String) async throws {
        try await execute("DELETE FROM browser_sessions WHERE hash = \(hash)")
    }

    public func failures(key: String, since: Int64) async throws -> (count: Int, oldest: Int64?) {
        let row = try await rows(
            "SELECT COUNT(*)::BIGINT AS n, MIN(at) AS oldest FROM auth_failures WHERE key = \(key) AND at > \(since)"
        ).first
        return (Int(try row?.int64("n") ?? 0), try row?.optionalInt64("oldest"))
    }

    public func recordFailure(key: String, at: Int64, expiresAt: Int64) async throws {
        try await execute("DELETE FROM auth_failures WHERE expires_at <= \(at)")
        try await execute("INSERT INTO auth_failures (key, at, expires_at) VALUES (\(key), \(at), \(expiresAt))")
    }

    public func clearFailures(key: String) async throws {
        try await execute("DELETE FROM auth_failures WHERE key = \(key)")
    }

    public func reserveAttempt(_ keys: [(key: String, limit: Int)], at: Int64, since: Int64, expiresAt: Int64)
        async throws -> Int64?
    {
        let names = keys.map(\.key).sorted()
        let limits = Dictionary(keys.map { ($0.key, $0.limit) }) { first, _ in first }
        let full: Int64? = try await withTransaction { connection in
            // A transaction-level advisory lock per key, taken in one statement in a fixed order (no
            // deadlock between two attempts with the same keys): every instance counts a key's attempts
            // one at a time. The locks are held for two statements more: the count and the insert.
            try await Self.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(k, 7)) FROM unnest(\(names)::text[]) WITH ORDINALITY AS t(k, i) ORDER BY i",
                on: connection)
            var oldestOfFull: Int64?
            for row in try await Self.rows(
                """
                SELECT key, COUNT(*)::BIGINT AS n, MIN(at) AS oldest FROM auth_failures
                WHERE key = ANY(\(names)::text[]) AND at > \(since) GROUP BY key
                """, on: connection)
            {
                let key = try row.string("key")
                if try row.int64("n") >= Int64(limits[key] ?? .max), let oldest = try row.optionalInt64("oldest") {
                    oldestOfFull = max(oldestOfFull ?? .min, oldest)
                }
            }
            guard oldestOfFull == nil else { return oldestOfFull }
            try await Self.execute(
                "INSERT INTO auth_failures (key, at, expires_at) SELECT k, \(at), \(expiresAt) FROM unnest(\(names)::text[]) AS k",
                on: connection)
            return nil
        }
        // Expired attempts of any key go after the commit, outside the locks.
        if full == nil { try await execute("DELETE FROM auth_failures WHERE expires_at <= \(at)") }
        return full
    }

    public func releaseAttempt(key: String, at: Int64) async throws {
        try await execute(
            "DELETE FROM auth_failures WHERE ctid IN (SELECT ctid FROM auth_failures WHERE key = \(key) AND at = \(at) LIMIT 1)")
    }

    static func user(from row: PostgresRandomAccessRow) throws -> StoredUser {
        StoredUser(
            id: try row.string("id"), username: try row.string("username"), passwordHash: try row.optionalString("password_hash"),
            entitlements: StoredText.strings(try row.string("entitlements")), createdAt: try row.int64("created_at"),
            disabledAt: try row.optionalInt64("disabled_at"))
    }

    static func client(from row: PostgresRandomAccessRow) throws -> OAuthClient {
        OAuthClient(
            id: try row.string("id"), name: try row.string("name"), secretHash: try row.optionalString("secret_hash"),
            redirectURIs: StoredText.strings(try row.string("redirect_uris")),
            grants: StoredText.strings(try row.string("grants")),
            scopes: StoredText.strings(try row.string("scopes")), createdAt: try row.int64("created_at"))
    }

    static func deviceCode(from row: PostgresRandomAccessRow) throws -> StoredDeviceCode {
        StoredDeviceCode(
            hash: try row.string("hash"), userCode: try row.string("user_code"), clientID: try row.string("client_id"),
            scope: try row.string("scope"), expiresAt: try row.int64("expires_at"),
            intervalSeconds: Int(try row.int64("interval_seconds")), lastPoll: try row.int64("last_poll"),
            status: try row.string("status"), userID: try row.optionalString("user_id"))
    }
}
