import Foundation
import Logging
@_spi(OutpostInternal) import OutpostCore
import OutpostExpressions
import OutpostServer
import OutpostServerTesting
@_spi(OutpostInternal) import OutpostSupport

/// Indexed list queries at scale, per backend (PostgreSQL when `OUTPOST_TEST_POSTGRES_URL` or
/// `--postgres URL` names a server): walks of five keyset pages of 20, filtered and sorted by
/// fields through a declared index, against walks of the unfiltered list (by creation time) in
/// the same run, through the storage layer (no HTTP). ≈ 1 means the index keeps a filtered,
/// sorted page as cheap as a plain one.
enum RecordIndexBench {
    static let pagesPerWalk = 5

    static func run(_ options: BenchOptions) async throws -> [BenchResult] {
        var results: [BenchResult] = []
        for backend in ScratchDatabase.backends {
            results += try await measure(options, backend: backend)
        }
        return results
    }

    static func measure(_ options: BenchOptions, backend: ScratchDatabase.Backend) async throws -> [BenchResult] {
        let count = options.quick ? 20_000 : 1_000_000
        var quiet = Logger(label: "outpost.bench")
        quiet.logLevel = .critical
        let scratch = try await ScratchDatabase.make(backend)
        let storage: any Storage
        do {
            storage = try await scratch.open(logger: quiet)
        } catch {
            await scratch.remove()
            throw error
        }
        do {
            progress("indexed lists [\(backend)]: seeding \(count) records")
            try await seed(storage, count: count)
            try await storage.createRecordIndex(try RecordIndex(type: "posts", fields: ["views"]))
            try await storage.createRecordIndex(try RecordIndex(type: "posts", fields: ["tag", "views"]))
            if let postgres = storage as? PostgresStorage { try await postgres.execute("ANALYZE records") }
            let walks = options.quick ? 20 : 100
            let plain = RecordQuery(type: "posts", limit: 20)
            let byViews = try query(filter: "record.views > 500000", sort: "-views")
            let byTag = try query(filter: #"record.tag == "t7""#, sort: "-views")
            // Warm up every query once, then interleave the walks.
            var times: [[Double]] = [[], [], []]
            for round in 0...walks {
                for (index, query) in [plain, byViews, byTag].enumerated() {
                    let time = try await walk(storage, query)
                    if round > 0 { times[index].append(time) }
                }
            }
            let median = times.map { $0.sorted()[$0.count / 2] }
            try await storage.close()
            await scratch.remove()
            let baseline = "an unfiltered keyset page (by created)"
            return [
                BenchResult(
                    name:
                        "indexed lists [\(backend)]: filter=record.views > 500000&sort=-views, keyset page of 20 in \(count) records, "
                        + "time (lower is better)",
                    value: median[1], unit: "µs", baseline: baseline, baselineValue: median[0]),
                BenchResult(
                    name:
                        "indexed lists [\(backend)]: filter=record.tag == \"t7\"&sort=-views, keyset page of 20 in \(count) records, "
                        + "time (lower is better)",
                    value: median[2], unit: "µs", baseline: baseline, baselineValue: median[0]),
            ]
        } catch {
            try? await storage.close()
            await scratch.remove()
            throw error
        }
    }

    static func query(filter: String, sort: String) throws -> RecordQuery {
        var query = RecordQuery(type: "posts", limit: 20)
        query.filter = try RecordPredicate.compile(Condition(parsing: filter, roots: ["record"]), caller: .anonymous)
        query.order =
            sort.split(separator: ",").map { key in
                key.hasPrefix("-")
                    ? RecordOrderKey(.field(String(key.dropFirst())), descending: true) : RecordOrderKey(.field(String(key)))
            } + [RecordOrderKey(.id)]
        return query
    }

    /// The mean time of one page, in µs, over a walk of ``pagesPerWalk`` pages following the last record of each.
    static func walk(_ storage: any Storage, _ query: RecordQuery) async throws -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        var position: RecordPosition?
        for _ in 0..<pagesPerWalk {
            let page = try await storage.listRecords(query, from: position, backwards: false)
            guard page.count > query.limit, let last = page.prefix(query.limit).last else {
                throw BenchFailure("a page came short")
            }
            if let order = query.order {
                position = RecordPosition(values: try RecordOrderValue.values(of: last, keys: order))
            } else {
                position = RecordPosition(time: last.createdAt, seq: last.seq)
            }
        }
        return (clock.now - start).inSeconds * 1_000_000 / Double(pagesPerWalk)
    }

    /// `count` records of type `posts` (`views` spread over 0–999,999, `tag` t0–t9) and as many of another type.
    static func seed(_ storage: any Storage, count: Int) async throws {
        if let postgres = storage as? PostgresStorage {
            for type in ["posts", "others"] {
                try await postgres.execute(
                    """
                    INSERT INTO records (type, id, owner, body, version, created_at, updated_at)
                    SELECT \(type), 'r' || i, NULL,
                           '{"tag":"t' || (i % 10) || '","title":"record ' || i || '","views":' || (i * 7919 % 1000000) || '}',
                           1, 1700000000000 + i, 1700000000000 + i
                    FROM generate_series(1, \(Int64(count))) AS i
                    """)
            }
            return
        }
        guard let sqlite = storage as? SQLiteStorage else { throw BenchFailure("no seeding for this storage") }
        for type in ["posts", "others"] {
            var start = 0
            while start < count {
                let end = min(count, start + 20_000)
                try await sqlite.createRecords(
                    type: type,
                    bodies: (start..<end).map {
                        ["views": .int($0 * 7919 % 1_000_000), "tag": .string("t\($0 % 10)"), "title": .string("record \($0)")]
                    })
                start = end
            }
        }
    }
}
