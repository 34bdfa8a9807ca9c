import Foundation
import Logging
import Outpost
import OutpostServer
@_spi(OutpostInternal) import OutpostSupport

/// The HTTP cache's figures, on one live loopback server, rounds interleaved: the latency of a
/// cache hit (memory tier, then disk tier) and of a 304 revalidation, each as a ratio to the same
/// GET sent without a cache in the same round.
///
/// - Hit: `GET /openapi.json` (`Cache-Control: public, max-age=300`), baseline the same GET uncached.
/// - Revalidation: `GET /records/bench/{id}` (`private, max-age=0` with an ETag: every read asks,
///   the server answers 304), baseline the same GET uncached (a 200 with the body).
enum CacheBench {
    static func run(_ options: BenchOptions) async throws -> [BenchResult] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-cachebench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var quiet = Logger(label: "outpost.bench")
        quiet.logLevel = .critical
        let running = try await OutpostServer.bench(
            configuration: ServerConfiguration(
                port: 0, databasePath: folder.appendingPathComponent("cache.sqlite").path, logger: quiet)
        ).start()
        let transport = AsyncHTTPClientTransport()
        let configuration = OutpostClient.Configuration(baseURL: running.baseURL)
        let plain = OutpostClient(configuration: configuration, transport: transport)
        let memory = OutpostClient(configuration: configuration, transport: transport, middlewares: [HTTPCache()])
        // A memory tier too small for anything: every hit is read from disk.
        let disk = OutpostClient(
            configuration: configuration, transport: transport,
            middlewares: [HTTPCache(configuration: .init(memoryLimit: 0, directory: folder.appendingPathComponent("http")))])
        var fields: [String: JSONValue] = [:]
        for index in 0..<20 { fields["field\(index)"] = .string(String(repeating: "x", count: 40)) }
        let created = try await plain.send(.post("/records/bench", json: .object(fields))).json()
        let record = "/records/bench/\(created["id"]?.stringValue ?? "")"
        let document = "/openapi.json"

        for client in [memory, disk] {
            for path in [document, record] { _ = try await client.send(.get(path)) }
        }
        let rounds = options.rounds ?? (options.quick ? 4 : 12)
        let perRound = options.quick ? 100 : 400
        var uncachedDocument: [Double] = []
        var memoryHit: [Double] = []
        var diskHit: [Double] = []
        var uncachedRecord: [Double] = []
        var revalidated: [Double] = []
        for round in 0..<rounds {
            // Rotate the order so that drift on the machine is spread over every variant.
            var steps: [() async throws -> Void] = [
                { uncachedDocument.append(try await latency(perRound) { _ = try await plain.send(.get(document)) }) },
                { memoryHit.append(try await latency(perRound) { _ = try await memory.send(.get(document)) }) },
                { diskHit.append(try await latency(perRound) { _ = try await disk.send(.get(document)) }) },
                { uncachedRecord.append(try await latency(perRound) { _ = try await plain.send(.get(record)) }) },
                { revalidated.append(try await latency(perRound) { _ = try await memory.send(.get(record)) }) },
            ]
            steps = Array(steps[(round % steps.count)...] + steps[..<(round % steps.count)])
            for step in steps { try await step() }
        }
        let check = try await memory.send(.get(record))
        guard check.cacheStatus == .revalidated, try await memory.send(.get(document)).cacheStatus == .hit,
            try await disk.send(.get(document)).cacheStatus == .hit
        else { throw BenchError("the cache did not answer as the benchmark expects") }
        let documentBytes = try await plain.send(.get(document)).body.count

        try await transport.shutdown()
        await running.stop()
        return [
            BenchResult(
                name: "cache: hit from memory, GET /openapi.json (\(documentBytes / 1024) kB), latency (lower is better)",
                value: median(memoryHit), unit: "µs", baseline: "the same GET uncached", baselineValue: median(uncachedDocument),
                ratio: median(zip(memoryHit, uncachedDocument).map { $0 / $1 })),
            BenchResult(
                name: "cache: hit from disk, same GET, latency (lower is better)", value: median(diskHit), unit: "µs",
                baseline: "the same GET uncached", baselineValue: median(uncachedDocument),
                ratio: median(zip(diskHit, uncachedDocument).map { $0 / $1 })),
            BenchResult(
                name: "cache: 304 revalidation, GET of a record (\(check.body.count) B), latency (lower is better)",
                value: median(revalidated), unit: "µs", baseline: "the same GET uncached (200)",
                baselineValue: median(uncachedRecord), ratio: median(zip(revalidated, uncachedRecord).map { $0 / $1 })),
        ]
    }

    /// The mean latency of `count` sequential calls, in microseconds.
    static func latency(_ count: Int, _ body: () async throws -> Void) async throws -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        for _ in 0..<count { try await body() }
        return (clock.now - start).inSeconds * 1_000_000 / Double(count)
    }
}
