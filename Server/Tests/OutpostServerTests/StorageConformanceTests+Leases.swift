import Foundation
import OutpostServerTesting
import Testing

@testable import OutpostServer

extension StorageConformanceTests {
    @Test("Leases: one holder at a time across instances; renewed by its holder, taken over once expired", arguments: backends)
    func leases(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, database in
            let first = try #require(storage as? any LeaseStorage)
            let opened = try await database.open()
            do {
                let second = try #require(opened as? any LeaseStorage)
                let now: Int64 = 1_000_000
                // Two instances race for a new lease: exactly one takes it, with the initial state.
                async let a = first.acquireLease("job:x", holder: "a", now: now, expiresAt: now + 100, initialState: "s0")
                async let b = second.acquireLease("job:x", holder: "b", now: now, expiresAt: now + 100, initialState: "s0")
                let taken = try await [a, b]
                #expect(taken.compactMap { $0 } == ["s0"])
                let winner = taken[0] != nil ? "a" : "b"
                let loser = winner == "a" ? "b" : "a"
                // The loser cannot store state; the holder can, and renews.
                #expect(try await second.updateLease("job:x", holder: loser, state: "bad", expiresAt: now + 500) == false)
                #expect(try await first.updateLease("job:x", holder: winner, state: "s1", expiresAt: now + 200) == true)
                #expect(
                    try await second.acquireLease("job:x", holder: loser, now: now + 150, expiresAt: now + 300, initialState: "")
                        == nil)
                #expect(
                    try await first.acquireLease("job:x", holder: winner, now: now + 150, expiresAt: now + 300, initialState: "")
                        == "s1")
                // Expired: the other takes it over with the stored state; the old holder is locked out.
                #expect(
                    try await second.acquireLease("job:x", holder: loser, now: now + 300, expiresAt: now + 400, initialState: "")
                        == "s1")
                #expect(try await first.updateLease("job:x", holder: winner, state: "s2", expiresAt: now + 900) == false)
                // Released: free at once, state kept; names are separate.
                try await second.releaseLease("job:x", holder: loser)
                #expect(
                    try await first.acquireLease("job:x", holder: winner, now: now + 301, expiresAt: now + 500, initialState: "")
                        == "s1")
                #expect(
                    try await first.acquireLease("job:y'; --", holder: winner, now: now, expiresAt: now + 1, initialState: "y")
                        == "y")
                try await opened.close()
            } catch {
                try? await opened.close()
                throw error
            }
        }
    }
}
