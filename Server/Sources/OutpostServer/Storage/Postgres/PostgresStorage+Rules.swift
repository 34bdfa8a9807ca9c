import PostgresNIO

extension PostgresStorage {
    /// Migration 4: access rules per record type and operation, and users' roles (SQLite's 9).
    static let rulesSchema: [String] = [
        """
        CREATE TABLE access_rules (
            type TEXT NOT NULL,
            operation TEXT NOT NULL,
            expression TEXT NOT NULL,
            updated_at BIGINT NOT NULL,
            PRIMARY KEY (type, operation)
        )
        """,
        "CREATE TABLE user_roles (user_id TEXT NOT NULL, role TEXT NOT NULL, PRIMARY KEY (user_id, role))",
    ]

    public func rules() async throws -> [StoredRule] {
        try await rows("SELECT type, operation, expression, updated_at FROM access_rules ORDER BY type, operation").map { row in
            StoredRule(
                type: try row.string("type"), operation: try row.string("operation"),
                expression: try row.string("expression"), updatedAt: try row.int64("updated_at"))
        }
    }

    public func setRules(type: String, _ rules: [String: String]) async throws {
        let now = Identifiers.nowMilliseconds()
        try await withTransaction { connection in
            try await Self.execute("DELETE FROM access_rules WHERE type = \(type)", on: connection)
            for (operation, expression) in rules.sorted(by: { $0.key < $1.key }) {
                try await Self.execute(
                    """
                    INSERT INTO access_rules (type, operation, expression, updated_at)
                    VALUES (\(type), \(operation), \(expression), \(now))
                    """, on: connection)
            }
        }
    }

    public func setRule(type: String, operation: String, expression: String) async throws {
        let now = Identifiers.nowMilliseconds()
        try await execute(
            """
            INSERT INTO access_rules (type, operation, expression, updated_at) VALUES (\(type), \(operation), \(expression), \(now))
            ON CONFLICT (type, operation) DO UPDATE SET expression = excluded.expression, updated_at = excluded.updated_at
            """)
    }

    public func removeRule(type: String, operation: String) async throws -> Bool {
        !(try await rows("DELETE FROM access_rules WHERE type = \(type) AND operation = \(operation) RETURNING type")
            .isEmpty)
    }

    public func addRole(_ role: String, userID: String) async throws {
        try await execute("INSERT INTO user_roles (user_id, role) VALUES (\(userID), \(role)) ON CONFLICT DO NOTHING")
    }

    public func removeRole(_ role: String, userID: String) async throws -> Bool {
        !(try await rows("DELETE FROM user_roles WHERE user_id = \(userID) AND role = \(role) RETURNING role").isEmpty)
    }

    public func roles(userID: String) async throws -> [String] {
        try await rows("SELECT role FROM user_roles WHERE user_id = \(userID) ORDER BY role").map { try $0.string("role") }
    }
}
