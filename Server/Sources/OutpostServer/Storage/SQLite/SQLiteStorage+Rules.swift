import SQLiteNIO

extension SQLiteStorage {
    /// Migration 9: access rules per record type and operation, and users' roles.
    static let rulesMigration: [String] = [
        """
        CREATE TABLE access_rules (
            type TEXT NOT NULL,
            operation TEXT NOT NULL,
            expression TEXT NOT NULL,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (type, operation)
        )
        """,
        "CREATE TABLE user_roles (user_id TEXT NOT NULL, role TEXT NOT NULL, PRIMARY KEY (user_id, role))",
    ]

    public func rules() async throws -> [StoredRule] {
        try await reader.query(
            "SELECT type, operation, expression, updated_at FROM access_rules ORDER BY type, operation", []
        ).map { row in
            StoredRule(
                type: row.column("type")?.string ?? "", operation: row.column("operation")?.string ?? "",
                expression: row.column("expression")?.string ?? "",
                updatedAt: Int64(row.column("updated_at")?.integer ?? 0))
        }
    }

    public func setRules(type: String, _ rules: [String: String]) async throws {
        let now = Int(Identifiers.nowMilliseconds())
        try await withTransaction { connection in
            _ = try await connection.query("DELETE FROM access_rules WHERE type = ?", [.text(type)])
            for (operation, expression) in rules.sorted(by: { $0.key < $1.key }) {
                _ = try await connection.query(
                    "INSERT INTO access_rules (type, operation, expression, updated_at) VALUES (?, ?, ?, ?)",
                    [.text(type), .text(operation), .text(expression), .integer(now)])
            }
        }
    }

    public func setRule(type: String, operation: String, expression: String) async throws {
        _ = try await connection.query(
            """
            INSERT INTO access_rules (type, operation, expression, updated_at) VALUES (?, ?, ?, ?)
            ON CONFLICT (type, operation) DO UPDATE SET expression = excluded.expression, updated_at = excluded.updated_at
            """,
            [.text(type), .text(operation), .text(expression), .integer(Int(Identifiers.nowMilliseconds()))])
    }

    public func removeRule(type: String, operation: String) async throws -> Bool {
        let rows = try await connection.query(
            "DELETE FROM access_rules WHERE type = ? AND operation = ? RETURNING type", [.text(type), .text(operation)])
        return !rows.isEmpty
    }

    public func addRole(_ role: String, userID: String) async throws {
        _ = try await connection.query(
            "INSERT OR IGNORE INTO user_roles (user_id, role) VALUES (?, ?)", [.text(userID), .text(role)])
    }

    public func removeRole(_ role: String, userID: String) async throws -> Bool {
        let rows = try await connection.query(
            "DELETE FROM user_roles WHERE user_id = ? AND role = ? RETURNING role", [.text(userID), .text(role)])
        return !rows.isEmpty
    }

    public func roles(userID: String) async throws -> [String] {
        try await reader.query("SELECT role FROM user_roles WHERE user_id = ? ORDER BY role", [.text(userID)]).compactMap {
            $0.column("role")?.string
        }
    }
}
