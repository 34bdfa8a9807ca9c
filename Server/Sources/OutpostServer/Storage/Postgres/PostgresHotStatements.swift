@_spi(OutpostInternal) import OutpostCore
import PostgresNIO

/// The statements every request runs, as named prepared statements: postgres-nio prepares each
/// once per pooled connection (on first use) and afterwards sends only its name and the values,
/// so PostgreSQL neither parses nor plans them again. The columns are listed (never `*`), so a
/// later migration that adds a column does not change what a prepared statement returns.
extension PostgresStorage {
    /// A record by type and id.
    struct RecordByID: RecordStatement {
        static let name = "outpost_record_by_id"
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
        static let name = "outpost_insert_record"
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
        static let name = "outpost_token_by_hash"
        static let sql = "SELECT kind, user_id, client_id, scope, family, expires_at, state FROM tokens WHERE hash = $1"
        var hash: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(hash)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> StoredToken {
            // By position, in the order of `sql`'s columns.
            var cells = PostgresCells(row)
            let kind = try cells.next(String.self)
            return StoredToken(
                hash: hash, kind: StoredToken.Kind(rawValue: kind) ?? .access, userID: try cells.next(String?.self),
                clientID: try cells.next(String.self), scope: try cells.next(String.self), family: try cells.next(String.self),
                expiresAt: try cells.next(Int64.self), state: try cells.next(String.self))
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
        try PostgresStorage.record(from: row)
    }
}

/// The cells of a row read in column order, each decoded as it is reached: no lookup by name
/// (a hash of the column name per cell) and no copy of the row.
struct PostgresCells<Row: Collection> where Row.Element == PostgresCell {
    var iterator: Row.Iterator

    init(_ row: Row) {
        iterator = row.makeIterator()
    }

    /// The next cell as `type`; a row with fewer columns than asked for is a decoding error.
    mutating func next<Value: PostgresDecodable>(_ type: Value.Type) throws -> Value {
        guard let cell = iterator.next() else {
            throw ServerError(
                .internalServerError, code: "corrupt_row", message: "A database row has fewer columns than the statement selects")
        }
        return try cell.decode(Value.self)
    }
}

/// The order of a keyset page: the index of its sort column and direction in
/// ``PostgresStorage/keysetOrders``. Each order is its own prepared statement
/// (``PostgresStorage/KeysetPage``), so PostgreSQL plans it once per connection.
protocol KeysetOrder {
    static var index: Int { get }
}

extension PostgresStorage {
    /// The statement of each order of a keyset page without filters: created or updated time,
    /// ascending or descending (the index is `2 × updated + descending`). The start position is
    /// always bound (the first page starts before every row), and so is the viewer: with no viewer
    /// (`NULL`), `owner = NULL` is never true, so only public records pass, as for an anonymous caller.
    static let keysetOrders = keysetStatements(named: "outpost_page", columns: PostgresStorage.columns)

    /// The four keyset statements (``keysetOrders``' order) selecting `columns`, named `prefix_time_direction`.
    static func keysetStatements(named prefix: String, columns: String) -> [(name: String, sql: String)] {
        ["created", "updated"].flatMap { time in
            [false, true].map { descending in
                let direction = descending ? "DESC" : "ASC"
                return (
                    "\(prefix)_\(time)_\(descending ? "desc" : "asc")",
                    """
                    SELECT \(columns) FROM records
                    WHERE type = $1 AND (NOT private OR owner = $2) AND (\(time)_at, seq) \(descending ? "<" : ">") ($3, $4)
                    ORDER BY \(time)_at \(direction), seq \(direction) LIMIT $5
                    """
                )
            }
        }
    }

    enum CreatedAscending: KeysetOrder { static let index = 0 }
    enum CreatedDescending: KeysetOrder { static let index = 1 }
    enum UpdatedAscending: KeysetOrder { static let index = 2 }
    enum UpdatedDescending: KeysetOrder { static let index = 3 }

    /// A keyset page without field filters (every list page of a type), in `Order`.
    struct KeysetPage<Order: KeysetOrder>: RecordStatement {
        static var name: String { keysetOrders[Order.index].name }
        static var sql: String { keysetOrders[Order.index].sql }
        var type: String
        var viewer: String?
        var position: RecordPosition
        var limit: Int64

        init(_ query: RecordQuery, from position: RecordPosition, limit: Int64) {
            self.type = query.type
            self.viewer = query.viewer
            self.position = position
            self.limit = limit
        }

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 5)
            bindings.append(type)
            bindings.append(viewer)
            bindings.append(position.time)
            bindings.append(position.seq)
            bindings.append(limit)
            return bindings
        }
    }
}
