import PostgresNIO

extension PostgresStorage: QuotaStorage {
    /// Step 10: quotas (SQLite's migration 14). The same tables; one trigger function checks a write
    /// before it happens (locking the owner's usage row, so two writes of one owner on any instances
    /// are checked one after the other) and another keeps `record_usage` after it.
    static let quotasSchema: [String] = [
        """
        CREATE TABLE quota_defaults (
            id INT PRIMARY KEY CHECK (id = 1), records BIGINT, record_bytes BIGINT, file_bytes BIGINT, pending_uploads BIGINT
        )
        """,
        "INSERT INTO quota_defaults (id) VALUES (1)",
        """
        CREATE TABLE user_quotas (
            user_id TEXT PRIMARY KEY, records BIGINT, record_bytes BIGINT, file_bytes BIGINT, pending_uploads BIGINT
        )
        """,
        "CREATE TABLE record_usage (owner TEXT PRIMARY KEY, records BIGINT NOT NULL, record_bytes BIGINT NOT NULL)",
        """
        INSERT INTO record_usage (owner, records, record_bytes)
        SELECT owner, count(*), sum(octet_length(body)) FROM records WHERE owner IS NOT NULL GROUP BY owner
        """,
        """
        CREATE FUNCTION outpost_record_quota() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
            bound_records BIGINT;
            bound_bytes BIGINT;
            used_records BIGINT;
            used_bytes BIGINT;
            grows BIGINT;
            moves BOOLEAN := TG_OP = 'INSERT' OR OLD.owner IS DISTINCT FROM NEW.owner;
        BEGIN
            IF NEW.owner IS NULL THEN RETURN NEW; END IF;
            grows := octet_length(NEW.body) - CASE WHEN moves THEN 0 ELSE octet_length(OLD.body) END;
            IF NOT moves AND grows <= 0 THEN RETURN NEW; END IF;
            SELECT CASE WHEN q.records IS NULL THEN d.records WHEN q.records < 0 THEN NULL ELSE q.records END,
                   CASE WHEN q.record_bytes IS NULL THEN d.record_bytes WHEN q.record_bytes < 0 THEN NULL ELSE q.record_bytes END
              INTO bound_records, bound_bytes
              FROM quota_defaults d LEFT JOIN user_quotas q ON q.user_id = NEW.owner WHERE d.id = 1;
            IF bound_records IS NULL AND bound_bytes IS NULL THEN RETURN NEW; END IF;
            SELECT u.records, u.record_bytes INTO used_records, used_bytes
              FROM record_usage u WHERE u.owner = NEW.owner FOR UPDATE;
            IF moves AND bound_records IS NOT NULL AND coalesce(used_records, 0) + 1 > bound_records THEN
                RAISE EXCEPTION 'quota_exceeded:records' USING ERRCODE = 'OQ001';
            END IF;
            IF bound_bytes IS NOT NULL AND coalesce(used_bytes, 0) + grows > bound_bytes THEN
                RAISE EXCEPTION 'quota_exceeded:record_bytes' USING ERRCODE = 'OQ001';
            END IF;
            RETURN NEW;
        END $$
        """,
        """
        CREATE FUNCTION outpost_record_usage() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.owner IS NOT NULL THEN
                UPDATE record_usage SET records = records - 1, record_bytes = record_bytes - octet_length(OLD.body)
                 WHERE owner = OLD.owner;
            END IF;
            IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.owner IS NOT NULL THEN
                INSERT INTO record_usage (owner, records, record_bytes) VALUES (NEW.owner, 1, octet_length(NEW.body))
                ON CONFLICT (owner) DO UPDATE
                   SET records = record_usage.records + 1, record_bytes = record_usage.record_bytes + excluded.record_bytes;
            END IF;
            RETURN NULL;
        END $$
        """,
        """
        CREATE TRIGGER record_quota BEFORE INSERT OR UPDATE OF body, owner ON records
        FOR EACH ROW WHEN (NEW.owner IS NOT NULL) EXECUTE FUNCTION outpost_record_quota()
        """,
        // Records without an owner call no function at all: the conditions are checked by the trigger.
        """
        CREATE TRIGGER record_usage_insert AFTER INSERT ON records
        FOR EACH ROW WHEN (NEW.owner IS NOT NULL) EXECUTE FUNCTION outpost_record_usage()
        """,
        """
        CREATE TRIGGER record_usage_update AFTER UPDATE OF body, owner ON records
        FOR EACH ROW WHEN (OLD.owner IS NOT NULL OR NEW.owner IS NOT NULL) EXECUTE FUNCTION outpost_record_usage()
        """,
        """
        CREATE TRIGGER record_usage_delete AFTER DELETE ON records
        FOR EACH ROW WHEN (OLD.owner IS NOT NULL) EXECUTE FUNCTION outpost_record_usage()
        """,
    ]

    public func setDefaultQuotas(_ quotas: Quotas) async throws {
        try await execute(
            """
            UPDATE quota_defaults SET records = \(quotas.records), record_bytes = \(quotas.recordBytes),
                file_bytes = \(quotas.fileBytes), pending_uploads = \(quotas.pendingUploads) WHERE id = 1
            """)
    }

    public func defaultQuotas() async throws -> Quotas {
        let row = try await rows("SELECT records, record_bytes, file_bytes, pending_uploads FROM quota_defaults").first
        func value(_ name: String) throws -> Int64? { try row?[name].decode(Int64?.self) ?? nil }
        return Quotas(
            records: try value("records"), recordBytes: try value("record_bytes"), fileBytes: try value("file_bytes"),
            pendingUploads: try value("pending_uploads"))
    }

    public func quotaOverrides(user: String) async throws -> QuotaOverrides {
        let row = try await rows(
            "SELECT records, record_bytes, file_bytes, pending_uploads FROM user_quotas WHERE user_id = \(user)"
        ).first
        func bound(_ name: String) throws -> QuotaBound { QuotaBound(stored: try row?[name].decode(Int64?.self) ?? nil) }
        var overrides = QuotaOverrides()
        overrides.records = try bound("records")
        overrides.recordBytes = try bound("record_bytes")
        overrides.fileBytes = try bound("file_bytes")
        overrides.pendingUploads = try bound("pending_uploads")
        return overrides
    }

    public func setQuotaOverrides(_ overrides: QuotaOverrides, user: String) async throws {
        let (records, recordBytes) = (overrides.records.stored, overrides.recordBytes.stored)
        let (fileBytes, pendingUploads) = (overrides.fileBytes.stored, overrides.pendingUploads.stored)
        try await execute(
            """
            INSERT INTO user_quotas (user_id, records, record_bytes, file_bytes, pending_uploads)
            VALUES (\(user), \(records), \(recordBytes), \(fileBytes), \(pendingUploads))
            ON CONFLICT (user_id) DO UPDATE SET records = excluded.records, record_bytes = excluded.record_bytes,
                file_bytes = excluded.file_bytes, pending_uploads = excluded.pending_uploads
            """)
    }

    public func recordUsage(owner: String) async throws -> RecordUsage {
        let row = try await rows("SELECT records, record_bytes FROM record_usage WHERE owner = \(owner)").first
        return RecordUsage(
            records: try row?["records"].decode(Int64.self) ?? 0, recordBytes: try row?["record_bytes"].decode(Int64.self) ?? 0)
    }
}

extension QuotaExceeded {
    /// The 507 for an error PostgreSQL raised in a quota check (SQLSTATE `OQ001`).
    static func fromPostgres(_ error: any Error) -> ServerError? {
        guard let error = error as? PSQLError, error.serverInfo?[.sqlState] == "OQ001" else { return nil }
        return serverError(forStorageMessage: error.serverInfo?[.message] ?? "")
    }
}
