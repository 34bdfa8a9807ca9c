import Foundation
import OutpostServerTesting
import Testing

@testable import OutpostServer

extension StorageConformanceTests {
    @Test("Invites: spent once, by one of two instances; an expired or unknown one creates nothing", arguments: backends)
    func invites(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, database in
            let second = try await database.open()
            do {
                let (code, _) = try await Invites.issue(in: storage, lifetime: .seconds(600))
                let hash = Secrets.hash(code)
                let now = Identifiers.nowMilliseconds()
                // A taken username: nothing is created and the invite stays.
                _ = try await storage.createUser(username: "taken", passwordHash: "h")
                await #expect(throws: UserWriteFailure.self) {
                    try await second.createUser(username: "TAKEN", passwordHash: "h", inviteHash: hash, now: now)
                }
                // Two instances race for the code: exactly one wins.
                async let first = Self.outcome {
                    try await storage.createUser(username: "one", passwordHash: "h", inviteHash: hash, now: now)
                }
                async let other = Self.outcome {
                    try await second.createUser(username: "two", passwordHash: "h", inviteHash: hash, now: now)
                }
                let results = await [first, other]
                #expect(results.filter { (try? $0.get()) != nil }.count == 1)
                let created = results.compactMap { try? $0.get() }.first
                #expect(try await second.user(username: created?.username ?? "") != nil)
                let loser = created?.username == "one" ? "two" : "one"
                #expect(try await storage.user(username: loser) == nil)
                // Unknown and expired codes.
                await #expect(throws: UserWriteFailure.self) {
                    try await storage.createUser(
                        username: "x1", passwordHash: "h", inviteHash: Secrets.hash("inv_unknown"), now: now)
                }
                try await storage.saveInvite(hash: Secrets.hash("inv_old"), expiresAt: now - 1)
                await #expect(throws: UserWriteFailure.self) {
                    try await storage.createUser(username: "x2", passwordHash: "h", inviteHash: Secrets.hash("inv_old"), now: now)
                }
                #expect(try await storage.user(username: "x2") == nil)
                try await second.close()
            } catch {
                try? await second.close()
                throw error
            }
        }
    }

    static func outcome<T: Sendable>(_ body: @Sendable () async throws -> T) async -> Result<T, any Error> {
        do {
            return .success(try await body())
        } catch {
            return .failure(error)
        }
    }
}
