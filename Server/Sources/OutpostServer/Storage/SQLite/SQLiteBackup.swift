import Foundation
@_spi(OutpostInternal) import OutpostSupport
import SQLiteNIO

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `outpost backup` and `outpost restore` of a SQLite database.
///
/// A copy is made with `VACUUM INTO`: one statement in one read transaction, so the copy is the
/// database as of one commit, every write committed before it began included, while the server
/// goes on writing (in WAL mode a reader never blocks a writer). SQLite's online backup API gives
/// the same snapshot, but sqlite-nio's Swift API does not offer it, and stepping it a few pages at
/// a time restarts whenever another connection writes, so under a write load it only finishes in
/// one step, which is what `VACUUM INTO` does anyway. `VACUUM INTO` also writes a compact file in
/// rollback-journal mode: one self-contained file, with no `-wal` beside it to lose.
///
/// Neither operation ever leaves a partial file under the name it writes: the copy goes to a
/// temporary name in the same folder, is flushed to disk, then renamed.
package enum SQLiteBackup {
    /// What a database file holds.
    package struct Summary: Sendable, Equatable {
        package var path: String
        package var bytes: Int64
        package var schemaVersion: Int
        package var records: Int
        package var users: Int
    }

    /// A refused or failed backup or restore, with what to do.
    package struct Failure: Error, CustomStringConvertible {
        package var code: String
        package var message: String
        package var description: String { message }
    }

    /// The newest schema version this build knows.
    package static var knownSchemaVersion: Int { SQLiteStorage.migrations.map(\.version).max() ?? 0 }

    /// Writes a consistent copy of the database at `database` to `destination`.
    ///
    /// - Throws: ``Failure``: `database_missing`, `destination_exists` (unless `force`),
    ///   `not_outpost`, or the copy failed.
    package static func backup(database: String, to destination: String, force: Bool) async throws -> Summary {
        guard FileManager.default.fileExists(atPath: database) else {
            throw Failure(code: "database_missing", message: "There is no database at '\(database)'; check --database")
        }
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: destination, isDirectory: &isFolder) {
            guard !isFolder.boolValue else {
                throw Failure(code: "destination_exists", message: "'\(destination)' is a folder; name the backup file to write")
            }
            guard force else {
                throw Failure(
                    code: "destination_exists",
                    message: "'\(destination)' exists; choose another name, or pass --force to replace it")
            }
        }
        let temporary = try temporaryName(beside: destination, purpose: "backup")
        do {
            try await withConnection(database) { connection in
                _ = try await schemaVersion(connection, path: database)
                _ = try await connection.query("VACUUM INTO ?", [.text(temporary)])
            }
            let summary = try await inspect(temporary)
            try flushToDisk(temporary)
            try install(temporary, as: destination)
            return Summary(
                path: destination, bytes: summary.bytes, schemaVersion: summary.schemaVersion, records: summary.records,
                users: summary.users)
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw error
        }
    }

    /// Checks that `path` is a whole Outpost database this build can serve: `PRAGMA integrity_check`
    /// answers `ok`, it has Outpost's tables, and its schema version is not newer than
    /// ``knownSchemaVersion``.
    ///
    /// - Throws: ``Failure``: `source_missing`, `not_sqlite`, `corrupt`, `not_outpost`, `schema_too_new`.
    package static func inspect(_ path: String) async throws -> Summary {
        guard FileManager.default.fileExists(atPath: path) else {
            throw Failure(code: "source_missing", message: "There is no file at '\(path)'")
        }
        do {
            return try await withConnection(path) { connection in
                let check = try await connection.query("PRAGMA integrity_check(20)")
                let problems = check.compactMap { $0.values.first?.string }.filter { $0 != "ok" }
                guard problems.isEmpty, !check.isEmpty else {
                    throw Failure(
                        code: "corrupt",
                        message: "'\(path)' is damaged (integrity check: \(problems.prefix(3).joined(separator: "; "))); "
                            + "use another backup")
                }
                let version = try await schemaVersion(connection, path: path)
                guard version <= knownSchemaVersion else {
                    throw Failure(
                        code: "schema_too_new",
                        message: "'\(path)' has schema version \(version), newer than this outpost knows "
                            + "(\(knownSchemaVersion)); use the outpost release that wrote it, or a newer one")
                }
                let records = try await connection.query("SELECT COUNT(*) AS n FROM records").first?.column("n")?.integer ?? 0
                let users = try await connection.query("SELECT COUNT(*) AS n FROM users").first?.column("n")?.integer ?? 0
                return Summary(path: path, bytes: fileSize(path), schemaVersion: version, records: records, users: users)
            }
        } catch let error as SQLiteFailure {
            throw Failure(
                code: "corrupt",
                message: "'\(path)' is not a readable SQLite database, or is damaged (\(error.message)); use another backup")
        }
    }

    static func fileSize(_ path: String) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value ?? 0
    }

    /// What ``restore(from:to:force:)`` did.
    package struct Restored: Sendable {
        package var summary: Summary
        /// Where the database that was at the target before is kept, if there was one.
        package var previous: String?
    }

    /// Installs the backup `source` as the database at `database`, after ``inspect(_:)``.
    ///
    /// An existing database is replaced only with `force`, and only when no other process has it
    /// open: a server holds it open as long as it runs (each of its connections holds a shared
    /// lock on the file in WAL mode), so switching it to an exclusive rollback journal fails at once
    /// while one does. That step also merges its write-ahead log into the file, which is then kept
    /// as `DATABASE.before-restore`. The new file is renamed into place, so `DATABASE` is always
    /// either the old database or the new one, never a part of one.
    package static func restore(from source: String, to database: String, force: Bool) async throws -> Restored {
        let summary = try await inspect(source)
        let exists = FileManager.default.fileExists(atPath: database)
        if exists, !force {
            throw Failure(
                code: "database_exists",
                message: "'\(database)' exists; stop every server on it, then pass --force to replace it "
                    + "(it is kept as '\(database).before-restore')")
        }
        if exists { try await takeOver(database) }
        let temporary = try temporaryName(beside: database, purpose: "restore")
        do {
            try await withConnection(source) { connection in
                _ = try await connection.query("VACUUM INTO ?", [.text(temporary)])
            }
            try flushToDisk(temporary)
            var previous: String?
            if exists {
                let kept = database + ".before-restore"
                try keep(database, as: kept)
                previous = kept
            }
            try? FileManager.default.removeItem(atPath: database + "-shm")
            try install(temporary, as: database)
            var restored = summary
            restored.path = database
            restored.bytes = fileSize(database)
            return Restored(summary: restored, previous: previous)
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw error
        }
    }

    /// Fails when another process has `database` open; otherwise merges its write-ahead log into it
    /// and leaves it in rollback-journal mode, closed. A file SQLite cannot read at all (the reason
    /// to restore, perhaps) is left as it is.
    private static func takeOver(_ database: String) async throws {
        let connection = try await SQLiteHandle.open(path: database)
        do {
            _ = try await connection.query("PRAGMA locking_mode=EXCLUSIVE", [])
            _ = try await connection.query("PRAGMA journal_mode=DELETE", [])
        } catch let error as SQLiteFailure where error.isBusy {
            try? await connection.close()
            throw Failure(
                code: "database_in_use",
                message: "'\(database)' is open in another process (a running `outpost serve`?); stop it, then restore")
        } catch {
            try? await connection.close()
            return
        }
        try await connection.close()
    }

    /// Keeps `database` (and a log or journal of it still beside it) under the name `kept`, while
    /// `database` itself stays in place until the new file replaces it.
    private static func keep(_ database: String, as kept: String) throws {
        let manager = FileManager.default
        for suffix in ["", "-wal", "-journal", "-shm"] { try? manager.removeItem(atPath: kept + suffix) }
        do {
            try manager.linkItem(atPath: database, toPath: kept)
        } catch {
            try manager.copyItem(atPath: database, toPath: kept)
        }
        for suffix in ["-wal", "-journal"] where manager.fileExists(atPath: database + suffix) {
            try manager.moveItem(atPath: database + suffix, toPath: kept + suffix)
        }
    }

    /// The schema version of an Outpost database; ``Failure`` `not_outpost` for any other file.
    private static func schemaVersion(_ connection: BusyBoundedConnection, path: String) async throws -> Int {
        let tables = try await connection.query(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('schema_migrations', 'records', 'users')")
        guard tables.count == 3 else {
            throw Failure(
                code: "not_outpost",
                message: "'\(path)' is a SQLite database but not an Outpost one (no schema_migrations, records and users tables)")
        }
        return try await connection.query("SELECT COALESCE(MAX(version), 0) AS version FROM schema_migrations").first?
            .column("version")?.integer ?? 0
    }

    private static func withConnection<T: Sendable>(
        _ path: String, _ body: (BusyBoundedConnection) async throws -> T
    ) async throws -> T {
        let handle = try await SQLiteHandle.open(path: path)
        let connection = BusyBoundedConnection(connection: handle, busyTimeout: .seconds(10))
        do {
            let value = try await body(connection)
            try await handle.close()
            return value
        } catch {
            try? await handle.close()
            throw error
        }
    }

    /// A name for a new file in the folder of `path` that no file has.
    private static func temporaryName(beside path: String, purpose: String) throws -> String {
        let url = URL(fileURLWithPath: path)
        let folder = url.deletingLastPathComponent().path
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
            throw Failure(code: "folder_missing", message: "The folder '\(folder)' does not exist; create it first")
        }
        return folder + "/." + url.lastPathComponent + ".\(purpose)-" + Identifiers.random()
    }

    private static func flushToDisk(_ path: String) throws {
        guard let handle = FileHandle(forUpdatingAtPath: path) else {
            throw Failure(code: "write_failed", message: "Could not open '\(path)' to flush it to disk")
        }
        defer { try? handle.close() }
        try handle.synchronize()
    }

    /// Renames `from` to `path` (replacing a file there) and flushes the folder.
    private static func install(_ from: String, as path: String) throws {
        guard rename(from, path) == 0 else {
            throw Failure(
                code: "write_failed", message: "Could not rename '\(from)' to '\(path)': \(String(cString: strerror(errno)))")
        }
        FileSync.folderToDisk(URL(fileURLWithPath: path).deletingLastPathComponent().path)
    }
}
