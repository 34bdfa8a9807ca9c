import AsyncHTTPClient
import Foundation
import NIOHTTP1
import NIOPosix
@_spi(OutpostInternal) import OutpostCore
@_spi(OutpostInternal) import OutpostSupport

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What OutpostClient costs on top of the transport it drives.
///
/// One in-process Hummingbird server on 127.0.0.1 serves `GET /small` (a 104-byte JSON object).
/// Six clients fetch and decode it: (a) raw AsyncHTTPClient, (b) OutpostClient on an
/// AsyncHTTPClientTransport it owns (the default off Apple platforms), (c) raw URLSession, (d)
/// OutpostClient on URLSessionTransport, (e) OutpostClient on an AsyncHTTPClientTransport borrowing
/// (a)'s HTTPClient, at concurrency 1 and 32; at concurrency 1 also (f) a minimal HTTP/1.1 client on
/// NIO with one connection (`LeanNIOClient`, a floor no real client reaches). Every variant sends the same number of requests per round; the rounds
/// rotate the order of the variants, so that drift on the machine is spread over all of them.
/// Requests per second is the median over the rounds; p50 and p99 come from all the rounds' latencies.
enum ClientOverheadBench {
    /// The shape of `GET /small`.
    struct Small: Codable, Sendable {
        var id: Int
        var name: String
        var email: String
        var active: Bool
        var score: Double
        var tags: [String]
    }

    struct Variant: Sendable {
        var label: String
        /// Sends one request and decodes the body; throws on anything but 200.
        var request: @Sendable () async throws -> Void
    }

    struct Plan {
        var concurrency: Int
        var requestsPerRound: Int
        var warmUpRequests: Int
    }

    static func run(_ options: BenchOptions) async throws -> [BenchResult] {
        // Many short rounds rather than a few long ones: the median round shrugs off bursts of other
        // work on the machine, which is shared with the in-process server anyway.
        let rounds = options.rounds ?? (options.quick ? 4 : 12)
        let plans = [
            Plan(concurrency: 1, requestsPerRound: options.quick ? 250 : 1_000, warmUpRequests: options.quick ? 200 : 1_000),
            Plan(concurrency: 32, requestsPerRound: options.quick ? 800 : 4_000, warmUpRequests: options.quick ? 640 : 3_200),
        ]

        // The server runs on an event loop of its own, as a server in another process would: on the
        // clients' shared loops, a connection's two ends land on the same thread or not by the luck
        // of NIO's round robin, which moved whole rows from one run to the next.
        let serverLoop = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server = try await SmallJSONServer.start(eventLoopGroup: serverLoop)
        let url = server.baseURL + "/small"
        let decoder = JSONDecoder()

        // Raw AsyncHTTPClient as an application writes it: AsyncHTTPClient's own defaults (with the
        // process's tracer, a no-op one here), connection attempts not retried as in the SDK's
        // configuration (which only matters when a connection fails). The SDK's default
        // configuration also turns the no-op tracer off: that saving is the SDK's; a raw client
        // configured the same way gets it too.
        var rawConfiguration = HTTPClient.Configuration()
        rawConfiguration.connectionPool.retryConnectionEstablishment = false
        let rawHTTPClient = HTTPClient(eventLoopGroupProvider: .singleton, configuration: rawConfiguration)
        let rawSession = URLSession(configuration: .ephemeral)
        // The SDK on AsyncHTTPClient as an application gets it by default: its transport owns an
        // HTTPClient, on the same shared event loops as the raw one, with the same configuration.
        let sdkOnAHC = OutpostClient(
            configuration: .init(baseURL: URL(string: server.baseURL)!), ownedTransport: AsyncHTTPClientTransport())
        // The SDK borrowing the raw variant's HTTPClient (same pool and connections). Its requests
        // then use the connection the raw variant opened, whichever event loop that is on: when it
        // is not the loop the transport prefers, AsyncHTTPClient's delegate API hops between the two
        // loops at every step of the exchange (see docs/BENCHMARKS.md, Client overhead).
        let sdkBorrowingAHC = OutpostClient(
            configuration: .init(baseURL: URL(string: server.baseURL)!),
            transport: AsyncHTTPClientTransport(borrowing: rawHTTPClient))
        // The URLSession variant borrows the raw URLSession: same session, same connections.
        let sdkOnURLSession = OutpostClient(
            configuration: .init(baseURL: URL(string: server.baseURL)!), transport: URLSessionTransport(borrowing: rawSession))

        // Both sides send the same request: the raw variants add the two header fields the SDK
        // sends (User-Agent, Accept), so the ratio is the client's own work, not extra bytes.
        let userAgent = sdkOnAHC.configuration.userAgent
        var rawRequest = HTTPClientRequest(url: url)
        rawRequest.headers.add(name: "User-Agent", value: userAgent)
        rawRequest.headers.add(name: "Accept", value: "application/json")
        let sameRequest = rawRequest
        var rawURLRequest = URLRequest(url: URL(string: url)!)
        rawURLRequest.setValue(userAgent, forHTTPHeaderField: "User-Agent")
        rawURLRequest.setValue("application/json", forHTTPHeaderField: "Accept")
        let sameURLRequest = rawURLRequest
        let rawAHC = Variant(label: "raw AsyncHTTPClient") {
            let response = try await rawHTTPClient.execute(sameRequest, timeout: .seconds(10))
            guard response.status == .ok else { throw BenchError("raw AsyncHTTPClient got \(response.status)") }
            let buffer = try await response.body.collect(upTo: 1 << 20)
            _ = try decoder.decode(Small.self, from: Data(buffer.readableBytesView))
        }
        let outpostAHC = Variant(label: "OutpostClient on AsyncHTTPClientTransport") {
            _ = try await sdkOnAHC.send(.get("/small"), decoding: Small.self)
        }
        let rawURLSession = Variant(label: "raw URLSession") {
            let (data, response) = try await rawSession.data(for: sameURLRequest)
            guard (response as? HTTPURLResponse)?.statusCode == 200 else { throw BenchError("raw URLSession got \(response)") }
            _ = try decoder.decode(Small.self, from: data)
        }
        let outpostURLSession = Variant(label: "OutpostClient on URLSessionTransport") {
            _ = try await sdkOnURLSession.send(.get("/small"), decoding: Small.self)
        }
        let borrowingAHC = Variant(label: "OutpostClient on AsyncHTTPClientTransport(borrowing:) the raw HTTPClient") {
            _ = try await sdkBorrowingAHC.send(.get("/small"), decoding: Small.self)
        }
        // Profiling only (not in the rounds): the default transport running each exchange on its event loop.
        let sdkOnLoop = OutpostClient(
            configuration: .init(baseURL: URL(string: server.baseURL)!),
            ownedTransport: AsyncHTTPClientTransport(
                configuration: AsyncHTTPClientTransport.defaultConfiguration, exchangesOnEventLoop: true))
        let onLoopAHC = Variant(label: "OutpostClient on AsyncHTTPClientTransport, exchanges on its event loop") {
            _ = try await sdkOnLoop.send(.get("/small"), decoding: Small.self)
        }
        // A floor (profiling and the c=1 rounds only): one keep-alive connection driven straight on NIO.
        let lean = try await LeanNIOClient.connect(host: "127.0.0.1", port: server.port)
        var leanHeaders = HTTPHeaders()
        leanHeaders.add(name: "User-Agent", value: userAgent)
        leanHeaders.add(name: "Accept", value: "application/json")
        let sameLeanHeaders = leanHeaders
        let leanNIO = Variant(label: "lean HTTP/1.1 client on NIO (one connection, a floor)") {
            let (status, body) = try await lean.get("/small", headers: sameLeanHeaders)
            guard status == .ok else { throw BenchError("lean NIO client got \(status)") }
            _ = try decoder.decode(Small.self, from: Data(body.readableBytesView))
        }
        let variants = [rawAHC, outpostAHC, rawURLSession, outpostURLSession, borrowingAHC]
        let profiled = [rawAHC, outpostAHC, rawURLSession, outpostURLSession, borrowingAHC, onLoopAHC, leanNIO]

        // OUTPOST_BENCH_PROFILE=VARIANT:N (VARIANT 0...6 in the order of `profiled`) only sends N requests at c=1
        // through one variant after a warm-up, for an instruction profiler (valgrind --tool=callgrind):
        // the difference between two counts N, divided by their difference, is the cost per request.
        if let profile = ProcessInfo.processInfo.environment["OUTPOST_BENCH_PROFILE"] {
            let parts = profile.split(separator: ":").compactMap { Int($0) }
            guard parts.count == 2, profiled.indices.contains(parts[0]), parts[1] >= 0 else {
                await shutDown()
                throw BenchError("OUTPOST_BENCH_PROFILE must be VARIANT:COUNT, e.g. 1:1000")
            }
            do {
                _ = try await measure(profiled[parts[0]], concurrency: 1, requests: 200)
                _ = try await measure(profiled[parts[0]], concurrency: 1, requests: parts[1])
            } catch {
                await shutDown()
                throw error
            }
            progress("profiled \(parts[1]) requests through \(profiled[parts[0]].label)")
            await shutDown()
            return []
        }

        var results: [BenchResult] = []
        do {
            for plan in plans {
                let variants = plan.concurrency == 1 ? variants + [leanNIO] : variants
                progress(
                    "client overhead at concurrency \(plan.concurrency): \(rounds) rounds of \(plan.requestsPerRound) requests per variant"
                )
                for variant in variants {
                    _ = try await measure(variant, concurrency: plan.concurrency, requests: plan.warmUpRequests)
                }
                var throughput = [[Double]](repeating: [], count: variants.count)
                var latency = [LatencySample](repeating: LatencySample(), count: variants.count)
                for round in 0..<rounds {
                    for offset in 0..<variants.count {
                        let index = (round + offset) % variants.count
                        let (perSecond, sample) = try await measure(
                            variants[index], concurrency: plan.concurrency, requests: plan.requestsPerRound)
                        throughput[index].append(perSecond)
                        latency[index].append(contentsOf: sample)
                    }
                }
                results += compare(
                    1, against: 0, throughput: throughput, latency: &latency, variants: variants, plan: plan, rounds: rounds)
                results += compare(
                    3, against: 2, throughput: throughput, latency: &latency, variants: variants, plan: plan, rounds: rounds)
                results += compare(
                    4, against: 0, throughput: throughput, latency: &latency, variants: variants, plan: plan, rounds: rounds)
                // The default client (AsyncHTTPClientTransport off Apple platforms) against what an app
                // would write with Foundation alone.
                results += compare(
                    1, against: 2, throughput: throughput, latency: &latency, variants: variants, plan: plan, rounds: rounds)
                if plan.concurrency == 1 {
                    // The floor: the minimal client against raw AsyncHTTPClient and against the default client.
                    results += compare(
                        5, against: 0, throughput: throughput, latency: &latency, variants: variants, plan: plan, rounds: rounds)
                    results += compare(
                        5, against: 1, throughput: throughput, latency: &latency, variants: variants, plan: plan, rounds: rounds)
                }
            }
        } catch {
            await shutDown()
            throw error
        }
        await shutDown()
        return results + (try await inMemoryCost(options))

        func shutDown() async {
            try? await sdkOnAHC.shutdown()
            try? await sdkOnLoop.shutdown()
            await lean.close()
            try? await rawHTTPClient.shutdown()
            rawSession.finishTasksAndInvalidate()
            await server.stop()
            try? await serverLoop.shutdownGracefully()
        }
    }

    /// The SDK's own CPU time per request, without a network: `send(_:decoding:)` on a transport that
    /// answers at once with the same 104 bytes, against decoding them with `JSONDecoder` alone.
    /// The difference is what OutpostClient adds to every request (URL building, middleware chain,
    /// retry loop, status and service-error checks); the live figures above add the transport's.
    static func inMemoryCost(_ options: BenchOptions) async throws -> [BenchResult] {
        let iterations = options.quick ? 20_000 : 200_000
        let body = Data(SmallJSONServer.body.utf8)
        let client = OutpostClient(
            configuration: .init(baseURL: URL(string: "http://127.0.0.1:9")!),
            ownedTransport: EntityDecodingBench.FixedResponseTransport(body: body))
        let decoder = JSONDecoder()
        var sdkBest = Double.infinity
        var plainBest = Double.infinity
        for _ in 0..<3 {
            let sdk = try await Stopwatch.opsPerSecond(iterations: iterations) {
                _ = try await client.send(.get("/small"), decoding: Small.self)
            }
            sdkBest = min(sdkBest, 1e6 / sdk)
            let plain = try Stopwatch.opsPerSecond(iterations: iterations) {
                _ = try decoder.decode(Small.self, from: body)
            }
            plainBest = min(plainBest, 1e6 / plain)
        }
        try await client.shutdown()
        return [
            BenchResult(
                name:
                    "client, no network: OutpostClient.send(_:decoding:) on an in-memory transport, time per request (lower is better)",
                value: sdkBest, unit: "µs", baseline: "JSONDecoder alone on the same 104 bytes", baselineValue: plainBest)
        ]
    }

    /// The median of the per-round ratios `values[i] / baselines[i]`: both sides of a ratio ran in the
    /// same round, moments apart, so a burst of other work on the machine touches both.
    static func medianRatio(_ values: [Double], _ baselines: [Double]) -> Double {
        median(zip(values, baselines).map { $0 / $1 })
    }

    /// Rows for variant `index` against variant `baseline`: requests per second (the ratio is the median
    /// of the per-round ratios), p50 and p99.
    private static func compare(
        _ index: Int, against baseline: Int, throughput: [[Double]], latency: inout [LatencySample],
        variants: [Variant], plan: Plan, rounds: Int
    ) -> [BenchResult] {
        let name = "client c=\(plan.concurrency): \(variants[index].label)"
        let base = variants[baseline].label
        return [
            BenchResult(
                name: "\(name), req/s, median of \(rounds) interleaved rounds (higher is better)",
                value: median(throughput[index]), unit: "req/s", baseline: base, baselineValue: median(throughput[baseline]),
                ratio: medianRatio(throughput[index], throughput[baseline])),
            BenchResult(
                name: "\(name), p50 latency (lower is better)", value: latency[index].percentile(0.50).microseconds,
                unit: "µs", baseline: base, baselineValue: latency[baseline].percentile(0.50).microseconds),
            BenchResult(
                name: "\(name), p99 latency (lower is better)", value: latency[index].percentile(0.99).microseconds,
                unit: "µs", baseline: base, baselineValue: latency[baseline].percentile(0.99).microseconds),
        ]
    }

    /// Sends `requests` requests through `variant` from `concurrency` tasks that split them evenly.
    /// Returns requests per second over the whole batch and every request's latency.
    static func measure(_ variant: Variant, concurrency: Int, requests: Int) async throws -> (Double, LatencySample) {
        let clock = ContinuousClock()
        let start = clock.now
        let sample = try await withThrowingTaskGroup(of: LatencySample.self) { group in
            for worker in 0..<concurrency {
                let quota = requests / concurrency + (worker < requests % concurrency ? 1 : 0)
                group.addTask {
                    var sample = LatencySample(reservingCapacity: quota)
                    for _ in 0..<quota {
                        let sent = clock.now
                        try await variant.request()
                        sample.record(clock.now - sent)
                    }
                    return sample
                }
            }
            var all = LatencySample(reservingCapacity: requests)
            for try await sample in group { all.append(contentsOf: sample) }
            return all
        }
        let elapsed = clock.now - start
        return (Double(sample.count) / elapsed.inSeconds, sample)
    }
}
