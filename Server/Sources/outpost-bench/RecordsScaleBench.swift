import Foundation
import Logging
@_spi(OutpostInternal) import OutpostCore
import OutpostServer
@_spi(OutpostInternal) import OutpostSupport

/// Records at a million: the same lookups on a small table and on a large one,
/// through the storage layer (no HTTP), so that the ratio shows what the indexes do.
///
/// - get by id: random ids, large table against small (≈ 1 means the index keeps it flat);
/// - keyset page in the middle of the large table against its first page (≈ 1: no skipping);
/// - page-number page in the middle against its first page (OFFSET: grows with depth, shown for contrast).
enum RecordsScaleBench {
    static func run(_ options: BenchOptions) async throws -> [BenchResult] {
        let large = options.quick ? 20_000 : 1_000_000
        let small = 1_000
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-scale-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var quiet = Logger(label: "outpost.bench")
        quiet.logLevel = .critical
        let storage = try await SQLiteStorage.open(path: folder.appendingPathComponent("scale.sqlite").path, logger: quiet)
        do {
            try await storage.migrate()
            progress("records at scale: seeding \(large) + \(small) records")
            try await seed(storage, type: "small", count: small)
            try await seed(storage, type: "large", count: large)
            let smallIDs = try await sampleIDs(storage, type: "small", count: small)
            let largeIDs = try await sampleIDs(storage, type: "large", count: large)
            let lookups = options.quick ? 500 : 2_000

            let smallGet = try await perOperation(lookups) { index in
                _ = try await storage.record(type: "small", id: smallIDs[index % smallIDs.count])
            }
            let largeGet = try await perOperation(lookups) { index in
                _ = try await storage.record(type: "large", id: largeIDs[index % largeIDs.count])
            }
            let query = RecordQuery(type: "large", limit: 20)
            let middle = try await position(storage, type: "large", at: large / 2)
            let pages = options.quick ? 100 : 400
            let firstKeyset = try await perOperation(pages) { _ in
                _ = try await storage.listRecords(query, from: nil, backwards: false)
            }
            let middleKeyset = try await perOperation(pages) { _ in
                _ = try await storage.listRecords(query, from: middle, backwards: false)
            }
            let numbered = options.quick ? 20 : 20
            let firstNumbered = try await perOperation(numbered) { _ in _ = try await storage.listRecords(query, page: 1) }
            let middleNumbered = try await perOperation(numbered) { _ in
                _ = try await storage.listRecords(query, page: large / 2 / 20)
            }
            try await storage.close()
            return [
                BenchResult(
                    name: "records at scale: get by id in \(large) records, time (lower is better)", value: largeGet, unit: "µs",
                    baseline: "the same in \(small) records", baselineValue: smallGet),
                BenchResult(
                    name: "records at scale: keyset page of 20 at record \(large / 2), time (lower is better)",
                    value: middleKeyset,
                    unit: "µs", baseline: "the first page", baselineValue: firstKeyset),
                BenchResult(
                    name: "records at scale: page-number page of 20 at record \(large / 2) (OFFSET), time (lower is better)",
                    value: middleNumbered, unit: "µs", baseline: "page 1 (includes COUNT)", baselineValue: firstNumbered),
            ]
        } catch {
            try? await storage.close()
            throw error
        }
    }

    static func seed(_ storage: SQLiteStorage, type: String, count: Int) async throws {
        var start = 0
        while start < count {
            let end = min(count, start + 20_000)
            try await storage.createRecords(
                type: type, bodies: (start..<end).map { ["n": .int($0), "name": .string("record \($0)"), "tags": ["a"]] })
            start = end
        }
    }

    /// Ids spread over the whole table, read through the keyset index.
    static func sampleIDs(_ storage: SQLiteStorage, type: String, count: Int) async throws -> [String] {
        var ids: [String] = []
        var position: RecordPosition?
        let step = max(1, count / 200)
        for _ in 0..<200 {
            let page = try await storage.listRecords(RecordQuery(type: type, limit: step), from: position, backwards: false)
            guard let last = page.dropLast(page.count > step ? 1 : 0).last else { break }
            ids.append(last.id)
            position = RecordPosition(time: last.createdAt, seq: last.seq)
        }
        return ids.shuffled()
    }

    static func position(_ storage: SQLiteStorage, type: String, at index: Int) async throws -> RecordPosition {
        let page = try await storage.listRecords(RecordQuery(type: type, limit: 1), page: index)
        guard let record = page.records.first else { throw BenchFailure("no record at \(index)") }
        return RecordPosition(time: record.createdAt, seq: record.seq)
    }

    /// Median-free simple mean over `count` sequential operations, in microseconds.
    static func perOperation(_ count: Int, _ body: (Int) async throws -> Void) async throws -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        for index in 0..<count { try await body(index) }
        return (clock.now - start).inSeconds * 1_000_000 / Double(count)
    }
}
