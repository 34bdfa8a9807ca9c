import Foundation
import HTTPTypes
@_spi(OutpostInternal) import OutpostCore
import OutpostServer
import OutpostServerTesting
@_spi(OutpostInternal) import OutpostSupport

/// Reads under writes (`--only reads-under-writes`): per backend, record GETs (c=8) under
/// a POST load of c=8 held to 1,000 POST/s, against the same GETs unloaded measured right before or
/// after them (the order alternates per round), and the bare Hummingbird route the same way: the
/// figure is the median of the per-round ratios, so a machine whose load changes between rounds
/// moves both sides of a ratio alike. The bare route's ratio says what the write load costs a route
/// that touches no storage (the CPUs it takes); the paced load's CPU alone is measured in each round.
///
/// Two write loads, both paced: wrk in a process of its own (``LoadGenerator/runPacedPosts(url:body:concurrency:rate:duration:)``),
/// as the reads are loaded, which measures the server, and the SDK's default transport
/// (`AsyncHTTPClientTransport`) in the server's own process, what an Outpost app writes with. On 2 cores a
/// write load's client takes CPU from the server under test (the SDK's paced client, sleeping
/// between sends, takes more than the server does per POST), which a client on another machine
/// would not: the wrk load measures the server, the SDK load the whole machine. Without wrk on the
/// `PATH` only the SDK load runs.
enum ReadsUnderWritesBench {
    enum Writer: String, CaseIterable {
        case wrk = "wrk, its own process"
        case sdk = "AsyncHTTPClientTransport, in the server's process"
    }

    static func run(_ options: BenchOptions) async throws -> [BenchResult] {
        try await StorageBench.eachBackend { backend, bareURL in
            try await StorageBench.withServer(backend) { _, baseURL in
                let client = AsyncHTTPClientTransport()
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
        _ options: BenchOptions, backend: ScratchDatabase.Backend, baseURL: URL, bareURL: URL, client: AsyncHTTPClientTransport
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
        let postURL = try StorageBench.url(base + "/records/bench")
        let post = HTTPRequest(
            method: .post, scheme: "http", authority: "\(host):\(port)", path: "/records/bench",
            headerFields: [.contentType: "application/json"])
        let bodyText = #"{"title":"bench","n":1,"done":false}"#
        let body = Data(bodyText.utf8)
        let writers: [Writer] = LoadGenerator.wrkPath == nil ? [.sdk] : [.wrk, .sdk]
        /// The created records a second of `writer`'s paced load for `duration`.
        @Sendable func writes(_ writer: Writer, _ duration: Duration) async throws -> Double {
            switch writer {
            case .sdk:
                return try await StorageBench.postLoad(concurrency: StorageBench.writeConcurrency, duration: duration, rate: rate)
                {
                    try await client.send(post, body: body, options: TransportOptions()).0.status == .created
                }
            case .wrk:
                guard
                    let load = try await LoadGenerator.runPacedPosts(
                        url: postURL, body: bodyText, concurrency: StorageBench.writeConcurrency, rate: rate, duration: duration)
                else { throw BenchError("wrk is not on the PATH") }
                guard load.errors == 0 else { throw BenchError("the paced POSTs through wrk: \(load.errors) errors") }
                return load.requestsPerSecond
            }
        }
        progress(
            "reads under writes [\(backend)]: \(rounds) round(s) of \(duration) per figure, writes through \(writers.map(\.rawValue))"
        )
        _ = try await LoadGenerator.run(url: recordURL, concurrency: concurrency, duration: .seconds(1))

        /// Req/s of `url` unloaded and under `writer`'s paced writes, in `round`'s order.
        func pair(_ url: URL, _ writer: Writer, round: Int) async throws -> (unloaded: Double, loaded: Double, written: Double) {
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
                let writer = Task { try await writes(writer, duration + .milliseconds(500)) }
                let load = try await LoadGenerator.run(url: url, concurrency: concurrency, duration: duration)
                written = try await writer.value
                guard load.errors == 0 else { throw BenchError("\(url.path): \(load.errors) errors under a POST load") }
                loaded = load.requestsPerSecond
            }
            return (unloaded, loaded, written)
        }

        // The measured pairs: the record GET and the bare route under each writer's load.
        let routes: [(name: String, url: URL)] = [
            ("GET /records/{type}/{id}", recordURL), ("GET /small (bare Hummingbird route)", bareURL),
        ]
        var pairs: [Writer: [Int: [(unloaded: Double, loaded: Double)]]] = [:]
        var written: [Writer: [Double]] = [:]
        // The paced load alone, per writer: CPU of this process (the server, and the SDK's client)
        // and of the finished children (wrk).
        var writeCPU: [Writer: [(process: Double, children: Double)]] = [:]
        let clock = ContinuousClock()
        for round in 0..<rounds {
            for writer in writers {
                let alone = (CPUAccount.seconds(children: false), CPUAccount.seconds(children: true), clock.now)
                written[writer, default: []].append(try await writes(writer, duration))
                let seconds = (clock.now - alone.2).inSeconds
                writeCPU[writer, default: []].append(
                    (
                        (CPUAccount.seconds(children: false) - alone.0) / seconds,
                        (CPUAccount.seconds(children: true) - alone.1) / seconds
                    ))
            }
            // Routes and writers in an order that rotates each round.
            let measurements = writers.flatMap { writer in routes.indices.map { (writer, $0) } }
            let first = round % measurements.count
            for (writer, route) in measurements[first...] + measurements[..<first] {
                let measured = try await pair(routes[route].url, writer, round: round)
                written[writer, default: []].append(measured.written)
                pairs[writer, default: [:]][route, default: []].append((measured.unloaded, measured.loaded))
            }
        }
        let label = "reads under writes [\(backend)] c=\(concurrency)"
        let median = StorageBench.median
        var results: [BenchResult] = []
        for writer in writers {
            let load = "under POST load c=\(StorageBench.writeConcurrency) held to \(Int(rate))/s (\(writer.rawValue))"
            for (index, route) in routes.enumerated() {
                let measured = pairs[writer]?[index] ?? []
                results.append(
                    BenchResult(
                        name: "\(label): \(route.name) \(load), req/s (ratio: median of \(measured.count) per-round ratios)",
                        value: median(measured.map(\.loaded)), unit: "req/s", baseline: "the same unloaded, in the same round",
                        baselineValue: median(measured.map(\.unloaded)),
                        ratio: median(measured.map { $0.loaded / max($0.unloaded, 1) })))
            }
            let cpu = writeCPU[writer] ?? []
            results += [
                BenchResult(
                    name: "reads under writes [\(backend)]: the paced POST load's own rate (\(writer.rawValue)), created/s",
                    value: median(written[writer] ?? []), unit: "req/s", baseline: "its target", baselineValue: rate),
                BenchResult(
                    name:
                        "reads under writes [\(backend)]: the paced POST load alone (\(writer.rawValue)), CPU of the server's process, % of one core",
                    value: median(cpu.map(\.process)) * 100, unit: "%"),
            ]
            if writer == .wrk {
                results.append(
                    BenchResult(
                        name: "reads under writes [\(backend)]: the paced POST load alone, CPU of wrk, % of one core",
                        value: median(cpu.map(\.children)) * 100, unit: "%"))
            }
        }
        // Every round's record GET ratio under the first writer's load, for the spread.
        for (round, pair) in (pairs[writers[0]]?[0] ?? []).enumerated() {
            results.append(
                BenchResult(
                    name:
                        "\(label): round \(round + 1), GET /records/{type}/{id} under the paced POSTs (\(writers[0].rawValue)), req/s",
                    value: pair.loaded, unit: "req/s", baseline: "the same unloaded", baselineValue: pair.unloaded))
        }
        return results
    }
}
