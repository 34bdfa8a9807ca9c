import SQLiteNIO
internal import VaporCSQLite

extension SQLiteStorage: QuotaStorage {
    /// Migration 14: quotas. `quota_defaults` holds the operator's defaults (one row; every column
    /// `NULL`, no bound, until a server writes its own), `user_quotas` a user's own bounds (`NULL`:
    /// the default, -1: none), `record_usage` what each owner's records take, kept by triggers on
    /// `records` in the write's own transaction. A trigger before each write refuses one past its
    /// owner's bound with `RAISE(ABORT, 'quota_exceeded:…')`.
    static let quotasMigration: [String] = [
        """
        CREATE TABLE quota_defaults (
            id INTEGER PRIMARY KEY CHECK (id = 1), records INTEGER, record_bytes INTEGER, file_bytes INTEGER,
            pending_uploads INTEGER
        )
        """,
        "INSERT INTO quota_defaults (id) VALUES (1)",
        """
        CREATE TABLE user_quotas (
            user_id TEXT PRIMARY KEY, records INTEGER, record_bytes INTEGER, file_bytes INTEGER, pending_uploads INTEGER
        )
        """,
        "CREATE TABLE record_usage (owner TEXT PRIMARY KEY, records INTEGER NOT NULL, record_bytes INTEGER NOT NULL)",
        """
        INSERT INTO record_usage (owner, records, record_bytes)
        SELECT owner, count(*), sum(length(CAST(body AS BLOB))) FROM records WHERE owner IS NOT NULL GROUP BY owner
        """,
        """
        CREATE TRIGGER record_quota_insert BEFORE INSERT ON records WHEN NEW.owner IS NOT NULL BEGIN
            SELECT RAISE(ABORT, 'quota_exceeded:records') FROM (SELECT \(bound("records")) AS bound)
            WHERE bound IS NOT NULL AND \(used("records")) + 1 > bound;
            SELECT RAISE(ABORT, 'quota_exceeded:record_bytes') FROM (SELECT \(bound("record_bytes")) AS bound)
            WHERE bound IS NOT NULL AND \(used("record_bytes")) + length(CAST(NEW.body AS BLOB)) > bound;
        END
        """,
        """
        CREATE TRIGGER record_quota_update BEFORE UPDATE OF body ON records
        WHEN NEW.owner IS NOT NULL AND length(CAST(NEW.body AS BLOB)) > length(CAST(OLD.body AS BLOB)) BEGIN
            SELECT RAISE(ABORT, 'quota_exceeded:record_bytes') FROM (SELECT \(bound("record_bytes")) AS bound)
            WHERE bound IS NOT NULL
              AND \(used("record_bytes")) + length(CAST(NEW.body AS BLOB)) - length(CAST(OLD.body AS BLOB)) > bound;
        END
        """,
        """
        CREATE TRIGGER record_usage_insert AFTER INSERT ON records WHEN NEW.owner IS NOT NULL BEGIN
            \(addUsage)
        END
        """,
        """
        CREATE TRIGGER record_usage_update AFTER UPDATE OF body, owner ON records BEGIN
            \(removeUsage)
            INSERT INTO record_usage (owner, records, record_bytes)
                SELECT NEW.owner, 1, length(CAST(NEW.body AS BLOB)) WHERE NEW.owner IS NOT NULL
                ON CONFLICT (owner) DO UPDATE SET records = records + 1, record_bytes = record_bytes + excluded.record_bytes;
        END
        """,
        """
        CREATE TRIGGER record_usage_delete AFTER DELETE ON records WHEN OLD.owner IS NOT NULL BEGIN
            \(removeUsage)
        END
        """,
    ]

    /// The bound of `column` in force for `NEW.owner`: their own, or the default; `NULL` for none.
    private static func bound(_ column: String) -> String {
        """
        (SELECT CASE WHEN q.\(column) IS NULL THEN d.\(column) WHEN q.\(column) < 0 THEN NULL ELSE q.\(column) END
         FROM quota_defaults d LEFT JOIN user_quotas q ON q.user_id = NEW.owner WHERE d.id = 1)
        """
    }

    private static func used(_ column: String) -> String {
        "coalesce((SELECT \(column) FROM record_usage WHERE owner = NEW.owner), 0)"
    }

    private static let addUsage = """
        INSERT INTO record_usage (owner, records, record_bytes) VALUES (NEW.owner, 1, length(CAST(NEW.body AS BLOB)))
            ON CONFLICT (owner) DO UPDATE SET records = records + 1, record_bytes = record_bytes + excluded.record_bytes;
        """

    private static let removeUsage = """
        UPDATE record_usage SET records = records - 1, record_bytes = record_bytes - length(CAST(OLD.body AS BLOB))
            WHERE owner = OLD.owner;
        """

    public func setDefaultQuotas(_ quotas: Quotas) async throws {
        _ = try await withTransaction { connection in
            try await connection.query(
                "UPDATE quota_defaults SET records = ?, record_bytes = ?, file_bytes = ?, pending_uploads = ? WHERE id = 1",
                [quotas.records, quotas.recordBytes, quotas.fileBytes, quotas.pendingUploads].map(Self.data))
        }
    }

    public func defaultQuotas() async throws -> Quotas {
        let row = try await reader.query("SELECT records, record_bytes, file_bytes, pending_uploads FROM quota_defaults").first
        func value(_ name: String) -> Int64? { row?.column(name)?.integer.map(Int64.init) }
        return Quotas(
            records: value("records"), recordBytes: value("record_bytes"), fileBytes: value("file_bytes"),
            pendingUploads: value("pending_uploads"))
    }

    public func quotaOverrides(user: String) async throws -> QuotaOverrides {
        let row = try await reader.query(
            "SELECT records, record_bytes, file_bytes, pending_uploads FROM user_quotas WHERE user_id = ?", [.text(user)]
        ).first
        func bound(_ name: String) -> QuotaBound { QuotaBound(stored: row?.column(name)?.integer.map(Int64.init)) }
        var overrides = QuotaOverrides()
        overrides.records = bound("records")
        overrides.recordBytes = bound("record_bytes")
        overrides.fileBytes = bound("file_bytes")
        overrides.pendingUploads = bound("pending_uploads")
        return overrides
    }

    public func setQuotaOverrides(_ overrides: QuotaOverrides, user: String) async throws {
        let values = [overrides.records, overrides.recordBytes, overrides.fileBytes, overrides.pendingUploads].map {
            Self.data($0.stored)
        }
        _ = try await withTransaction { connection in
            try await connection.query(
                """
                INSERT INTO user_quotas (user_id, records, record_bytes, file_bytes, pending_uploads) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (user_id) DO UPDATE SET records = excluded.records, record_bytes = excluded.record_bytes,
                    file_bytes = excluded.file_bytes, pending_uploads = excluded.pending_uploads
                """, [.text(user)] + values)
        }
    }

    public func recordUsage(owner: String) async throws -> RecordUsage {
        let row = try await reader.query("SELECT records, record_bytes FROM record_usage WHERE owner = ?", [.text(owner)]).first
        return RecordUsage(
            records: Int64(row?.column("records")?.integer ?? 0), recordBytes: Int64(row?.column("record_bytes")?.integer ?? 0))
    }

    private static func data(_ value: Int64?) -> SQLiteData {
        value.map { .integer(Int($0)) } ?? .null
    }
}

extension QuotaExceeded {
    /// The 507 for a failure of SQLite that a quota trigger raised.
    static func fromSQLite(_ error: any Error) -> ServerError? {
        guard let failure = error as? SQLiteFailure, failure.code & 0xff == SQLITE_CONSTRAINT else { return nil }
        return serverError(forStorageMessage: failure.message)
    }
}
