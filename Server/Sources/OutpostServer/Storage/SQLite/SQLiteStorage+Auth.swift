import Foundation
import SQLiteNIO

/// Why ``AuthStorage/createUser(username:passwordHash:)`` refused to write.
public enum UserWriteFailure: Error, Sendable, CustomStringConvertible {
    case usernameTaken
    /// The provider identity belongs to this user already (a concurrent first sign-in won).
    case identityLinked(userID: String)
    /// No unexpired invite has the code given (unknown, spent or expired).
    case inviteInvalid

    public var description: String {
        switch self {
        case .usernameTaken: "That username is taken (usernames ignore case); choose another"
        case .identityLinked: "That provider identity is linked to a user already"
        case .inviteInvalid: "That invite code is unknown, spent or expired; ask the operator for a new one"
        }
    }
}

extension SQLiteStorage {
    public func createUser(username: String, passwordHash: String?) async throws -> StoredUser {
        let id = "u_" + Identifiers.random()
        let now = Identifiers.nowMilliseconds()
        do {
            _ = try await connection.query(
                "INSERT INTO users (id, username, password_hash, created_at) VALUES (?, ?, ?, ?)",
                [.text(id), .text(username), passwordHash.map(SQLiteData.text) ?? .null, .integer(Int(now))])
        } catch let error as SQLiteFailure where error.isUniqueConstraint {
            throw UserWriteFailure.usernameTaken
        }
        return StoredUser(id: id, username: username, passwordHash: passwordHash, entitlements: [], createdAt: now)
    }

    public func createUser(username: String, provider: String, subject: String) async throws -> StoredUser {
        let id = "u_" + Identifiers.random()
        let now = Identifiers.nowMilliseconds()
        return try await withTransaction { connection in
            // Inside BEGIN IMMEDIATE: no other writer runs between this check and the inserts.
            if let linked = try await connection.query(
                "SELECT user_id FROM user_identities WHERE provider = ? AND subject = ?", [.text(provider), .text(subject)]
            ).first?.column("user_id")?.string {
                throw UserWriteFailure.identityLinked(userID: linked)
            }
            do {
                _ = try await connection.query(
                    "INSERT INTO users (id, username, password_hash, created_at) VALUES (?, ?, NULL, ?)",
                    [.text(id), .text(username), .integer(Int(now))])
            } catch let error as SQLiteFailure where error.isUniqueConstraint {
                throw UserWriteFailure.usernameTaken
            }
            _ = try await connection.query(
                "INSERT INTO user_identities (provider, subject, user_id) VALUES (?, ?, ?)",
                [.text(provider), .text(subject), .text(id)])
            return StoredUser(id: id, username: username, passwordHash: nil, entitlements: [], createdAt: now)
        }
    }

    public func user(id: String) async throws -> StoredUser? {
        try await reader.query("SELECT * FROM users WHERE id = ?", [.text(id)]).first.map(Self.user(from:))
    }

    public func user(username: String) async throws -> StoredUser? {
        try await connection.query("SELECT * FROM users WHERE username = ?", [.text(username)]).first.map(Self.user(from:))
    }

    public func setEntitlements(_ entitlements: [String], userID: String) async throws {
        _ = try await connection.query(
            "UPDATE users SET entitlements = ? WHERE id = ?", [.text(StoredText.json(entitlements)), .text(userID)])
    }

    public func userID(provider: String, subject: String) async throws -> String? {
        try await connection.query(
            "SELECT user_id FROM user_identities WHERE provider = ? AND subject = ?", [.text(provider), .text(subject)]
        ).first?.column("user_id")?.string
    }

    public func link(provider: String, subject: String, userID: String) async throws {
        _ = try await connection.query(
            "INSERT OR REPLACE INTO user_identities (provider, subject, user_id) VALUES (?, ?, ?)",
            [.text(provider), .text(subject), .text(userID)])
    }

    public func saveClient(_ client: OAuthClient) async throws {
        _ = try await connection.query(
            "INSERT OR REPLACE INTO oauth_clients (id, name, secret_hash, redirect_uris, grants, scopes, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                .text(client.id), .text(client.name), client.secretHash.map(SQLiteData.text) ?? .null,
                .text(StoredText.json(client.redirectURIs)), .text(StoredText.json(client.grants)),
                .text(StoredText.json(client.scopes)),
                .integer(Int(client.createdAt)),
            ])
    }

    public func client(id: String) async throws -> OAuthClient? {
        try await reader.query("SELECT * FROM oauth_clients WHERE id = ?", [.text(id)]).first.map(Self.client(from:))
    }

    public func clients() async throws -> [OAuthClient] {
        try await connection.query("SELECT * FROM oauth_clients ORDER BY created_at").map(Self.client(from:))
    }

    public func removeClient(id: String) async throws -> Bool {
        let rows = try await connection.query("DELETE FROM oauth_clients WHERE id = ? RETURNING id", [.text(id)])
        _ = try await connection.query("UPDATE tokens SET state = 'revoked' WHERE client_id = ?", [.text(id)])
        return !rows.isEmpty
    }

    public func saveToken(_ token: StoredToken) async throws {
        try await Self.insert(token, on: connection)
    }

    static func insert(_ token: StoredToken, on connection: BusyBoundedConnection) async throws {
        _ = try await connection.query(
            "INSERT INTO tokens (hash, kind, user_id, client_id, scope, family, expires_at, state, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                .text(token.hash), .text(token.kind.rawValue), token.userID.map(SQLiteData.text) ?? .null, .text(token.clientID),
                .text(token.scope), .text(token.family), .integer(Int(token.expiresAt)), .text(token.state),
                .integer(Int(Identifiers.nowMilliseconds())),
            ])
    }

    public func token(hash: String) async throws -> StoredToken? {
        // Runs for every request with a bearer token: a key lookup, read in place on the caller's
        // thread (see pointRead), its columns read straight from the row.
        try await pointRead(
            "SELECT kind, user_id, client_id, scope, family, expires_at, state FROM tokens WHERE hash = ?", [.text(hash)]
        ) { rows in
            guard try rows.next() else { return nil }
            return StoredToken(
                hash: hash, kind: StoredToken.Kind(rawValue: rows.text(0)) ?? .access,
                userID: rows.isNull(1) ? nil : rows.text(1), clientID: rows.text(2), scope: rows.text(3), family: rows.text(4),
                expiresAt: rows.integer(5), state: rows.isNull(6) ? "revoked" : rows.text(6))
        }
    }

    public func transitionToken(hash: String, from: String, to: String) async throws -> Bool {
        let rows = try await connection.query(
            "UPDATE tokens SET state = ? WHERE hash = ? AND state = ? RETURNING hash", [.text(to), .text(hash), .text(from)])
        return !rows.isEmpty
    }

    public func rotateToken(hash: String, replacements: [StoredToken], successor: SealedSuccessor?) async throws -> Bool {
        try await withTransaction { connection in
            let rotated = try await connection.query(
                "UPDATE tokens SET state = 'rotated' WHERE hash = ? AND state = 'active' RETURNING hash", [.text(hash)])
            guard !rotated.isEmpty else { return false }
            for token in replacements { try await Self.insert(token, on: connection) }
            if let successor {
                let now = Identifiers.nowMilliseconds()
                _ = try await connection.query("DELETE FROM token_successors WHERE expires_at <= ?", [.integer(Int(now))])
                _ = try await connection.query(
                    "INSERT INTO token_successors (hash, sealed, expires_at) VALUES (?, ?, ?)",
                    [.text(hash), .text(successor.sealed), .integer(Int(successor.expiresAt))])
            }
            return true
        }
    }

    public func successor(hash: String, now: Int64) async throws -> String? {
        try await connection.query(
            "SELECT sealed FROM token_successors WHERE hash = ? AND expires_at > ?", [.text(hash), .integer(Int(now))]
        ).first?.column("sealed")?.string
    }

    public func revokeFamily(_ family: String) async throws {
        _ = try await connection.query("UPDATE tokens SET state = 'revoked' WHERE family = ?", [.text(family)])
    }

    public func saveCode(hash: String, _ code: StoredAuthorizationCode) async throws {
        _ = try await connection.query(
            "INSERT INTO auth_codes (hash, client_id, user_id, redirect_uri, scope, code_challenge, expires_at, family) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                .text(hash), .text(code.clientID), .text(code.userID), .text(code.redirectURI), .text(code.scope),
                code.codeChallenge.map(SQLiteData.text) ?? .null, .integer(Int(code.expiresAt)),
                code.family.map(SQLiteData.text) ?? .null,
            ])
    }

    public func useCode(hash: String) async throws -> StoredAuthorizationCode? {
        guard
            let row = try await connection.query(
                "UPDATE auth_codes SET used = 1 WHERE hash = ? AND used = 0 RETURNING *", [.text(hash)]
            ).first
        else { return nil }
        return StoredAuthorizationCode(
            clientID: row.column("client_id")?.string ?? "", userID: row.column("user_id")?.string ?? "",
            redirectURI: row.column("redirect_uri")?.string ?? "", scope: row.column("scope")?.string ?? "",
            codeChallenge: row.column("code_challenge")?.string, expiresAt: Int64(row.column("expires_at")?.integer ?? 0),
            used: false, family: row.column("family")?.string)
    }

    public func codeFamily(hash: String) async throws -> String? {
        try await connection.query("SELECT family FROM auth_codes WHERE hash = ?", [.text(hash)]).first?.column("family")?.string
    }

    public func saveDeviceCode(_ code: StoredDeviceCode) async throws {
        _ = try await connection.query(
            "INSERT INTO device_codes (hash, user_code, client_id, scope, expires_at, interval_seconds) VALUES (?, ?, ?, ?, ?, ?)",
            [
                .text(code.hash), .text(code.userCode), .text(code.clientID), .text(code.scope), .integer(Int(code.expiresAt)),
                .integer(code.intervalSeconds),
            ])
    }

    public func deviceCode(hash: String) async throws -> StoredDeviceCode? {
        try await connection.query("SELECT * FROM device_codes WHERE hash = ?", [.text(hash)]).first.map(Self.deviceCode(from:))
    }

    public func deviceCode(userCode: String) async throws -> StoredDeviceCode? {
        try await connection.query("SELECT * FROM device_codes WHERE user_code = ?", [.text(userCode)]).first.map(
            Self.deviceCode(from:))
    }

    public func updateDeviceCode(hash: String, status: String?, userID: String?, lastPoll: Int64?, interval: Int?) async throws {
        _ = try await connection.query(
            """
            UPDATE device_codes SET status = COALESCE(?, status), user_id = COALESCE(?, user_id),
                last_poll = COALESCE(?, last_poll), interval_seconds = COALESCE(?, interval_seconds) WHERE hash = ?
            """,
            [
                status.map(SQLiteData.text) ?? .null, userID.map(SQLiteData.text) ?? .null,
                lastPoll.map { .integer(Int($0)) } ?? .null,
                interval.map(SQLiteData.integer) ?? .null, .text(hash),
            ])
    }

    public func saveSession(hash: String, userID: String, expiresAt: Int64) async throws {
        _ = try await connection.query(
            "INSERT INTO browser_sessions (hash, user_id, expires_at) VALUES (?, ?, ?)",
            [.text(hash), .text(userID), .integer(Int(expiresAt))])
    }

    public func sessionUser(hash: String, now: Int64) async throws -> String? {
        try await connection.query(
            "SELECT user_id FROM browser_sessions WHERE hash = ? AND expires_at > ?", [.text(hash), .integer(Int(now))]
        ).first?.column("user_id")?.string
    }

    public func removeSession(hash: String) async throws {
        _ = try await connection.query("DELETE FROM browser_sessions WHERE hash = ?", [.text(hash)])
    }

    public func failures(key: String, since: Int64) async throws -> (count: Int, oldest: Int64?) {
        let row = try await connection.query(
            "SELECT COUNT(*) AS n, MIN(at) AS oldest FROM auth_failures WHERE key = ? AND at > ?",
            [.text(key), .integer(Int(since))]
        ).first
        return (row?.column("n")?.integer ?? 0, row?.column("oldest")?.integer.map(Int64.init))
    }

    public func recordFailure(key: String, at: Int64, expiresAt: Int64) async throws {
        _ = try await connection.query("DELETE FROM auth_failures WHERE expires_at <= ?", [.integer(Int(at))])
        _ = try await connection.query(
            "INSERT INTO auth_failures (key, at, expires_at) VALUES (?, ?, ?)",
            [.text(key), .integer(Int(at)), .integer(Int(expiresAt))])
    }

    public func clearFailures(key: String) async throws {
        _ = try await connection.query("DELETE FROM auth_failures WHERE key = ?", [.text(key)])
    }

    public func reserveAttempt(_ keys: [(key: String, limit: Int)], at: Int64, since: Int64, expiresAt: Int64)
        async throws -> Int64?
    {
        try await withTransaction { connection in
            // Inside BEGIN IMMEDIATE: no other attempt is counted between these counts and the inserts.
            var full: Int64?
            for (key, limit) in keys {
                let row = try await connection.query(
                    "SELECT COUNT(*) AS n, MIN(at) AS oldest FROM auth_failures WHERE key = ? AND at > ?",
                    [.text(key), .integer(Int(since))]
                ).first
                if let count = row?.column("n")?.integer, count >= limit, let oldest = row?.column("oldest")?.integer {
                    full = max(full ?? .min, Int64(oldest))
                }
            }
            guard full == nil else { return full }
            _ = try await connection.query("DELETE FROM auth_failures WHERE expires_at <= ?", [.integer(Int(at))])
            for (key, _) in keys {
                _ = try await connection.query(
                    "INSERT INTO auth_failures (key, at, expires_at) VALUES (?, ?, ?)",
                    [.text(key), .integer(Int(at)), .integer(Int(expiresAt))])
            }
            return nil
        }
    }

    public func releaseAttempt(key: String, at: Int64) async throws {
        _ = try await connection.query(
            "DELETE FROM auth_failures WHERE rowid IN (SELECT rowid FROM auth_failures WHERE key = ? AND at = ? LIMIT 1)",
            [.text(key), .integer(Int(at))])
    }

    // MARK: Rows

    static func user(from row: StatementRow) -> StoredUser {
        StoredUser(
            id: row.column("id")?.string ?? "", username: row.column("username")?.string ?? "",
            passwordHash: row.column("password_hash")?.string,
            entitlements: StoredText.strings(row.column("entitlements")?.string),
            createdAt: Int64(row.column("created_at")?.integer ?? 0),
            disabledAt: row.column("disabled_at")?.integer.map(Int64.init))
    }

    static func client(from row: StatementRow) -> OAuthClient {
        OAuthClient(
            id: row.column("id")?.string ?? "", name: row.column("name")?.string ?? "",
            secretHash: row.column("secret_hash")?.string,
            redirectURIs: StoredText.strings(row.column("redirect_uris")?.string),
            grants: StoredText.strings(row.column("grants")?.string),
            scopes: StoredText.strings(row.column("scopes")?.string), createdAt: Int64(row.column("created_at")?.integer ?? 0))
    }

    static func deviceCode(from row: StatementRow) -> StoredDeviceCode {
        StoredDeviceCode(
            hash: row.column("hash")?.string ?? "", userCode: row.column("user_code")?.string ?? "",
            clientID: row.column("client_id")?.string ?? "", scope: row.column("scope")?.string ?? "",
            expiresAt: Int64(row.column("expires_at")?.integer ?? 0),
            intervalSeconds: row.column("interval_seconds")?.integer ?? 5,
            lastPoll: Int64(row.column("last_poll")?.integer ?? 0), status: row.column("status")?.string ?? "pending",
            userID: row.column("user_id")?.string)
    }
}
