import ArgumentParser
import Foundation
import Testing

@testable import OutpostServer
@testable import outpost

@Suite("outpost users quota")
struct QuotaCommandTests {
    @Test("sets a user's own bounds (numbers with k, m, g; none; default) that the database then enforces")
    func setAndEnforce() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-quota-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("db.sqlite").path
        let options = try DatabaseOptions.parse(["--database", database])
        let ada = try await options.withStorage { storage in
            try await (storage as? any QuotaStorage)?.setDefaultQuotas(.standard)
            return try await storage.addUser(username: "ada", password: "correct horse").id
        }
        try await QuotaCommand.parse(
            ["ada", "--records", "2", "--file-bytes", "5m", "--record-bytes", "none", "--database", database]
        ).run()
        try await options.withStorage { storage in
            let quotas = try #require(storage as? any QuotaStorage)
            var expected = QuotaOverrides()
            expected.records = .limit(2)
            expected.fileBytes = .limit(5 << 20)
            expected.recordBytes = .unlimited
            #expect(try await quotas.quotaOverrides(user: ada) == expected)
            _ = try await storage.createRecord(type: "a", fields: [:], owner: ada)
            _ = try await storage.createRecord(type: "a", fields: [:], owner: ada)
            await #expect(throws: (any Error).self) { _ = try await storage.createRecord(type: "a", fields: [:], owner: ada) }
        }
        // Back to the default: the third fits.
        try await QuotaCommand.parse(["ada", "--records", "default", "--database", database]).run()
        try await options.withStorage { storage in
            _ = try await storage.createRecord(type: "a", fields: [:], owner: ada)
            #expect(try await (storage as? any QuotaStorage)?.recordUsage(owner: ada).records == 3)
        }
        // Showing changes nothing; an unknown user fails.
        try await QuotaCommand.parse(["ada", "--database", database]).run()
        await #expect(throws: (any Error).self) { try await QuotaCommand.parse(["nobody", "--database", database]).run() }
    }

    @Test("bounds that are not a number, default or none are refused before the database is touched")
    func badBounds() {
        for bound in ["-1", "1.5", "12x", "", "k", "99999999999999999999", "9000000000g"] {
            #expect(throws: (any Error).self, "\(bound)") { try QuotaCommand.parse(["ada", "--records", bound]) }
        }
        #expect(throws: Never.self) { try QuotaCommand.parse(["ada", "--file-bytes", "2G", "--records", "none"]) }
    }
}
