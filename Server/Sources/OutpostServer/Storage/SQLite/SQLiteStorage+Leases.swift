import SQLiteNIO

extension SQLiteStorage: LeaseStorage {
    static let leasesMigration: [String] = [
        "CREATE TABLE leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at INTEGER NOT NULL, state TEXT NOT NULL)"
    ]

    public func acquireLease(_ name: String, holder: String, now: Int64, expiresAt: Int64, initialState: String)
        async throws -> String?
    {
        try await withTransaction { connection in
            let rows = try await connection.query(
                """
                INSERT INTO leases (name, holder, expires_at, state) VALUES (?, ?, ?, ?)
                ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
                WHERE leases.expires_at <= ? OR leases.holder = excluded.holder
                RETURNING state
                """,
                [.text(name), .text(holder), .integer(Int(expiresAt)), .text(initialState), .integer(Int(now))])
            return rows.first?.column("state")?.string
        }
    }

    public func updateLease(_ name: String, holder: String, state: String, expiresAt: Int64) async throws -> Bool {
        try await withTransaction { connection in
            let rows = try await connection.query(
                "UPDATE leases SET state = ?, expires_at = ? WHERE name = ? AND holder = ? RETURNING name",
                [.text(state), .integer(Int(expiresAt)), .text(name), .text(holder)])
            return !rows.isEmpty
        }
    }

    public func releaseLease(_ name: String, holder: String) async throws {
        try await withTransaction { connection in
            _ = try await connection.query(
                "UPDATE leases SET expires_at = 0 WHERE name = ? AND holder = ?", [.text(name), .text(holder)])
        }
    }
}
