import Foundation
import OutpostServer
import OutpostServerTesting
import Testing

extension StorageConformanceTests {
    @Test(
        "attempts are counted before they are checked: of 40 at once through two connections, exactly the limit is admitted",
        arguments: backends)
    func reservedAttempts(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, database in
            let other = try await database.open()
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let keys: [(key: String, limit: Int)] = [("pair", 10), ("address", 30)]
            let admitted = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<40 {
                    let store = index.isMultiple(of: 2) ? storage : other
                    group.addTask {
                        try await store.reserveAttempt(keys, at: now + Int64(index), since: now - 1, expiresAt: now + 60_000)
                            == nil
                    }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(admitted == 10, "the pair's limit, however many arrive at once")
            #expect(try await storage.failures(key: "pair", since: now - 1).count == 10)
            #expect(try await storage.failures(key: "address", since: now - 1).count == 10, "refused attempts count nowhere")
            // Full: the answer is the oldest attempt's time, and nothing is recorded.
            let oldest = try #require(try await storage.failures(key: "pair", since: now - 1).oldest)
            #expect(try await other.reserveAttempt(keys, at: now + 100, since: now - 1, expiresAt: now + 60_000) == oldest)
            #expect(try await storage.failures(key: "address", since: now - 1).count == 10)
            // A right guess gives its attempt back: one more is admitted.
            try await other.releaseAttempt(key: "pair", at: oldest)
            #expect(try await storage.failures(key: "pair", since: now - 1).count == 9)
            #expect(try await storage.reserveAttempt(keys, at: now + 101, since: now - 1, expiresAt: now + 60_000) == nil)
            #expect(try await storage.reserveAttempt(keys, at: now + 102, since: now - 1, expiresAt: now + 60_000) != nil)
            try await other.close()
        }
    }
}
