import ArgumentParser
import Foundation
import Testing

@testable import OutpostServer
@testable import outpost

@Suite("outpost users delete")
struct UserDeleteCommandTests {
    /// A database with ada (two records, a token) and bob (one record). Files: AccountDeletionTests.
    func withDatabase(_ body: (_ database: String, _ ada: String, _ bob: String) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-delete-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("db.sqlite").path
        let options = try DatabaseOptions.parse(["--database", database])
        let (ada, bob) = try await options.withStorage { storage async throws in
            let ada = try await storage.addUser(username: "ada", password: "correct horse", cost: 4).id
            let bob = try await storage.addUser(username: "bob", password: "correct horse", cost: 4).id
            for owner in [ada, ada, bob] { _ = try await storage.createRecord(type: "notes", fields: [:], owner: owner) }
            try await storage.saveToken(
                StoredToken(
                    hash: "ada-token", kind: .access, userID: ada, clientID: "outpost-cli", scope: "records", family: "f1",
                    expiresAt: Int64.max, state: "active"))
            return (ada, bob)
        }
        try await body(database, ada, bob)
    }

    @Test("deletes the user, their records and tokens; bob's record stays")
    func deletes() async throws {
        try await withDatabase { database, ada, bob in
            try await UserDeleteCommand.parse(["ada", "--yes", "--database", database]).run()
            try await DatabaseOptions.parse(["--database", database]).withStorage { storage async throws in
                #expect(try await storage.user(username: "ada") == nil)
                #expect(try await storage.user(username: "bob")?.id == bob)
                #expect(try await storage.token(hash: "ada-token") == nil)
                #expect(try await (storage as? any QuotaStorage)?.recordUsage(owner: ada).records == 0)
                #expect(try await (storage as? any QuotaStorage)?.recordUsage(owner: bob).records == 1)
            }
            // Again: there is no such user any more.
            await #expect(throws: (any Error).self) {
                try await UserDeleteCommand.parse(["ada", "--yes", "--database", database]).run()
            }
        }
    }

    @Test("--transfer-to gives the records to the other user")
    func transfers() async throws {
        try await withDatabase { database, ada, bob in
            try await UserDeleteCommand.parse(["ada", "--transfer-to", "bob", "--yes", "--database", database]).run()
            try await DatabaseOptions.parse(["--database", database]).withStorage { storage async throws in
                #expect(try await storage.user(username: "ada") == nil)
                #expect(try await (storage as? any QuotaStorage)?.recordUsage(owner: bob).records == 3)
                #expect(try await (storage as? any QuotaStorage)?.recordUsage(owner: ada).records == 0)
            }
        }
    }

    @Test("without --yes and without a terminal, or with an unknown recipient, nothing is deleted")
    func refusals() async throws {
        try await withDatabase { database, ada, _ in
            // The test's standard input is not a terminal.
            if isatty(STDIN_FILENO) == 0 {
                await #expect(throws: (any Error).self) {
                    try await UserDeleteCommand.parse(["ada", "--database", database]).run()
                }
            }
            await #expect(throws: (any Error).self) {
                try await UserDeleteCommand.parse(["ada", "--transfer-to", "nobody", "--yes", "--database", database]).run()
            }
            await #expect(throws: (any Error).self) {
                try await UserDeleteCommand.parse(["ada", "--transfer-to", "ada", "--yes", "--database", database]).run()
            }
            try await DatabaseOptions.parse(["--database", database]).withStorage { storage async throws in
                #expect(try await storage.user(username: "ada")?.id == ada)
                #expect(try await (storage as? any QuotaStorage)?.recordUsage(owner: ada).records == 2)
            }
        }
    }
}
