import OutpostCore
import PostgresNIO

/// The statements every request runs, as named prepared statements: postgres-nio prepares each
/// once per pooled connection (on first use) and afterwards sends only its name and the values,
/// so PostgreSQL neither parses nor plans them again. The columns are listed (never `*`), so a
/// later migration that adds a column does not change what a prepared statement returns.
extension PostgresStorage {
    /// A record by type and id.
    struct RecordByID: RecordStatement {
        static let sql = "SELECT \(PostgresStorage.columns) FROM records WHERE type = $1 AND id = $2"
        var type: String
        var id: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 2)
            bindings.append(type)
            bindings.append(id)
            return bindings
        }
    }

    /// A new record; no row when the id is taken (the caller draws another).
    struct InsertRecord: RecordStatement {
        static let sql = """
            INSERT INTO records (type, id, owner, body, version, created_at, updated_at, private)
            VALUES ($1, $2, $3, $4, 1, $5, $5, $6)
            ON CONFLICT (type, id) DO NOTHING
            RETURNING \(PostgresStorage.columns)
            """
        var type: String
        var id: String
        var owner: String?
        var body: String
        var now: Int64
        var isPrivate: Bool

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 6)
            bindings.append(type)
            bindings.append(id)
            bindings.append(owner)
            bindings.append(body)
            bindings.append(now)
            bindings.append(isPrivate)
            return bindings
        }
    }

    /// A token by the hash of its value (every request with a bearer token).
    struct TokenByHash: PostgresPreparedStatement {
        static let sql = "SELECT kind, user_id, client_id, scope, family, expires_at, state FROM tokens WHERE hash = $1"
        var hash: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(hash)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> StoredToken {
            let row = row.makeRandomAccess()
            return StoredToken(
                hash: hash, kind: StoredToken.Kind(rawValue: try row.string("kind")) ?? .access,
                userID: try row.optionalString("user_id"), clientID: try row.string("client_id"), scope: try row.string("scope"),
                family: try row.string("family"), expiresAt: try row.int64("expires_at"), state: try row.string("state"))
        }
    }

    /// The rows of a prepared statement on any pooled connection.
    func rows<Statement: PostgresPreparedStatement>(_ statement: Statement) async throws -> [Statement.Row] {
        try await translatingErrors {
            var rows: [Statement.Row] = []
            for try await row in try await client.execute(statement, logger: logger) { rows.append(row) }
            return rows
        }
    }

    /// The rows of a prepared statement on `connection` (inside a transaction).
    static func rows<Statement: PostgresPreparedStatement>(_ statement: Statement, on connection: PostgresConnection)
        async throws -> [Statement.Row]
    {
        var rows: [Statement.Row] = []
        for try await row in try await connection.execute(statement, logger: connection.logger) { rows.append(row) }
        return rows
    }
}

/// A prepared statement whose rows are records (``PostgresStorage/columns``).
protocol RecordStatement: PostgresPreparedStatement where Row == StoredRecord {}

extension RecordStatement {
    func decodeRow(_ row: PostgresRow) throws -> StoredRecord {
        try PostgresStorage.record(from: row.makeRandomAccess())
    }
}
