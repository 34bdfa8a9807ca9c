import Foundation
import GRDB
import Logging
import Outpost
import OutpostServer
@_spi(OutpostInternal) import OutpostSupport
import OutpostSync
import Synchronization

/// The offline-first store (OutpostSync) against a live server in this process:
/// - the first pull of a type, in records per second, against streaming the same records as
///   JSON values through `items()` (the store decodes the same pages and also writes them);
/// - the peak resident memory of the process (server and client together) during that pull;
/// - a filtered, sorted local query through a local index, against a hand-written GRDB query of
///   the same rows on the same file (SQL order, the same JSON decoding);
/// - reads of the store from the main actor while a pull applies changes from the feed: their
///   99th percentile, and the changes applied per second.
enum SyncBench {
    static func run(_ options: BenchOptions) async throws -> [BenchResult] {
        let count = options.quick ? 5_000 : 100_000
        let changes = options.quick ? 1_000 : 10_000
        let folder = FileManager.default.temporaryDirectory.appending(path: "outpost-bench-sync-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appending(path: "server.sqlite").path
        var quiet = Logger(label: "outpost.bench")
        quiet.logLevel = .critical

        let seeding = try await seeded(path: path, type: "items", count: count, logger: quiet) { n in
            ["n": .int(n), "views": .int(n % 1000), "title": .string("item \(n)"), "tag": .string("t\(n % 10)")]
        }

        let server = try OutpostServer.bench(configuration: ServerConfiguration(port: 0, databasePath: path, logger: quiet))
        let running = try await server.start()
        let client = OutpostClient(configuration: .init(baseURL: running.baseURL))
        var results: [BenchResult] = []
        do {
            let clock = ContinuousClock()
            var began = clock.now
            var streamed = 0
            for try await value in client.entities(.outpost).items(
                ListRequest(resourcePath: "records/items", of: JSONValue.self, pageSize: 100))
            where value["n"]?.intValue != nil {
                streamed += 1
            }
            let streamRate = Double(count) / (clock.now - began).inSeconds
            guard streamed == count else { throw BenchFailure("streamed \(streamed) of \(count) records") }

            let store = try SyncedStore(folder: folder.appending(path: "store"), client: client)
            Memory.resetPeak()
            let rssBefore = Memory.residentBytes()
            began = clock.now
            try await store.pull("items")
            let pullRate = Double(count) / (clock.now - began).inSeconds
            let peak = Memory.peakResidentBytes()
            results.append(
                BenchResult(
                    name: "sync: first pull of \(count) records into a SyncedStore (higher is better)", value: pullRate,
                    unit: "records/s", baseline: "the same records as JSONValue through items()", baselineValue: streamRate))
            // The growth of the whole process (the server's pages included) bounds what the
            // store itself takes; the process was larger before the pull than a bare app is.
            results.append(
                BenchResult(
                    name: "sync: resident memory added during that pull (server and client in one process; lower is better)",
                    value: Double(max(0, peak - rssBefore)) / 1_048_576, unit: "MB", baseline: "resident before the pull",
                    baselineValue: Double(rssBefore) / 1_048_576))
            results.append(try await query(store, count: count, options: options))
            results += try await readsWhileApplying(store, client: client, count: count, changes: changes)
        } catch {
            try? await client.shutdown()
            await running.stop()
            try? await seeding.close()
            throw error
        }
        try await client.shutdown()
        await running.stop()
        try await seeding.close()
        return results
    }

    /// `record.views >= 990` (1% of the records) sorted by `-views`, through the store and through GRDB.
    static func query(_ store: SyncedStore, count: Int, options: BenchOptions) async throws -> BenchResult {
        try await store.index("items", on: ["views"])
        let expected = count / 100
        let reader = try DatabaseQueue(path: store.fileURL.path)
        let rounds = options.quick ? 5 : 20
        let clock = ContinuousClock()
        var ours: [Duration] = []
        var theirs: [Duration] = []
        for _ in 0..<rounds {
            var found = 0
            ours.append(
                try await clock.measure {
                    found = try await store.query("items", filter: "record.views >= 990", sort: "-views").count
                })
            guard found == expected else { throw BenchFailure("the store's query found \(found) of \(expected)") }
            theirs.append(
                try await clock.measure {
                    found = try await reader.read { db in
                        let rows = try Row.fetchCursor(
                            db,
                            sql: """
                                SELECT id, fields FROM records
                                WHERE type = 'items' AND json_extract(fields, '$."views"') >= 990
                                ORDER BY json_extract(fields, '$."views"') DESC, id
                                """)
                        var decoded: [(String, [String: JSONValue])] = []
                        while let row = try rows.next() {
                            let text: String = row["fields"]
                            decoded.append((row["id"], try JSONValue(parsing: Data(text.utf8)).objectValue ?? [:]))
                        }
                        return decoded.count
                    }
                })
            guard found == expected else { throw BenchFailure("the GRDB query found \(found) of \(expected)") }
        }
        try reader.close()
        let median = { (times: [Duration]) in times.sorted()[times.count / 2] }
        return BenchResult(
            name: "sync: local query, \(expected) of \(count) records by an indexed filter, sorted (lower is better)",
            value: median(ours).microseconds, unit: "µs", baseline: "a hand-written GRDB query of the same rows",
            baselineValue: median(theirs).microseconds)
    }

    /// Changes `changes` records on the server (batches of 100 through `POST /records/batch`),
    /// then pulls them while the main actor reads the store.
    static func readsWhileApplying(
        _ store: SyncedStore, client: OutpostClient, count: Int, changes: Int
    ) async throws -> [BenchResult] {
        try await store.index("items", on: ["n"])
        let ids = try await store.query("items", filter: "record.n < \(changes)").map(\.id)
        for start in stride(from: 0, to: ids.count, by: 100) {
            let operations: [JSONValue] = ids[start..<min(ids.count, start + 100)].map { id in
                ["method": "PATCH", "type": "items", "id": .string(id), "body": ["views": -1]]
            }
            _ = try await client.send(.post("/records/batch", json: ["operations": .array(operations)]))
        }
        let clock = ContinuousClock()
        let began = clock.now
        let done = Flag()
        let pull = Task {
            defer { done.set() }
            try await store.pull("items")
        }
        let sample = await Task { @MainActor in
            var sample = LatencySample(reservingCapacity: 10_000)
            var index = 0
            while !done.isSet {
                let n = index % count
                index += 1
                let read = clock.now
                _ = try? await store.query("items", filter: "record.n == \(n)")
                sample.record(clock.now - read)
            }
            return sample
        }.value
        try await pull.value
        let elapsed = clock.now - began
        let applied = try await store.query("items", filter: "record.views == -1").count
        guard applied == changes else { throw BenchFailure("the pull applied \(applied) of \(changes) changes") }
        var reads = sample
        return [
            BenchResult(
                name:
                    "sync: reads of the store from the main actor while a pull applies \(changes) changes, p99 (lower is better)",
                value: reads.percentile(0.99).microseconds / 1_000, unit: "ms", baseline: "median read",
                baselineValue: reads.percentile(0.5).microseconds / 1_000),
            BenchResult(
                name: "sync: changes applied from the feed while reading (\(reads.count) reads meanwhile)",
                value: Double(changes) / elapsed.inSeconds, unit: "changes/s"),
        ]
    }

    /// Set once, read from any task.
    final class Flag: Sendable {
        private let value = Atomic(false)
        func set() { value.store(true, ordering: .releasing) }
        var isSet: Bool { value.load(ordering: .acquiring) }
    }
}
