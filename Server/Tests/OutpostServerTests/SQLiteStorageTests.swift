import Foundation
import Logging
@_spi(OutpostInternal) import OutpostSupport
import OutpostTestSupport
import Testing

@testable import OutpostServer

@Suite("SQLite storage", .closesWhatItOpens)
struct SQLiteStorageTests {
    @Test("migrations run once and are recorded; reopening keeps the version")
    func migrations() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-storage-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("db.sqlite").path
        let first = try await SQLiteStorage.open(path: path, logger: Logger(label: "test"))
        #expect(try await first.schemaVersion() == 0)
        try await first.migrate()
        let migrated = try await first.schemaVersion()
        #expect(migrated == SQLiteStorage.migrations.last?.version)
        try await first.migrate()
        #expect(try await first.schemaVersion() == migrated)
        try await first.close()

        let second = try await SQLiteStorage.open(path: path, logger: Logger(label: "test"))
        #expect(try await second.schemaVersion() == migrated)
        try await second.checkHealth()
        try await second.close()
    }

    @Test("a database in a folder that does not exist is a clear error")
    func missingFolder() async throws {
        let error = try await #require(throws: ServerError.self) {
            _ = try await SQLiteStorage.open(path: "/nonexistent-\(UUID().uuidString)/db.sqlite", logger: Logger(label: "test"))
        }
        #expect(error.code == "database_directory_missing")
        #expect(error.message.contains("create it or choose another --database path"))
    }

    /// Runs `body` with the path of a database in a new folder, removed afterwards.
    static func withDatabase(_ body: (String) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-storage-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try await body(folder.appendingPathComponent("db.sqlite").path)
    }

    @Test("a storage counts its connections as open until it closes, also when the closing task is cancelled")
    func countedUntilClosed() async throws {
        try await Self.withDatabase { path in
            let tally = OpenResources()
            let storage = try await OpenResources.$current.withValue(tally) {
                try await SQLiteStorage.open(path: path, logger: Logger(label: "test"))
            }
            #expect(tally.open == 2 + SQLiteStorage.readerCount)
            #expect(OpenResources.process.open >= tally.open)
            // Closed from a task that is already cancelled (a test's cleanup after a failure, a server
            // stopped by cancellation): the connections and their threads must go all the same.
            let closing = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                try await storage.close()
            }
            try await closing.value
            #expect(tally.open == 0)
            // A query after the close fails; it does not touch the closed connection.
            await #expect(throws: (any Error).self) { try await storage.checkHealth() }
        }
    }

    @Test("a scope that leaves a connection open is reported by its tally")
    func tallyReportsLeak() async throws {
        try await Self.withDatabase { path in
            let tally = OpenResources()
            let handle = try await OpenResources.$current.withValue(tally) { try await SQLiteHandle.open(path: path) }
            #expect(tally.open == 1, "still open: what `.closesWhatItOpens` reports at the end of a test")
            try await handle.close()
            try await handle.close()
            #expect(tally.open == 0, "closed once, counted back once")
        }
    }
}
