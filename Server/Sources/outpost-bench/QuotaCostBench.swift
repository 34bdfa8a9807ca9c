import Foundation
import OutpostServer
import OutpostServerTesting
@_spi(OutpostInternal) import OutpostSupport
import PostgresNIO

/// What quotas cost a write: records created with an owner through the storage (c=8), on a
/// database whose triggers count each owner's records and check the quota, against the same
/// storage with those triggers dropped, per backend, in interleaved rounds. The HTTP routes add
/// the same cost to a signed-in `POST /records` (the storage group's POSTs are anonymous: records
/// without an owner are neither counted nor checked).
enum QuotaCostBench {
    static let concurrency = 8

    static func run(_ options: BenchOptions) async throws -> [BenchResult] {
        let rounds = options.rounds ?? (options.quick ? 1 : 5)
        let perRound = options.quick ? 400 : 4_000
        var results: [BenchResult] = []
        for backend in ScratchDatabase.backends {
            let counted = try await ScratchDatabase.make(backend)
            let bare = try await ScratchDatabase.make(backend)
            let withQuotas = try await counted.open()
            let without = try await bare.open()
            do {
                try await (withQuotas as? any QuotaStorage)?.setDefaultQuotas(.standard)
                try await dropQuotaTriggers(without)
                var quoted: [Double] = []
                var plain: [Double] = []
                for round in 0..<rounds {
                    // The order alternates, so neither side always runs on a warmer machine.
                    if round.isMultiple(of: 2) {
                        quoted.append(try await creates(withQuotas, count: perRound))
                        plain.append(try await creates(without, count: perRound))
                    } else {
                        plain.append(try await creates(without, count: perRound))
                        quoted.append(try await creates(withQuotas, count: perRound))
                    }
                }
                results.append(
                    BenchResult(
                        name: "quotas [\(backend)]: records created with an owner through the storage (c=\(concurrency)), "
                            + "counted and checked against the owner's quota, created/s",
                        value: StorageBench.median(quoted), unit: "req/s", baseline: "the same without the quota triggers",
                        baselineValue: StorageBench.median(plain)))
                try await withQuotas.close()
                try await without.close()
            } catch {
                try? await withQuotas.close()
                try? await without.close()
                await counted.remove()
                await bare.remove()
                throw error
            }
            await counted.remove()
            await bare.remove()
        }
        return results
    }

    /// Creates per second: `count` records of 8 owners, `concurrency` at a time.
    static func creates(_ storage: any Storage, count: Int) async throws -> Double {
        let clock = ContinuousClock()
        let elapsed = try await clock.measure {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<concurrency {
                    group.addTask {
                        for index in stride(from: worker, to: count, by: concurrency) {
                            _ = try await storage.createRecord(
                                type: "bench", fields: ["title": "bench", "n": .int(index), "done": false],
                                owner: "owner-\(worker)")
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        return Double(count) / elapsed.inSeconds
    }

    static func dropQuotaTriggers(_ storage: any Storage) async throws {
        if let sqlite = storage as? SQLiteStorage {
            for name in [
                "record_quota_insert", "record_quota_update", "record_usage_insert", "record_usage_update", "record_usage_delete",
            ] {
                try await sqlite.execute(unsafeSQL: "DROP TRIGGER \(name)")
            }
        } else if let postgres = storage as? PostgresStorage {
            for name in ["record_quota", "record_usage_update", "record_usage_delete"] {
                try await postgres.execute(PostgresQuery(unsafeSQL: "DROP TRIGGER \(name) ON records"))
            }
        }
    }
}
