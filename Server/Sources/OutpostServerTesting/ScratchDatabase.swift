import Foundation
package import Logging
package import OutpostServer
import PostgresNIO

/// An empty database for one test, on either backend, removed afterwards.
///
/// PostgreSQL is found through the environment: `OUTPOST_TEST_POSTGRES_URL` names a database the
/// tests may connect to and create databases beside (`.ci/postgres.sh` starts one). Without it the
/// PostgreSQL tests are skipped, unless `OUTPOST_REQUIRE_POSTGRES=1` (CI), when they fail.
package struct ScratchDatabase: Sendable {
    package enum Backend: String, Sendable, CaseIterable, CustomStringConvertible {
        case sqlite, postgres
        package var description: String { rawValue }
    }

    package let location: DatabaseLocation
    let folder: URL?

    /// The environment variable naming the PostgreSQL server for tests.
    package static let postgresURLVariable = "OUTPOST_TEST_POSTGRES_URL"
    /// Set to `1` to make missing PostgreSQL a failure instead of a skip.
    package static let requirePostgresVariable = "OUTPOST_REQUIRE_POSTGRES"

    /// The PostgreSQL server for tests, if one is configured.
    package static var postgresBase: PostgresLocation? {
        ProcessInfo.processInfo.environment[postgresURLVariable].flatMap { try? PostgresLocation(url: $0) }
    }

    /// Whether PostgreSQL tests must run (and fail when it is missing).
    package static var postgresRequired: Bool {
        ProcessInfo.processInfo.environment[requirePostgresVariable] == "1"
    }

    /// The backends to test: SQLite always, PostgreSQL when configured or required.
    package static var backends: [Backend] {
        postgresBase != nil || postgresRequired ? [.sqlite, .postgres] : [.sqlite]
    }

    /// Why PostgreSQL tests do not run here, or `nil` when they do.
    package static var postgresSkipReason: String? {
        postgresBase == nil
            ? "PostgreSQL tests skipped: set \(postgresURLVariable) (bash .ci/postgres.sh start prints one)" : nil
    }

    /// A fresh, empty database (not migrated).
    package static func make(_ backend: Backend) async throws -> ScratchDatabase {
        switch backend {
        case .sqlite:
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-scratch-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            return ScratchDatabase(location: .sqlite(path: folder.appendingPathComponent("test.sqlite").path), folder: folder)
        case .postgres:
            guard let base = postgresBase else {
                throw ServerError(
                    .internalServerError, code: "postgres_missing",
                    message: "\(requirePostgresVariable)=1 but \(postgresURLVariable) is not set to a postgres:// URL")
            }
            var location = base
            location.database = "outpost_t_" + Identifiers.random()
            try await withAdmin(base) { try await $0.execute(PostgresQuery(unsafeSQL: "CREATE DATABASE \(location.database)")) }
            return ScratchDatabase(location: .postgres(location), folder: nil)
        }
    }

    /// What `outpost … --database` takes for this database: the file path, or the test server's URL
    /// (password included) with this database's name.
    package var argument: String {
        switch location {
        case .sqlite(let path): return path
        case .postgres(let location):
            let base = ProcessInfo.processInfo.environment[Self.postgresURLVariable] ?? location.description
            guard var components = URLComponents(string: base) else { return location.description }
            components.path = "/" + location.database
            return components.string ?? location.description
        }
    }

    /// Drops the database (ending its sessions) or removes the SQLite folder.
    package func remove() async {
        if let folder { try? FileManager.default.removeItem(at: folder) }
        if case .postgres(let location) = location, let base = Self.postgresBase {
            try? await Self.withAdmin(base) {
                try await $0.execute(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(location.database) WITH (FORCE)"))
            }
        }
    }

    /// Runs `body` while another session holds `table` locked against every access (PostgreSQL
    /// only), as a stuck or slow other client would.
    package func withTableLocked(_ table: String, _ body: () async throws -> Void) async throws {
        guard case .postgres(let location) = location, table.allSatisfy({ $0.isLetter || $0 == "_" }) else {
            throw ServerError(.internalServerError, code: "unsupported", message: "Locks a PostgreSQL table by its plain name")
        }
        var logger = Logger(label: "outpost.test.lock")
        logger.logLevel = .critical
        let holder = try await PostgresStorage.open(location, busyTimeout: .seconds(60), maxConnections: 1, logger: logger)
        do {
            try await holder.withTransaction { connection in
                try await PostgresStorage.execute(
                    PostgresQuery(unsafeSQL: "LOCK TABLE \(table) IN ACCESS EXCLUSIVE MODE"), on: connection)
                try await body()
            }
            try await holder.close()
        } catch {
            try? await holder.close()
            throw error
        }
    }

    /// Ends the sessions of this PostgreSQL database that listen for record changes (each server's
    /// change-feed listener), as a lost connection would, and waits until they are gone.
    ///
    /// - Returns: how many sessions were ended.
    package func terminateChangeListeners() async throws -> Int {
        guard case .postgres(let location) = location, let base = Self.postgresBase else {
            throw ServerError(.internalServerError, code: "unsupported", message: "Change listeners are PostgreSQL sessions")
        }
        var ended = 0
        try await Self.withAdmin(base) { admin in
            ended = try await admin.rows(
                """
                SELECT pid FROM pg_stat_activity
                WHERE datname = \(location.database) AND query LIKE 'LISTEN %' AND pg_terminate_backend(pid, 10000)
                """
            ).count
        }
        return ended
    }

    /// Opens and migrates a storage on this database; each call is a separate "instance".
    package func open(
        busyTimeout: Duration = .seconds(5), logger: Logger = Logger(label: "outpost.test.storage")
    ) async throws -> any Storage {
        try await location.openMigrated(busyTimeout: busyTimeout, logger: logger)
    }

    private static func withAdmin(_ base: PostgresLocation, _ body: (PostgresStorage) async throws -> Void) async throws {
        var logger = Logger(label: "outpost.test.admin")
        logger.logLevel = .critical
        let admin = try await PostgresStorage.open(base, maxConnections: 1, logger: logger)
        do {
            try await body(admin)
            try await admin.close()
        } catch {
            try? await admin.close()
            throw error
        }
    }
}
