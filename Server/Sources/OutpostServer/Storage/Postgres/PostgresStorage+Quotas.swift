import PostgresNIO

extension PostgresStorage: QuotaStorage {
    /// Step 10: quotas (SQLite's migration 14). The same tables and the same checks, in fewer
    /// statements: a trigger before a write adds it to its owner's usage and checks the bounds in one
    /// statement; one after a deletion (or a change of owner) takes the record from the old owner.
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
        // Before a write of a record with an owner: one statement adds the write to the owner's
        // usage (locking that row until the transaction ends, so writes of one owner on any
        // instances are checked one after the other) and returns it with the owner's bounds; past
        // one, the exception undoes the statement, the usage included.
        """
        CREATE FUNCTION outpost_record_quota() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
            bound_records BIGINT;
            bound_bytes BIGINT;
            used_records BIGINT;
            used_bytes BIGINT;
            moves BOOLEAN := TG_OP = 'INSERT' OR OLD.owner IS DISTINCT FROM NEW.owner;
            grows BIGINT := octet_length(NEW.body) - CASE WHEN moves THEN 0 ELSE octet_length(OLD.body) END;
        BEGIN
            INSERT INTO record_usage AS u (owner, records, record_bytes)
            VALUES (NEW.owner, CASE WHEN moves THEN 1 ELSE 0 END, grows)
            ON CONFLICT (owner) DO UPDATE
               SET records = u.records + excluded.records, record_bytes = u.record_bytes + excluded.record_bytes
            RETURNING u.records, u.record_bytes,
                (SELECT CASE WHEN q.records IS NULL THEN d.records WHEN q.records < 0 THEN NULL ELSE q.records END
                   FROM quota_defaults d LEFT JOIN user_quotas q ON q.user_id = NEW.owner WHERE d.id = 1),
                (SELECT CASE WHEN q.record_bytes IS NULL THEN d.record_bytes WHEN q.record_bytes < 0 THEN NULL
                            ELSE q.record_bytes END
                   FROM quota_defaults d LEFT JOIN user_quotas q ON q.user_id = NEW.owner WHERE d.id = 1)
            INTO used_records, used_bytes, bound_records, bound_bytes;
            IF moves AND bound_records IS NOT NULL AND used_records > bound_records THEN
                RAISE EXCEPTION 'quota_exceeded:records' USING ERRCODE = 'OQ001';
            END IF;
            IF grows > 0 AND bound_bytes IS NOT NULL AND used_bytes > bound_bytes THEN
                RAISE EXCEPTION 'quota_exceeded:record_bytes' USING ERRCODE = 'OQ001';
            END IF;
            RETURN NEW;
        END $$
        """,
        // After a deletion, or an update that takes a record from its owner: the old owner's usage.
        """
        CREATE FUNCTION outpost_record_usage() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            UPDATE record_usage SET records = records - 1, record_bytes = record_bytes - octet_length(OLD.body)
             WHERE owner = OLD.owner;
            RETURN NULL;
        END $$
        """,
        """
        CREATE TRIGGER record_quota BEFORE INSERT OR UPDATE OF body, owner ON records
        FOR EACH ROW WHEN (NEW.owner IS NOT NULL) EXECUTE FUNCTION outpost_record_quota()
        """,
        """
        CREATE TRIGGER record_usage_update AFTER UPDATE OF owner ON records
        FOR EACH ROW WHEN (OLD.owner IS NOT NULL AND OLD.owner IS DISTINCT FROM NEW.owner)
        EXECUTE FUNCTION outpost_record_usage()
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
