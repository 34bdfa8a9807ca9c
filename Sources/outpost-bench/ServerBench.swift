import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import OutpostServer

/// Issue 7, part 3: the reference server's throughput on its routes, against a trivial route of the
/// same server in the same run.
///
/// The server runs in this process on 127.0.0.1, port 0, with a fresh SQLite database in a temporary
/// folder and request logging at `warning` (the default `info` would log every request to stderr and
/// measure the terminal). Load comes from ``LoadGenerator`` (wrk when installed). The routes are
/// measured in rotating order over several rounds; the median round counts.
///
/// The baseline is `GET /openapi.json`: fixed bytes, no database. `GET /health` (two tiny SQLite
/// queries) is the first database-backed route. The record routes slot in through `recordPath`
/// and `listPath`, or through `seed`, which runs against the live server before any measuring and
/// can create records and return their paths (ids are assigned by the server):
///
/// ```swift
/// results += try await ServerBench.run(options, seed: { baseURL in
///     // POST a few hundred records to /records/bench, then:
///     (recordPath: "/records/bench/\(id)", listPath: "/records/bench?limit=50")
/// })
/// ```
enum ServerBench {
    static let concurrency = 32
    static let trivialPath = "/openapi.json"

    struct Route {
        var label: String
        var path: String
    }

    static func run(
        _ options: BenchOptions, recordPath: String? = nil, listPath: String? = nil,
        seed: (@Sendable (_ baseURL: URL) async throws -> (recordPath: String?, listPath: String?))? = nil
    ) async throws -> [BenchResult] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var logger = Logger(label: "outpost.bench.server")
        logger.logLevel = .warning
        let server = try OutpostServer(
            configuration: ServerConfiguration(
                host: "127.0.0.1", port: 0, databasePath: folder.appendingPathComponent("bench.sqlite").path, logger: logger),
            plugins: [])
        let running = try await server.start()
        do {
            let results = try await measure(
                options, baseURL: running.baseURL, recordPath: recordPath, listPath: listPath, seed: seed)
            await running.stop()
            return results
        } catch {
            await running.stop()
            throw error
        }
    }

    private static func measure(
        _ options: BenchOptions, baseURL: URL, recordPath: String?, listPath: String?,
        seed: (@Sendable (URL) async throws -> (recordPath: String?, listPath: String?))?
    ) async throws -> [BenchResult] {
        var recordPath = recordPath
        var listPath = listPath
        if let seed {
            let seeded = try await seed(baseURL)
            recordPath = seeded.recordPath ?? recordPath
            listPath = seeded.listPath ?? listPath
        }
        var routes = [
            Route(label: "GET \(trivialPath) (static bytes)", path: trivialPath),
            Route(label: "GET /health (2 SQLite queries)", path: "/health"),
        ]
        if let recordPath { routes.append(Route(label: "GET /records/{type}/{id}", path: recordPath)) }
        if let listPath { routes.append(Route(label: "GET \(listPath) (one list page)", path: listPath)) }

        let tool = LoadGenerator.defaultTool
        let rounds = options.quick ? 1 : 3
        let duration: Duration = options.quick ? .seconds(1) : .seconds(3)
        let warmUp: Duration = options.quick ? .seconds(1) : .seconds(2)
        progress(
            "server: \(routes.count) routes with \(tool.rawValue), c=\(concurrency), \(rounds) round(s) of \(duration) each"
                + (tool == .builtIn ? " (install wrk for a load generator outside this process)" : ""))

        let urls = try routes.map { route -> URL in
            guard let url = URL(string: route.path, relativeTo: baseURL)?.absoluteURL else {
                throw BenchError("'\(route.path)' is not a path on \(baseURL)")
            }
            return url
        }
        try await checkAnswers200(urls)

        // Warm up: the trivial route in quick mode, every route otherwise.
        for url in options.quick ? [urls[0]] : urls {
            _ = try await LoadGenerator.run(url: url, concurrency: concurrency, duration: warmUp, tool: tool)
        }
        var perSecond = [[Double]](repeating: [], count: routes.count)
        var p99 = [[Double]](repeating: [], count: routes.count)
        for round in 0..<rounds {
            for offset in 0..<routes.count {
                let index = (round + offset) % routes.count
                let load = try await LoadGenerator.run(url: urls[index], concurrency: concurrency, duration: duration, tool: tool)
                guard load.errors == 0 else {
                    throw BenchError("\(routes[index].path): \(load.errors) errors or non-2xx responses under load")
                }
                perSecond[index].append(load.requestsPerSecond)
                p99[index].append(load.p99.microseconds)
            }
        }

        let prefix = "server c=\(concurrency) (\(tool.rawValue))"
        var results = [
            BenchResult(
                name: "\(prefix): \(routes[0].label), req/s (higher is better)", value: median(perSecond[0]), unit: "req/s")
        ]
        for index in routes.indices.dropFirst() {
            results.append(
                BenchResult(
                    name: "\(prefix): \(routes[index].label), req/s (higher is better)", value: median(perSecond[index]),
                    unit: "req/s", baseline: routes[0].label, baselineValue: median(perSecond[0])))
            results.append(
                BenchResult(
                    name: "\(prefix): \(routes[index].label), p99 latency (lower is better)", value: median(p99[index]),
                    unit: "µs", baseline: routes[0].label, baselineValue: median(p99[0])))
        }
        return results
    }

    /// Creates `count` anonymous records of type `bench` over HTTP and returns the path of one in the
    /// middle and of the first list page at the server's default size (20). For ``run(_:recordPath:listPath:seed:)``.
    @Sendable static func seedRecords(_ baseURL: URL) async throws -> (recordPath: String?, listPath: String?) {
        let count = 200
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        var middle: String?
        do {
            for index in 0..<count {
                var request = HTTPClientRequest(url: baseURL.absoluteString + "/records/bench")
                request.method = .POST
                request.headers.add(name: "Content-Type", value: "application/json")
                let body = #"{"n":\#(index),"name":"Person \#(index)","email":"person\#(index)@example.com","tags":["a","b"]}"#
                request.body = .bytes(ByteBuffer(string: body))
                let response = try await client.execute(request, timeout: .seconds(10))
                _ = try await response.body.collect(upTo: 1 << 20)
                guard response.status == .created, let location = response.headers.first(name: "Location") else {
                    throw BenchError("POST /records/bench answered \(response.status) without a Location")
                }
                if index == count / 2 { middle = location }
            }
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
        return (recordPath: middle, listPath: "/records/bench?limit=20")
    }

    /// Fails early, with the route and status, when a route does not answer 200: a 404 under load
    /// would be measured as a very fast route.
    private static func checkAnswers200(_ urls: [URL]) async throws {
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            for url in urls {
                let response = try await client.execute(HTTPClientRequest(url: url.absoluteString), timeout: .seconds(10))
                let body = try await response.body.collect(upTo: 64 << 20)
                guard response.status == .ok else {
                    throw BenchError(
                        "GET \(url.path) answered \(response.status), not 200: \(String(buffer: body).prefix(300))")
                }
            }
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }
}
