import Foundation
import Logging
import OutpostServer
import PostgresNIO

extension ScratchDatabase {
    /// The CPU time (user + system) the PostgreSQL server processes serving this database have
    /// used so far, for `outpost-bench`'s CPU per request: the backends' process ids from
    /// `pg_stat_activity`, their times from `/proc/PID/stat`. `nil` for SQLite, or when PostgreSQL
    /// runs where this process cannot read its processes (another host or container).
    package func backendCPUSeconds() async throws -> Double? {
        guard case .postgres(let location) = location, let base = Self.postgresBase else { return nil }
        var logger = Logger(label: "outpost.bench.backends")
        logger.logLevel = .critical
        let admin = try await PostgresStorage.open(base, maxConnections: 1, logger: logger)
        let pids: [Int32]
        do {
            pids = try await admin.rows("SELECT pid FROM pg_stat_activity WHERE datname = \(location.database)").map {
                try $0["pid"].decode(Int32.self)
            }
            try await admin.close()
        } catch {
            try? await admin.close()
            throw error
        }
        var total = 0.0
        for pid in pids {
            guard let seconds = Self.cpuSeconds(ofProcess: pid) else { return nil }
            total += seconds
        }
        return total
    }

    /// User plus system time of a process from `/proc/PID/stat` (fields 14 and 15, counted after
    /// the parenthesised command name, which may itself contain spaces), or `nil` when unreadable.
    static func cpuSeconds(ofProcess pid: Int32) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // fields[0] is the state (field 3); utime and stime are fields 14 and 15.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}

extension ScratchDatabase {
    /// Replaces the change-feed trigger function of this (migrated) PostgreSQL database with the
    /// version of `ordering`, so `outpost-bench` can measure what each costs writes in one run.
    /// Only ``ChangeOrdering/sharedWriters`` (migration 3) matches how the storage reads.
    package func setChangeOrdering(_ ordering: ChangeOrdering) async throws {
        guard case .postgres(let location) = location else { return }
        var logger = Logger(label: "outpost.bench.lock")
        logger.logLevel = .critical
        let storage = try await PostgresStorage.open(location, maxConnections: 1, logger: logger)
        do {
            try await storage.execute(
                PostgresQuery(unsafeSQL: PostgresStorage.changeTriggerFunction(lock: ordering.lockStatement, replacing: true)))
            try await storage.close()
        } catch {
            try? await storage.close()
            throw error
        }
    }
}
