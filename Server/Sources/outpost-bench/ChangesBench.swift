import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import Outpost
import OutpostServer

/// Figures for live changes, on the in-process server (127.0.0.1, port 0, a temporary
/// SQLite file):
///
/// - delivery latency: from the start of a write (`push`, POST) on one client to the change event
///   arriving through `changes(of:)` on another, p50 and p99, against a plain GET round trip
///   (`pull`) measured in the same interleaved rounds;
/// - idle subscribers: how many streams the server holds, and the resident memory each costs,
///   against the same number of idle keep-alive connections (the baseline: what any connection
///   costs, client and server side, in this one process).
enum ChangesBench {
    struct Tick: Entity {
        static let resourcePath = "records/ticks"
        var id: String?
        var n: Int
    }

    static func run(_ options: BenchOptions) async throws -> [BenchResult] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var quiet = Logger(label: "outpost.bench")
        quiet.logLevel = .critical
        var configuration = ServerConfiguration(
            port: 0, databasePath: folder.appendingPathComponent("bench.sqlite").path, logger: quiet)
        configuration.changes.maxSubscribers = 100_000
        // Every subscriber of the bench comes from one address, without a token, on its own connection.
        configuration.changes.maxAnonymousSubscribers = 100_000
        configuration.changes.maxStreamsPerAddress = 100_000
        configuration.maxConnections = 100_000
        let running = try await OutpostServer.bench(configuration: configuration).start()
        var results: [BenchResult] = []
        do {
            results += try await latency(running.baseURL, options)
            results += try await idleSubscribers(running.baseURL, options)
        } catch {
            await running.stop()
            throw error
        }
        await running.stop()
        return results
    }

    static func latency(_ baseURL: URL, _ options: BenchOptions) async throws -> [BenchResult] {
        let writer = OutpostClient(configuration: .init(baseURL: baseURL))
        let watcher = OutpostClient(configuration: .init(baseURL: baseURL))
        let (arrivals, sink) = AsyncStream.makeStream(of: (String, ContinuousClock.Instant).self)
        let first = try await writer.entities().push(Tick(n: -1))
        let watching = Task {
            for try await change in watcher.entities().changes(of: Tick.self, after: "0") {
                sink.yield((change.id, ContinuousClock.now))
            }
        }
        var arrived = arrivals.makeAsyncIterator()
        // The first write's event shows the subscription is live.
        guard await arrived.next()?.0 == first.id else { throw BenchFailure("the change stream did not start") }
        let rounds = options.quick ? 3 : 9
        let perRound = options.quick ? 50 : 200
        var delivery = LatencySample()
        var roundTrip = LatencySample()
        var ratios: [Double] = []
        let store = writer.entities()
        for round in 0..<rounds {
            var roundDelivery = LatencySample()
            var roundTrips = LatencySample()
            for index in 0..<perRound {
                let clock = ContinuousClock()
                let began = clock.now
                _ = try await store.pull(Tick.self, id: first.value.id ?? "")
                roundTrips.record(clock.now - began)
                let written = clock.now
                let tick = try await store.push(Tick(n: round * perRound + index))
                guard let (id, at) = await arrived.next(), id == tick.id else {
                    throw BenchFailure("a change arrived out of order or not at all")
                }
                roundDelivery.record(at - written)
            }
            ratios.append(roundDelivery.percentile(0.5).microseconds / roundTrips.percentile(0.5).microseconds)
            delivery.append(contentsOf: roundDelivery)
            roundTrip.append(contentsOf: roundTrips)
        }
        watching.cancel()
        _ = await watching.result
        try await writer.shutdown()
        try await watcher.shutdown()
        let count = rounds * perRound
        return [
            BenchResult(
                name: "changes: write on one client → event on another, p50 (\(count) writes, lower is better)",
                value: delivery.percentile(0.5).microseconds, unit: "µs", baseline: "GET round trip p50",
                baselineValue: roundTrip.percentile(0.5).microseconds, ratio: median(ratios)),
            BenchResult(
                name: "changes: write on one client → event on another, p99 (lower is better)",
                value: delivery.percentile(0.99).microseconds, unit: "µs", baseline: "GET round trip p99",
                baselineValue: roundTrip.percentile(0.99).microseconds),
        ]
    }

    static func idleSubscribers(_ baseURL: URL, _ options: BenchOptions) async throws -> [BenchResult] {
        let count = options.quick ? 200 : 2_000
        let base = baseURL.absoluteString
        // Baseline: as many idle keep-alive connections (one GET /health each, then left open).
        let baseline = try await residentDelta {
            let http = client(connections: count)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<count {
                    group.addTask {
                        let response = try await http.execute(HTTPClientRequest(url: base + "/health"), timeout: .seconds(30))
                        _ = try await response.body.collect(upTo: 1 << 16)
                    }
                }
                try await group.waitForAll()
            }
            return http
        }
        // The baseline's connections stay open meanwhile, so memory they free is not counted for
        // the subscribers. Subscribers: each a change stream that has received its `ready` event, then idle.
        let streams = try await residentDelta {
            let http = client(connections: count)
            // Each subscriber reports once: ready (nil) or the error that stopped it.
            let (readies, ready) = AsyncStream.makeStream(of: (any Error)?.self)
            for _ in 0..<count {
                Task {
                    var body: HTTPClientResponse.Body.AsyncIterator
                    do {
                        var request = HTTPClientRequest(url: base + "/records/ticks/changes")
                        request.headers.add(name: "Accept", value: "text/event-stream")
                        let response = try await http.execute(request, timeout: .seconds(30))
                        guard response.status == .ok else { throw BenchFailure("a subscription answered \(response.status)") }
                        body = response.body.makeAsyncIterator()
                        _ = try await body.next()
                    } catch {
                        ready.yield(error)
                        return
                    }
                    ready.yield(nil)
                    // Idle until the client shuts down.
                    while (try? await body.next()) != nil {}
                }
            }
            var remaining = count
            for await failure in readies {
                if let failure { throw failure }
                remaining -= 1
                if remaining == 0 { break }
            }
            return http
        }
        // The server still answers while it holds them. On a client of its own: every connection
        // of the subscribers' client is taken by a stream, so a request there would wait for one
        // until AsyncHTTPClient gave up (getConnectionFromPoolTimeout, after the connect timeout).
        let probe = client(connections: 1)
        let health = try await probe.execute(HTTPClientRequest(url: base + "/health"), timeout: .seconds(30))
        try await probe.shutdown()
        guard health.status == .ok else { throw BenchFailure("/health answered \(health.status) with \(count) subscribers") }
        try await streams.http.shutdown()
        try await baseline.http.shutdown()
        return [
            BenchResult(name: "changes: idle subscribers held by one server", value: Double(count), unit: "streams"),
            BenchResult(
                name: "changes: resident memory per idle subscriber (both ends, one process; lower is better)",
                value: Double(streams.bytes) / Double(count) / 1024, unit: "KiB", baseline: "idle keep-alive connection",
                baselineValue: Double(baseline.bytes) / Double(count) / 1024),
        ]
    }

    /// A client with room for `connections` connections to the server. Thousands of connections
    /// opened at once on a small machine take longer than AsyncHTTPClient's default connect timeout
    /// (10 s, also the longest a request waits for a pooled connection): a minute instead.
    static func client(connections: Int) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(120), concurrentHTTP1ConnectionsPerHostSoftLimit: connections)
        configuration.timeout.connect = .seconds(60)
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// Resident memory added while `body` runs.
    static func residentDelta(_ body: () async throws -> HTTPClient) async throws -> (http: HTTPClient, bytes: Int) {
        let before = Memory.residentBytes()
        let http = try await body()
        return (http, max(0, Memory.residentBytes() - before))
    }
}
