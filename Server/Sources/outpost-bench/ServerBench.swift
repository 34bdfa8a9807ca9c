import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import OutpostServer

/// The reference server's throughput on its routes, against a trivial route of the
/// same server in the same run.
///
/// The server runs in this process on 127.0.0.1, port 0, with a fresh SQLite database in a temporary
/// folder, logging at `info` as `outpost serve` does by default (one access-log line per request,
/// written to /dev/null rather than a terminal: see ``servingLogger()``). Load comes from
/// ``LoadGenerator`` (wrk when installed). The routes are measured in rotating order over several
/// rounds; the median round counts.
///
/// The baseline is a bare Hummingbird route in the same process (``SmallJSONServer``, 104 bytes, no
/// middleware, no logging): what any Hummingbird server costs. `GET /openapi.json` (fixed bytes, no
/// database) is the reference server's cheapest route; `GET /health` (one tiny SQLite query) the
/// first database-backed one. The record routes are measured without and with a bearer token. The record routes slot in through `recordPath`
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
        var headers: [(name: String, value: String)] = []
    }

    static func run(
        _ options: BenchOptions, recordPath: String? = nil, listPath: String? = nil,
        seed: (@Sendable (_ baseURL: URL) async throws -> (recordPath: String?, listPath: String?))? = nil
    ) async throws -> [BenchResult] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let databasePath = folder.appendingPathComponent("bench.sqlite").path
        let server = try OutpostServer.bench(
            configuration: ServerConfiguration(
                host: "127.0.0.1", port: 0, databasePath: databasePath, logger: servingLogger(),
                auth: AuthConfiguration(passwordCost: 4)),
            plugins: [])
        let running = try await server.start()
        let bare = try await SmallJSONServer.start()
        do {
            let token = try await accessToken(running.baseURL, databasePath: databasePath)
            let results = try await measure(
                options, baseURL: running.baseURL, bareURL: bare.baseURL + "/small", token: token, recordPath: recordPath,
                listPath: listPath, seed: seed)
            await bare.stop()
            await running.stop()
            return results
        } catch {
            await bare.stop()
            await running.stop()
            throw error
        }
    }

    /// The logger `outpost serve` runs with by default: level `info`, one access-log line per request
    /// through ``ServerLogHandler``. The lines go to /dev/null so that the figures do not measure a
    /// terminal.
    static func servingLogger() -> Logger {
        let sink = ServerLogSink(fileDescriptor: open("/dev/null", O_WRONLY))
        var logger = Logger(label: "outpost.server") { ServerLogHandler(label: $0, sink: sink) }
        logger.logLevel = .info
        return logger
    }

    /// A user's access token (records:read) from the password grant, for the routes measured with one.
    static func accessToken(_ baseURL: URL, databasePath: String) async throws -> String {
        var quiet = Logger(label: "outpost.bench")
        quiet.logLevel = .critical
        let registrar = try await SQLiteStorage.open(path: databasePath, logger: quiet)
        do {
            try await registerPasswordUser(registrar)
        } catch {
            try? await registrar.close()
            throw error
        }
        try await registrar.close()
        return try await passwordGrant(baseURL)
    }

    /// Registers the bench's password client and user in `storage`.
    static func registerPasswordUser(_ storage: some AuthStorage) async throws {
        _ = try await storage.registerClient(
            name: "Bench (password)", redirectURIs: [], grants: ["password"], scopes: ["records:read"], confidential: false,
            id: "bench-password")
        _ = try await storage.addUser(username: "bench", password: "bench-password", cost: 4)
    }

    /// The bench user's access token from the password grant.
    static func passwordGrant(_ baseURL: URL) async throws -> String {
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            var request = HTTPClientRequest(url: baseURL.absoluteString + "/oauth/token")
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            request.body = .bytes(
                ByteBuffer(string: "grant_type=password&client_id=bench-password&username=bench&password=bench-password"))
            let response = try await client.execute(request, timeout: .seconds(10))
            let body = try await response.body.collect(upTo: 1 << 20)
            try await client.shutdown()
            guard response.status == .ok,
                let object = try JSONSerialization.jsonObject(with: Data(String(buffer: body).utf8)) as? [String: Any],
                let token = object["access_token"] as? String
            else {
                throw BenchError("the password grant answered \(response.status): \(String(buffer: body).prefix(300))")
            }
            return token
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    private static func measure(
        _ options: BenchOptions, baseURL: URL, bareURL: String, token: String, recordPath: String?, listPath: String?,
        seed: (@Sendable (URL) async throws -> (recordPath: String?, listPath: String?))?
    ) async throws -> [BenchResult] {
        var recordPath = recordPath
        var listPath = listPath
        if let seed {
            let seeded = try await seed(baseURL)
            recordPath = seeded.recordPath ?? recordPath
            listPath = seeded.listPath ?? listPath
        }
        let bearer = [(name: "Authorization", value: "Bearer \(token)")]
        var routes = [
            Route(label: "GET /small (bare Hummingbird route)", path: bareURL),
            Route(label: "GET \(trivialPath) (static bytes)", path: trivialPath),
            Route(label: "GET /health (1 SQLite query)", path: "/health"),
        ]
        if let recordPath {
            routes.append(Route(label: "GET /records/{type}/{id}", path: recordPath))
            routes.append(Route(label: "GET /records/{type}/{id} with a bearer token", path: recordPath, headers: bearer))
        }
        if let listPath {
            routes.append(Route(label: "GET \(listPath) (one list page)", path: listPath))
            routes.append(Route(label: "GET \(listPath) (one list page) with a bearer token", path: listPath, headers: bearer))
        }

        let tool = LoadGenerator.defaultTool
        let rounds = options.rounds ?? (options.quick ? 1 : 3)
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
        try await checkAnswers200(urls, headers: routes.map(\.headers))

        // Warm up: the trivial route in quick mode, every route otherwise.
        for url in options.quick ? [urls[0]] : urls {
            _ = try await LoadGenerator.run(url: url, concurrency: concurrency, duration: warmUp, headers: bearer, tool: tool)
        }
        var perSecond = [[Double]](repeating: [], count: routes.count)
        var p99 = [[Double]](repeating: [], count: routes.count)
        var cpuPerRequest = [[Double]](repeating: [], count: routes.count)
        var switchesPerRequest = [[Double]](repeating: [], count: routes.count)
        for round in 0..<rounds {
            for offset in 0..<routes.count {
                let index = (round + offset) % routes.count
                let cpuBefore = processCPUMicroseconds()
                let switchesBefore = processContextSwitches()
                let load = try await LoadGenerator.run(
                    url: urls[index], concurrency: concurrency, duration: duration, headers: routes[index].headers, tool: tool)
                let cpu = processCPUMicroseconds() - cpuBefore
                guard load.errors == 0 else {
                    throw BenchError("\(routes[index].path): \(load.errors) errors or non-2xx responses under load")
                }
                perSecond[index].append(load.requestsPerSecond)
                p99[index].append(load.p99.microseconds)
                let switches = processContextSwitches() - switchesBefore
                if tool == .wrk, load.requests > 0 {
                    cpuPerRequest[index].append(cpu / Double(load.requests))
                    switchesPerRequest[index].append(Double(switches) / Double(load.requests))
                }
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
            for (samples, what, unit) in [
                (cpuPerRequest, "server CPU per request", "µs"),
                (switchesPerRequest, "server context switches per request", "switches"),
            ] where !samples[index].isEmpty && !samples[0].isEmpty {
                results.append(
                    BenchResult(
                        name: "\(prefix): \(routes[index].label), \(what) (lower is better)", value: median(samples[index]),
                        unit: unit, baseline: routes[0].label, baselineValue: median(samples[0])))
            }
        }
        return results
    }

    /// This process's CPU time so far (user and system, all threads), in microseconds. With wrk as
    /// the load generator (another process), the CPU a route costs per request is the difference
    /// over a run divided by its requests: a figure that holds when other work shares the machine,
    /// where req/s ratios do not.
    static func processCPUMicroseconds() -> Double {
        CPUAccount.seconds(children: false) * 1_000_000
    }

    /// This process's context switches so far, voluntary (a thread waited: for a lock, a
    /// condition, the network) and involuntary (the kernel preempted it), all threads. Per request,
    /// they count the thread hand-offs a route costs (wrk runs in its own process).
    static func processContextSwitches() -> Int {
        Int(CPUAccount.contextSwitches())
    }

    /// Creates `count` anonymous records of type `bench` over HTTP and returns the path of one in the
    /// middle and of the first list page at the server's default size (20). For ``run(_:recordPath:listPath:seed:)``.
    @Sendable static func seedRecords(_ baseURL: URL) async throws -> (recordPath: String?, listPath: String?) {
        try await seedRecords(baseURL, count: 200)
    }

    /// ``seedRecords(_:)`` with `count` records.
    static func seedRecords(_ baseURL: URL, count: Int) async throws -> (recordPath: String?, listPath: String?) {
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
    private static func checkAnswers200(_ urls: [URL], headers: [[(name: String, value: String)]]) async throws {
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            for (url, fields) in zip(urls, headers) {
                var request = HTTPClientRequest(url: url.absoluteString)
                for field in fields { request.headers.add(name: field.name, value: field.value) }
                let response = try await client.execute(request, timeout: .seconds(10))
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
