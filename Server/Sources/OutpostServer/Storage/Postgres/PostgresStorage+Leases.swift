import PostgresNIO

extension PostgresStorage: LeaseStorage {
    static let leasesSchema: [String] = [
        "CREATE TABLE leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at BIGINT NOT NULL, state TEXT NOT NULL)"
    ]

    public func acquireLease(_ name: String, holder: String, now: Int64, expiresAt: Int64, initialState: String)
        async throws -> String?
    {
        // One statement: the row lock of ON CONFLICT makes two instances' takes of one lease serial.
        try await rows(
            """
            INSERT INTO leases (name, holder, expires_at, state) VALUES (\(name), \(holder), \(expiresAt), \(initialState))
            ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
            WHERE leases.expires_at <= \(now) OR leases.holder = EXCLUDED.holder
            RETURNING state
            """
        ).first?["state"].decode(String.self)
    }

    public func updateLease(_ name: String, holder: String, state: String, expiresAt: Int64) async throws -> Bool {
        try await !rows(
            """
            UPDATE leases SET state = \(state), expires_at = \(expiresAt) WHERE name = \(name) AND holder = \(holder)
            RETURNING name
            """
        ).isEmpty
    }

    public func releaseLease(_ name: String, holder: String) async throws {
        _ = try await rows("UPDATE leases SET expires_at = 0 WHERE name = \(name) AND holder = \(holder) RETURNING name")
    }
}
