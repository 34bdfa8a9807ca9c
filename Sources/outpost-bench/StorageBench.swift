import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import OutpostServer
import OutpostSupport

/// Issue 12, storage speed, per backend (SQLite always; PostgreSQL when `OUTPOST_TEST_POSTGRES_URL`
/// names a server, e.g. from `bash .ci/postgres.sh start`): POST /records throughput at c=1, 8 and
/// 64; a record GET against the trivial route; and record GETs under a concurrent POST load of c=8
/// against the same GETs unloaded. Medians of interleaved rounds, all in one run.
enum StorageBench {
    static let readConcurrency = 8
    static let writeConcurrency = 8

    static func run(_ options: BenchOptions) async throws -> [BenchResult] {
        var results: [BenchResult] = []
        for backend in ScratchDatabase.backends {
            results += try await run(options, backend: backend)
        }
        return results
    }

    static func run(_ options: BenchOptions, backend: ScratchDatabase.Backend) async throws -> [BenchResult] {
        let scratch = try await ScratchDatabase.make(backend)
        var logger = Logger(label: "outpost.bench.storage")
        logger.logLevel = .warning
        let server = try OutpostServer(
            configuration: ServerConfiguration(host: "127.0.0.1", port: 0, databasePath: scratch.argument, logger: logger),
            plugins: [])
        let running = try await server.start()
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            let results = try await measure(options, backend: backend, baseURL: running.baseURL, client: client)
            try await client.shutdown()
            await running.stop()
            await scratch.remove()
            return results
        } catch {
            try? await client.shutdown()
            await running.stop()
            await scratch.remove()
            throw error
        }
    }

    static func measure(
        _ options: BenchOptions, backend: ScratchDatabase.Backend, baseURL: URL, client: HTTPClient
    ) async throws -> [BenchResult] {
        let base = baseURL.absoluteString
        let id = try await createOne(client, base)
        let recordURL = try url(base + "/records/bench/\(id)")
        let trivialURL = try url(base + ServerBench.trivialPath)
        let rounds = options.quick ? 1 : 3
        let duration: Duration = options.quick ? .seconds(1) : .seconds(3)
        var trivial: [Double] = []
        var reads: [Double] = []
        var loadedReads: [Double] = []
        var posts: [Int: [Double]] = [1: [], 8: [], 64: []]
        for _ in 0..<rounds {
            trivial.append(
                try await LoadGenerator.run(url: trivialURL, concurrency: readConcurrency, duration: duration).requestsPerSecond)
            reads.append(
                try await LoadGenerator.run(url: recordURL, concurrency: readConcurrency, duration: duration).requestsPerSecond)
            let writer = Task {
                try await postLoad(client, base, concurrency: writeConcurrency, duration: duration + .milliseconds(500))
            }
            loadedReads.append(
                try await LoadGenerator.run(url: recordURL, concurrency: readConcurrency, duration: duration).requestsPerSecond)
            _ = try await writer.value
            for concurrency in [1, 8, 64] {
                posts[concurrency, default: []].append(
                    try await postLoad(client, base, concurrency: concurrency, duration: duration))
            }
        }
        let label = "[\(backend)]"
        let trivialMedian = median(trivial)
        let readMedian = median(reads)
        var results = [
            BenchResult(
                name: "\(label) GET /records/{type}/{id} (c=\(readConcurrency))", value: readMedian, unit: "req/s",
                baseline: "GET \(ServerBench.trivialPath) (c=\(readConcurrency))", baselineValue: trivialMedian),
            BenchResult(
                name: "\(label) GET record under POST load c=\(writeConcurrency)", value: median(loadedReads), unit: "req/s",
                baseline: "the same GET unloaded", baselineValue: readMedian),
        ]
        for concurrency in [1, 8, 64] {
            results.append(
                BenchResult(
                    name: "\(label) POST /records (c=\(concurrency))", value: median(posts[concurrency] ?? []), unit: "req/s",
                    baseline: "GET \(ServerBench.trivialPath) (c=\(readConcurrency))", baselineValue: trivialMedian))
        }
        return results
    }

    static func url(_ text: String) throws -> URL {
        guard let url = URL(string: text) else { throw BenchError("not a URL: \(text)") }
        return url
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }

    static func post(_ client: HTTPClient, _ base: String) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: base + "/records/bench")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: #"{"title":"bench","n":1,"done":false}"#))
        return request
    }

    static func createOne(_ client: HTTPClient, _ base: String) async throws -> String {
        let response = try await client.execute(post(client, base), timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        guard response.status.code == 201,
            let object = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any],
            let id = object["id"] as? String
        else { throw BenchError("POST /records/bench answered \(response.status.code)") }
        return id
    }

    /// Created records per second with `concurrency` clients posting back to back for `duration`.
    static func postLoad(_ client: HTTPClient, _ base: String, concurrency: Int, duration: Duration) async throws -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = start + duration
        let created = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    var count = 0
                    while clock.now < deadline {
                        let response = try await client.execute(post(client, base), timeout: .seconds(10))
                        _ = try await response.body.collect(upTo: 1 << 20)
                        if response.status.code == 201 { count += 1 }
                    }
                    return count
                }
            }
            return try await group.reduce(0, +)
        }
        return Double(created) / (clock.now - start).inSeconds
    }
}
