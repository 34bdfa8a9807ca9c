import Foundation
import HTTPTypes
import OutpostCore
import OutpostServer
import OutpostSupport

/// Issue 12, reads under writes (`--only reads-under-writes`): per backend, record GETs (c=8) under
/// a POST load of c=8 held to 1,000 POST/s, against the same GETs unloaded measured right before or
/// after them (the order alternates per round), and the bare Hummingbird route the same way: the
/// figure is the median of the per-round ratios, so a machine whose load changes between rounds
/// moves both sides of a ratio alike. The bare route's ratio says what the write load costs a route
/// that touches no storage (the CPUs it takes); the paced load's CPU alone is measured in each round.
///
/// The POSTs are sent through the SDK's default transport (`NIOHTTPTransport`), what an Outpost
/// app writes with, rather than AsyncHTTPClient as in the storage group: on 2 cores the write
/// load's own client takes CPU from the reads, and this one takes less per request.
enum ReadsUnderWritesBench {
    static func run(_ options: BenchOptions) async throws -> [BenchResult] {
        try await StorageBench.eachBackend { backend, bareURL in
            try await StorageBench.withServer(backend) { _, baseURL in
                let client = NIOHTTPTransport()
                do {
                    let results = try await measure(options, backend: backend, baseURL: baseURL, bareURL: bareURL, client: client)
                    try await client.shutdown()
                    return results
                } catch {
                    try? await client.shutdown()
                    throw error
                }
            }
        }
    }

    static func measure(
        _ options: BenchOptions, backend: ScratchDatabase.Backend, baseURL: URL, bareURL: URL, client: NIOHTTPTransport
    ) async throws -> [BenchResult] {
        let base = baseURL.absoluteString
        progress("reads under writes [\(backend)]: seeding")
        let seeded = try await ServerBench.seedRecords(baseURL, count: options.quick ? 40 : 200)
        guard let recordPath = seeded.recordPath else { throw BenchError("seeding returned no record path") }
        let recordURL = try StorageBench.url(base + recordPath)
        let rounds = options.rounds ?? (options.quick ? 1 : 5)
        let duration: Duration = options.quick ? .seconds(1) : .seconds(3)
        let rate = StorageBench.pacedWriteRate
        let concurrency = StorageBench.readConcurrency
        guard let host = baseURL.host, let port = baseURL.port else { throw BenchError("no host and port in \(baseURL)") }
        let post = HTTPRequest(
            method: .post, scheme: "http", authority: "\(host):\(port)", path: "/records/bench",
            headerFields: [.contentType: "application/json"])
        let body = Data(#"{"title":"bench","n":1,"done":false}"#.utf8)
        let writes: @Sendable (Duration) async throws -> Double = { duration in
            try await StorageBench.postLoad(concurrency: StorageBench.writeConcurrency, duration: duration, rate: rate) {
                try await client.send(post, body: body, options: TransportOptions()).0.status == .created
            }
        }
        progress("reads under writes [\(backend)]: \(rounds) round(s) of \(duration) per figure")
        _ = try await LoadGenerator.run(url: recordURL, concurrency: concurrency, duration: .seconds(1))

        /// Req/s of `url` unloaded and under the paced writes, in `round`'s order.
        func pair(_ url: URL, round: Int) async throws -> (unloaded: Double, loaded: Double, written: Double) {
            var unloaded = 0.0
            var loaded = 0.0
            var written = 0.0
            for underWrites in round.isMultiple(of: 2) ? [false, true] : [true, false] {
                if !underWrites {
                    let load = try await LoadGenerator.run(url: url, concurrency: concurrency, duration: duration)
                    guard load.errors == 0 else { throw BenchError("\(url.path): \(load.errors) errors") }
                    unloaded = load.requestsPerSecond
                    continue
                }
                let writer = Task { try await writes(duration + .milliseconds(500)) }
                let load = try await LoadGenerator.run(url: url, concurrency: concurrency, duration: duration)
                written = try await writer.value
                guard load.errors == 0 else { throw BenchError("\(url.path): \(load.errors) errors under a POST load") }
                loaded = load.requestsPerSecond
            }
            return (unloaded, loaded, written)
        }

        var record: [(unloaded: Double, loaded: Double)] = []
        var bareRoute: [(unloaded: Double, loaded: Double)] = []
        var written: [Double] = []
        var writeCPU: [Double] = []
        let clock = ContinuousClock()
        for round in 0..<rounds {
            let alone = (CPUAccount.seconds(children: false), clock.now)
            written.append(try await writes(duration))
            writeCPU.append((CPUAccount.seconds(children: false) - alone.0) / (clock.now - alone.1).inSeconds)
            // The two routes in alternating order too.
            for route in round.isMultiple(of: 2) ? [0, 1] : [1, 0] {
                let measured = try await pair(route == 0 ? recordURL : bareURL, round: round)
                written.append(measured.written)
                if route == 0 {
                    record.append((measured.unloaded, measured.loaded))
                } else {
                    bareRoute.append((measured.unloaded, measured.loaded))
                }
            }
        }
        let label = "reads under writes [\(backend)] c=\(concurrency)"
        let load = "under POST load c=\(StorageBench.writeConcurrency) held to \(Int(rate))/s"
        let median = StorageBench.median
        func row(_ name: String, _ pairs: [(unloaded: Double, loaded: Double)]) -> BenchResult {
            BenchResult(
                name: "\(label): \(name) \(load), req/s (ratio: median of \(pairs.count) per-round ratios)",
                value: median(pairs.map(\.loaded)), unit: "req/s", baseline: "the same unloaded, in the same round",
                baselineValue: median(pairs.map(\.unloaded)), ratio: median(pairs.map { $0.loaded / max($0.unloaded, 1) }))
        }
        var results = [
            row("GET /records/{type}/{id}", record),
            row("GET /small (bare Hummingbird route)", bareRoute),
            BenchResult(
                name: "reads under writes [\(backend)]: the paced POST load's own rate, created/s", value: median(written),
                unit: "req/s", baseline: "its target", baselineValue: rate),
            BenchResult(
                name:
                    "reads under writes [\(backend)]: the paced POST load alone, CPU of this process (server and POST client), % of one core",
                value: median(writeCPU) * 100, unit: "%"),
        ]
        // Every round's record GET ratio, for the spread.
        for (round, pair) in record.enumerated() {
            results.append(
                BenchResult(
                    name: "\(label): round \(round + 1), GET /records/{type}/{id} \(load), req/s", value: pair.loaded,
                    unit: "req/s", baseline: "the same unloaded", baselineValue: pair.unloaded))
        }
        return results
    }
}
