import Foundation
import Logging
import Testing

@testable import OutpostServer

@Suite("SQLite storage")
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
}
