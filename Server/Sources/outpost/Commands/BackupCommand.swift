import ArgumentParser
import Foundation
import OutpostServer

/// `outpost backup DEST`: a consistent copy of a SQLite database, also while a server writes to it.
struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Write a consistent copy of the SQLite database to a new file, also while servers write to it.",
        discussion: """
            The copy holds every write committed before it began (SQLite's VACUUM INTO, one read transaction), \
            in one self-contained file. It is written under a temporary name beside DEST, flushed to disk, then \
            renamed, so DEST never holds part of a copy. The files folder (outpost-files beside the database) is \
            not copied: docs/DEPLOYMENT.md, "Backups", says how. On PostgreSQL use pg_dump (same section).
              outpost backup /var/backups/outpost-2026-11-29.sqlite --database /srv/outpost/outpost.sqlite
            """)

    @Argument(help: "The file to write; it must not exist unless --force.") var destination: String
    @Flag(help: "Replace DEST if it exists.") var force = false
    @OptionGroup var options: DatabaseOptions

    func run() async throws {
        guard case .sqlite(let path) = try DatabaseLocation(options.database) else {
            throw ValidationError(
                "outpost backup copies a SQLite database; back up PostgreSQL with pg_dump --format=custom (docs/DEPLOYMENT.md)")
        }
        do {
            let summary = try await SQLiteBackup.backup(database: path, to: destination, force: force)
            print(
                "wrote \(summary.path): \(summary.bytes) bytes, schema version \(summary.schemaVersion), "
                    + "\(summary.records) records, \(summary.users) users")
        } catch let failure as SQLiteBackup.Failure {
            FileHandle.standardError.write(Data("error: \(failure.message)\n".utf8))
            throw ExitCode.failure
        }
    }
}

/// `outpost restore SOURCE`: installs a backup as the database, once it has been checked.
struct RestoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Check a backup and install it as the SQLite database (stop every server on it first).",
        discussion: """
            SOURCE must pass SQLite's integrity check, be an Outpost database, and have a schema version this \
            outpost knows. An existing database is replaced only with --force and only while no process has it \
            open; it is kept as DATABASE.before-restore. The new file is renamed into place.
              outpost restore /var/backups/outpost-2026-11-29.sqlite --database /srv/outpost/outpost.sqlite --force
            """)

    @Argument(help: "The backup to restore.") var source: String
    @Flag(help: "Replace the database if it exists (it is kept as DATABASE.before-restore).") var force = false
    @OptionGroup var options: DatabaseOptions

    func run() async throws {
        guard case .sqlite(let path) = try DatabaseLocation(options.database) else {
            throw ValidationError(
                "outpost restore installs a SQLite database; restore PostgreSQL with pg_restore (docs/DEPLOYMENT.md)")
        }
        do {
            let restored = try await SQLiteBackup.restore(from: source, to: path, force: force)
            let summary = restored.summary
            print(
                "restored \(summary.path) from \(source): schema version \(summary.schemaVersion), "
                    + "\(summary.records) records, \(summary.users) users")
            if let previous = restored.previous { print("the previous database is kept as \(previous)") }
        } catch let failure as SQLiteBackup.Failure {
            FileHandle.standardError.write(Data("error: \(failure.message)\n".utf8))
            throw ExitCode.failure
        }
    }
}
