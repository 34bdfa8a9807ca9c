import Foundation
import Logging
import PostgresNIO

extension PostgresStorage: ChangeFeedStorage, ChangeNotifyingStorage {
    /// The channel every instance `LISTEN`s on; the trigger `NOTIFY`s it with each record write.
    static let changesChannel = "outpost_record_changes"

    /// Keeps positions visible in increasing order: writers of `record_changes` hold it shared,
    /// a reader exclusively for its read (migration 3; migration 2 had writers hold it exclusively).
    static let changesLock: Int64 = 0x6F75_7470_6F73_75  // "outpost" + 1

    /// Migration 2: the change feed, as SQLite's migration 8.
    ///
    /// One trigger on `records` writes a `record_changes` row per record write, inside the write's
    /// own transaction, whichever instance makes it. An identity column hands out positions before
    /// commit, so two transactions could commit them out of order and a reader that had seen the
    /// later one would skip the earlier: the trigger first takes a transaction-level advisory lock,
    /// held until commit, so positions are drawn and made visible one writer at a time (record
    /// writes serialise from their change row to their commit; a single statement commits at once).
    /// It then `NOTIFY`s ``changesChannel``: PostgreSQL delivers the notification at commit to the
    /// listening connection of every instance, which wakes its subscribers.
    /// `record_changes_pruned` keeps the highest position retention removed.
    static let changesSchema: [String] = [
        """
        CREATE TABLE record_changes (
            position BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            type TEXT NOT NULL,
            record_id TEXT NOT NULL,
            change TEXT NOT NULL,
            version BIGINT NOT NULL,
            owner TEXT,
            private BOOLEAN NOT NULL DEFAULT FALSE,
            body TEXT,
            created_at BIGINT NOT NULL,
            updated_at BIGINT NOT NULL,
            at BIGINT NOT NULL
        )
        """,
        "CREATE INDEX record_changes_by_type ON record_changes (type, position)",
        "CREATE INDEX record_changes_by_time ON record_changes (at)",
        "CREATE TABLE record_changes_pruned (id INTEGER PRIMARY KEY CHECK (id = 1), through BIGINT NOT NULL)",
        "INSERT INTO record_changes_pruned (id, through) VALUES (1, 0)",
        changeTriggerFunction(lock: exclusiveChangesLock, replacing: false, deletedBody: "NULL"),
        """
        CREATE TRIGGER record_changed AFTER INSERT OR UPDATE OR DELETE ON records
        FOR EACH ROW EXECUTE FUNCTION outpost_record_changed()
        """,
    ]

    /// The trigger's lock statement of migration 2: writers hold the lock exclusively until commit.
    package static let exclusiveChangesLock = "PERFORM pg_advisory_xact_lock(\(changesLock));"
    /// The trigger's lock statement of migration 3: writers hold the lock shared until commit.
    package static let sharedChangesLock = "PERFORM pg_advisory_xact_lock_shared(\(changesLock));"

    /// The trigger function, running the PL/pgSQL statement `lock` before it draws a position:
    /// migration 2 creates it with ``exclusiveChangesLock``, migration 3 replaces it with
    /// ``sharedChangesLock``, migration 8 keeps that lock and writes a deletion's last fields
    /// (`deletedBody` `OLD.body`; migrations 2 and 3 wrote `NULL`). `outpost-bench` swaps the
    /// locks to measure their cost.
    package static func changeTriggerFunction(lock: String, replacing: Bool, deletedBody: String = "OLD.body") -> String {
        """
        CREATE \(replacing ? "OR REPLACE " : "")FUNCTION outpost_record_changed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            \(lock)
            IF TG_OP = 'DELETE' THEN
                INSERT INTO record_changes (type, record_id, change, version, owner, private, body, created_at, updated_at, at)
                VALUES (OLD.type, OLD.id, 'deleted', OLD.version, OLD.owner, OLD.private, \(deletedBody), OLD.created_at,
                        OLD.updated_at, (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT);
            ELSE
                INSERT INTO record_changes (type, record_id, change, version, owner, private, body, created_at, updated_at, at)
                VALUES (NEW.type, NEW.id, CASE WHEN TG_OP = 'INSERT' THEN 'created' ELSE 'updated' END, NEW.version,
                        NEW.owner, NEW.private, NEW.body, NEW.created_at, NEW.updated_at,
                        (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT);
            END IF;
            PERFORM pg_notify('\(changesChannel)', '');
            RETURN NULL;
        END
        $$
        """
    }

    /// Migration 8: a deletion's change row keeps the record's last fields (SQLite's 13), so the
    /// feed decides who may see a deletion by the record as it was, as it does for other changes.
    static let deletedBodySchema: [String] = [changeTriggerFunction(lock: sharedChangesLock, replacing: true)]

    /// Migration 3: writers no longer serialize on the change feed; readers wait for them instead.
    ///
    /// Migration 2's trigger held an exclusive advisory lock from drawing a position until commit,
    /// so record writes committed one at a time (and, with `fsync` on, each waited for its own WAL
    /// flush: no group commit). Now the trigger takes that lock *shared*: writers run and commit
    /// together. Order is kept on the reading side. `outpost_change_watermark()` takes the lock
    /// exclusively, which PostgreSQL grants only once every writer that drew a position before
    /// has committed or rolled back (and writers arriving meanwhile queue behind it before they
    /// draw one), then reads the sequence's last value: every position up to it is final.
    /// `outpost_changes(...)` takes the watermark and then, in a statement of its own (a later
    /// snapshot, as plpgsql runs each statement of a volatile function in READ COMMITTED), reads
    /// only changes up to it. A reader thus never sees position `n` while a smaller one can still
    /// commit. The exclusive lock lasts one short read; a waiting reader holds back new writers
    /// for as long as the writers before it take to commit.
    static let changesWatermarkSchema: [String] = [
        changeTriggerFunction(lock: sharedChangesLock, replacing: true, deletedBody: "NULL"),
        """
        CREATE FUNCTION outpost_change_watermark() RETURNS BIGINT LANGUAGE plpgsql VOLATILE AS $$
        BEGIN
            PERFORM pg_advisory_xact_lock(\(changesLock));
            RETURN COALESCE(pg_sequence_last_value(pg_get_serial_sequence('record_changes', 'position')::regclass), 0);
        END
        $$
        """,
        """
        CREATE FUNCTION outpost_changes(after BIGINT, only_type TEXT, max_count BIGINT)
        RETURNS SETOF record_changes LANGUAGE plpgsql VOLATILE AS $$
        DECLARE
            final BIGINT := outpost_change_watermark();
        BEGIN
            -- Two statements, so that each keeps its own plan (by position; by type and position).
            IF only_type IS NULL THEN
                RETURN QUERY SELECT * FROM record_changes
                    WHERE position > after AND position <= final ORDER BY position LIMIT max_count;
            ELSE
                RETURN QUERY SELECT * FROM record_changes
                    WHERE type = only_type AND position > after AND position <= final ORDER BY position LIMIT max_count;
            END IF;
        END
        $$
        """,
    ]

    static let changeColumns = "position, type, record_id, change, version, owner, private, body, created_at, updated_at, at"

    public func changes(type: String?, after position: Int64, limit: Int) async throws -> [RecordChange] {
        // Only final positions (migration 3): see `changesWatermarkSchema`.
        try await rows(
            """
            SELECT \(unescaped: Self.changeColumns) FROM outpost_changes(\(position), \(type), \(Int64(max(0, limit))))
            """
        ).map(Self.change(from:))
    }

    public func changeBounds() async throws -> ChangeBounds {
        let row = try await rows(
            """
            SELECT (SELECT through FROM record_changes_pruned WHERE id = 1) AS pruned, outpost_change_watermark() AS latest
            """
        ).first
        let pruned = try row?.optionalInt64("pruned") ?? 0
        // The newest final position: every change up to it has committed (or never will). Retention
        // may have removed every change: the newest position handed out is then the pruned one.
        return ChangeBounds(prunedThrough: pruned, latest: max(pruned, try row?.optionalInt64("latest") ?? 0))
    }

    @discardableResult
    public func pruneChanges(writtenBefore cutoff: Int64) async throws -> Int {
        try await withTransaction { connection in
            // A prefix of the feed goes: everything up to the newest change older than the cutoff.
            guard
                let through = try await Self.rows(
                    "SELECT MAX(position) AS through FROM record_changes WHERE at < \(cutoff)", on: connection
                ).first?.optionalInt64("through")
            else { return 0 }
            let removed = try await Self.rows(
                """
                WITH gone AS (DELETE FROM record_changes WHERE position <= \(through) RETURNING 1)
                SELECT COUNT(*)::BIGINT AS count FROM gone
                """, on: connection
            ).first?.int64("count")
            try await Self.execute(
                "UPDATE record_changes_pruned SET through = GREATEST(through, \(through)) WHERE id = 1", on: connection)
            return Int(removed ?? 0)
        }
    }

    /// Keeps one pooled connection `LISTEN`ing on `outpost_record_changes` until the task is cancelled,
    /// calling `committed` for each notification, and once each time listening (re)starts, so
    /// that changes committed while no connection listened are read too. A lost connection is
    /// replaced after a pause that doubles from 100 ms up to 5 s while attempts keep failing.
    public func listenForChanges(_ committed: @escaping @Sendable () -> Void) async {
        var failures = 0
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: Self.changesChannel) { notifications in
                        failures = 0
                        committed()
                        for try await _ in notifications { committed() }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning(
                    "change feed listener lost its database connection; reconnecting",
                    metadata: ["database": "\(location)", "error": "\(Self.reason(error))"])
            }
            if Task.isCancelled { return }
            failures += 1
            let pause = Duration.milliseconds(min(5_000, 100 << min(failures - 1, 6)))
            do { try await Task.sleep(for: pause) } catch { return }
        }
    }

    static func change(from row: PostgresRandomAccessRow) throws -> RecordChange {
        let text = try row.string("change")
        guard let kind = RecordChange.Kind(rawValue: text) else {
            throw ServerError(.internalServerError, code: "corrupt_change", message: "A stored change has the kind '\(text)'")
        }
        let record = StoredRecord(
            type: try row.string("type"), id: try row.string("record_id"), owner: try row.optionalString("owner"),
            body: try row.optionalString("body") ?? "{}", version: Int(try row.int64("version")),
            createdAt: try row.int64("created_at"), updatedAt: try row.int64("updated_at"), seq: 0,
            isPrivate: try row["private"].decode(Bool.self))
        return RecordChange(position: try row.int64("position"), kind: kind, record: record, at: try row.int64("at"))
    }
}
