import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import OutpostServer
import OutpostServerTesting
@_spi(OutpostInternal) import OutpostSupport

/// Storage speed, per backend (SQLite always; PostgreSQL when `OUTPOST_TEST_POSTGRES_URL`
/// names a server, e.g. from `bash .ci/postgres.sh start`, or `--postgres URL` is given): a record
/// GET and a list page of 20 against a bare Hummingbird route in the same process; record GETs under
/// a concurrent POST load of c=8 against the same GETs unloaded; POST /records throughput at c=1, 8
/// and 64. The server runs at `info` with its access log, as `outpost serve` does by default.
/// Medians of interleaved rounds (the order of the read routes rotates each round), all in one run.
enum StorageBench {
    static let readConcurrency = 8
    static let writeConcurrency = 8

    /// - Parameter readsOnly: measure the read routes only (`--only storage-reads`): no write loads.
    static func run(_ options: BenchOptions, readsOnly: Bool = false) async throws -> [BenchResult] {
        try await eachBackend { backend, bareURL in
            try await withServer(backend) { database, baseURL in
                let client = HTTPClient(eventLoopGroupProvider: .singleton)
                do {
                    let results = try await measure(
                        options, backend: backend, baseURL: baseURL, bareURL: bareURL, client: client, database: database,
                        readsOnly: readsOnly)
                    try await client.shutdown()
                    return results
                } catch {
                    try? await client.shutdown()
                    throw error
                }
            }
        }
    }

    /// `body`'s results for each backend (``ScratchDatabase/backends``), with the bare
    /// Hummingbird route (`GET /small`) served meanwhile: its URL is `body`'s second argument.
    static func eachBackend(_ body: (ScratchDatabase.Backend, URL) async throws -> [BenchResult]) async throws
        -> [BenchResult]
    {
        var results: [BenchResult] = []
        let bare = try await SmallJSONServer.start()
        do {
            for backend in ScratchDatabase.backends {
                results += try await body(backend, try url(bare.baseURL + "/small"))
            }
        } catch {
            await bare.stop()
            throw error
        }
        await bare.stop()
        return results
    }

    /// `body`'s results with an Outpost server (at `info`, its access log to /dev/null, as `outpost
    /// serve` logs by default) on a fresh database of `backend`; the server stopped and the database
    /// removed afterwards.
    static func withServer(
        _ backend: ScratchDatabase.Backend, _ body: (ScratchDatabase, URL) async throws -> [BenchResult]
    ) async throws -> [BenchResult] {
        let scratch = try await ScratchDatabase.make(backend)
        do {
            let server = try OutpostServer.bench(
                configuration: ServerConfiguration(
                    host: "127.0.0.1", port: 0, databasePath: scratch.argument, logger: ServerBench.servingLogger()),
                plugins: [])
            let running = try await server.start()
            do {
                let results = try await body(scratch, running.baseURL)
                await running.stop()
                await scratch.remove()
                return results
            } catch {
                await running.stop()
                throw error
            }
        } catch {
            await scratch.remove()
            throw error
        }
    }

    static func measure(
        _ options: BenchOptions, backend: ScratchDatabase.Backend, baseURL: URL, bareURL: URL, client: HTTPClient,
        database: ScratchDatabase, readsOnly: Bool
    ) async throws -> [BenchResult] {
        let base = baseURL.absoluteString
        let readConcurrency = options.readConcurrency ?? Self.readConcurrency
        progress("storage [\(backend)]: seeding")
        let seeded = try await ServerBench.seedRecords(baseURL, count: options.quick ? 40 : 200)
        guard let recordPath = seeded.recordPath, let listPath = seeded.listPath else {
            throw BenchError("seeding returned no paths")
        }
        let recordURL = try url(base + recordPath)
        let listURL = try url(base + listPath)
        let rounds = options.rounds ?? (options.quick ? 1 : 3)
        let duration: Duration = options.quick ? .seconds(1) : .seconds(3)
        let token = try await accessToken(baseURL, database: database)
        let bearer = [(name: "Authorization", value: "Bearer \(token)")]
        let reads: [(url: URL, headers: [(name: String, value: String)])] = [
            (bareURL, []), (recordURL, []), (listURL, []), (recordURL, bearer),
        ]
        var perSecond = [[Double]](repeating: [], count: reads.count)
        var loadedReads: [Double] = []
        var pacedReads: [Double] = []
        var pacedWrites: [Double] = []
        // The record GET's server CPU per request and p99 unloaded and under the paced writes
        // (the paced writes' own CPU, measured alone in each round, taken out): equal CPU means the
        // reads only share the CPUs with the writes; more CPU or a longer tail means the writes
        // make each read dearer or make it wait.
        var readCPU: (unloaded: [Double], paced: [Double]) = ([], [])
        var readP99: (unloaded: [Double], paced: [Double]) = ([], [])
        var pacedWriteCPU: [Double] = []
        // The bare route under the same paced writes: what the write load costs a read that
        // touches no storage at all (the CPUs it takes, the scheduling it adds).
        var bareUnderWrites: (perSecond: [Double], p99: [Double], unloadedP99: [Double]) = ([], [], [])
        var posts: [Int: [Double]] = [1: [], 8: [], 64: []]
        // CPU per read request of the server process, wrk and (PostgreSQL) the database's backends;
        // for PostgreSQL, POST throughput with the change feed's ordering lock removed, in the same rounds.
        let accounting = backend == .postgres
        var cpu = [[CPUPerRequest]](repeating: [], count: reads.count)
        var orderedPosts: [ChangeOrdering: [Int: [Double]]] = [:]
        progress("storage [\(backend)]: \(rounds) round(s) of \(duration) per figure")
        _ = try await LoadGenerator.run(url: recordURL, concurrency: readConcurrency, duration: .seconds(1))
        for round in 0..<rounds {
            for offset in 0..<reads.count {
                let index = (round + offset) % reads.count
                let start = CPUAccount.now(backends: try await database.backendCPUSeconds())
                let processBefore = CPUAccount.seconds(children: false)
                let load = try await LoadGenerator.run(
                    url: reads[index].url, concurrency: readConcurrency, duration: duration, headers: reads[index].headers)
                if index == 0 { bareUnderWrites.unloadedP99.append(load.p99.microseconds) }
                if index == 1, load.requests > 0 {
                    readCPU.unloaded.append((CPUAccount.seconds(children: false) - processBefore) / Double(load.requests) * 1e6)
                    readP99.unloaded.append(load.p99.microseconds)
                }
                let end = CPUAccount.now(backends: try await database.backendCPUSeconds())
                cpu[index].append(end.perRequest(since: start, requests: load.requests))
                guard load.errors == 0 else { throw BenchError("\(reads[index].url.path): \(load.errors) errors under load") }
                perSecond[index].append(load.requestsPerSecond)
            }
            if readsOnly { continue }
            // Reads under saturating writes and under writes held to a fixed rate, in alternating
            // order (each write load grows the database and its WAL for the one after it).
            let clock = ContinuousClock()
            let writesAlone = (CPUAccount.seconds(children: false), clock.now)
            _ = try await postLoad(client, base, concurrency: writeConcurrency, duration: duration, rate: pacedWriteRate)
            let writeCPUPerSecond = (CPUAccount.seconds(children: false) - writesAlone.0) / (clock.now - writesAlone.1).inSeconds
            pacedWriteCPU.append(writeCPUPerSecond)
            let bareWriter = Task {
                try await postLoad(
                    client, base, concurrency: writeConcurrency, duration: duration + .milliseconds(500), rate: pacedWriteRate)
            }
            let bareLoaded = try await LoadGenerator.run(url: bareURL, concurrency: readConcurrency, duration: duration)
            _ = try await bareWriter.value
            bareUnderWrites.perSecond.append(bareLoaded.requestsPerSecond)
            bareUnderWrites.p99.append(bareLoaded.p99.microseconds)
            for paced in round.isMultiple(of: 2) ? [false, true] : [true, false] {
                let writer = Task {
                    try await postLoad(
                        client, base, concurrency: writeConcurrency, duration: duration + .milliseconds(500),
                        rate: paced ? pacedWriteRate : nil)
                }
                let readsStart = (CPUAccount.seconds(children: false), clock.now)
                let loaded = try await LoadGenerator.run(url: recordURL, concurrency: readConcurrency, duration: duration)
                let readsCPU =
                    CPUAccount.seconds(children: false) - readsStart.0 - writeCPUPerSecond * (clock.now - readsStart.1).inSeconds
                let written = try await writer.value
                guard loaded.errors == 0 else { throw BenchError("\(recordPath): \(loaded.errors) errors under a POST load") }
                if paced {
                    pacedReads.append(loaded.requestsPerSecond)
                    pacedWrites.append(written)
                    if loaded.requests > 0 { readCPU.paced.append(readsCPU / Double(loaded.requests) * 1e6) }
                    readP99.paced.append(loaded.p99.microseconds)
                } else {
                    loadedReads.append(loaded.requestsPerSecond)
                }
            }
            for concurrency in [1, 8, 64] {
                posts[concurrency, default: []].append(
                    try await postLoad(client, base, concurrency: concurrency, duration: duration))
                if accounting {
                    // The same POSTs with each change-feed ordering; the current one last, so
                    // the run continues as the storage reads.
                    for ordering in [ChangeOrdering.unordered, .exclusiveWriters, .sharedWriters] {
                        try await database.setChangeOrdering(ordering)
                        orderedPosts[ordering, default: [:]][concurrency, default: []].append(
                            try await postLoad(client, base, concurrency: concurrency, duration: duration))
                    }
                }
            }
        }
        let label = "storage [\(backend)] c=\(readConcurrency)"
        let bare = "GET /small (bare Hummingbird route, c=\(readConcurrency))"
        let bareMedian = median(perSecond[0])
        let readMedian = median(perSecond[1])
        var results = [
            BenchResult(name: "\(label): \(bare), req/s", value: bareMedian, unit: "req/s"),
            BenchResult(
                name: "\(label): GET /records/{type}/{id}, req/s", value: readMedian, unit: "req/s", baseline: bare,
                baselineValue: bareMedian),
            BenchResult(
                name: "\(label): GET \(listPath) (list page of 20), req/s", value: median(perSecond[2]), unit: "req/s",
                baseline: bare, baselineValue: bareMedian),
            BenchResult(
                name: "\(label): GET /records/{type}/{id} with a bearer token, req/s", value: median(perSecond[3]),
                unit: "req/s", baseline: bare, baselineValue: bareMedian),
        ]
        if !readsOnly {
            let pacedLabel = "under POST load c=\(writeConcurrency) held to \(Int(pacedWriteRate))/s"
            results += [
                BenchResult(
                    name: "\(label): GET record \(pacedLabel), server CPU per GET (the writes' own CPU taken out), µs",
                    value: median(readCPU.paced), unit: "µs", baseline: "the same GET unloaded",
                    baselineValue: median(readCPU.unloaded)),
                BenchResult(
                    name: "\(label): GET record \(pacedLabel), p99 latency, µs", value: median(readP99.paced), unit: "µs",
                    baseline: "the same GET unloaded", baselineValue: median(readP99.unloaded)),
                BenchResult(
                    name: "\(label): \(bare) \(pacedLabel), req/s", value: median(bareUnderWrites.perSecond), unit: "req/s",
                    baseline: "the same unloaded", baselineValue: bareMedian),
                BenchResult(
                    name: "\(label): \(bare) \(pacedLabel), p99 latency, µs", value: median(bareUnderWrites.p99), unit: "µs",
                    baseline: "the same unloaded", baselineValue: median(bareUnderWrites.unloadedP99)),
                BenchResult(
                    name:
                        "storage [\(backend)]: the paced POST load alone, CPU of this process (server and POST client), % of one core",
                    value: median(pacedWriteCPU) * 100, unit: "%"),
                BenchResult(
                    name: "\(label): GET record under POST load c=\(writeConcurrency), req/s", value: median(loadedReads),
                    unit: "req/s", baseline: "the same GET unloaded", baselineValue: readMedian),
                BenchResult(
                    name: "\(label): GET record under POST load c=\(writeConcurrency) held to \(Int(pacedWriteRate))/s, req/s",
                    value: median(pacedReads), unit: "req/s", baseline: "the same GET unloaded", baselineValue: readMedian),
                BenchResult(
                    name: "storage [\(backend)]: the paced POST load's own rate, created/s", value: median(pacedWrites),
                    unit: "req/s", baseline: "its target", baselineValue: pacedWriteRate),
            ]
            for concurrency in [1, 8, 64] {
                results.append(
                    BenchResult(
                        name: "storage [\(backend)]: POST /records (c=\(concurrency)), created/s",
                        value: median(posts[concurrency] ?? []), unit: "req/s", baseline: bare, baselineValue: bareMedian))
            }
        }
        for concurrency in [1, 8, 64] where accounting && !readsOnly {
            let unordered = median(orderedPosts[.unordered]?[concurrency] ?? [])
            for (ordering, label) in [
                (ChangeOrdering.exclusiveWriters, "writers serialized (migration 2)"),
                (.sharedWriters, "writers share the lock, readers wait (migration 3)"),
            ] {
                results.append(
                    BenchResult(
                        name: "storage [\(backend)]: POST /records (c=\(concurrency)), change feed order by \(label), created/s",
                        value: median(orderedPosts[ordering]?[concurrency] ?? []), unit: "req/s",
                        baseline: "the same with no ordering lock", baselineValue: unordered))
            }
        }
        let names = [
            bare, "GET /records/{type}/{id}", "GET \(listPath) (list page of 20)", "GET /records/{type}/{id} with a bearer token",
        ]
        for (index, name) in names.enumerated() where !cpu[index].isEmpty {
            let parts = cpu[index]
            results.append(
                BenchResult(
                    name: "\(label): CPU per request, \(name): server process, µs", value: median(parts.map(\.process)),
                    unit: "µs"))
            results.append(
                BenchResult(name: "\(label): CPU per request, \(name): wrk, µs", value: median(parts.map(\.children)), unit: "µs")
            )
            results.append(
                BenchResult(
                    name: "\(label): context switches per request, \(name): server process",
                    value: median(parts.map(\.switches)), unit: "switches"))
            let backends = parts.compactMap(\.backends)
            if !backends.isEmpty {
                results.append(
                    BenchResult(
                        name: "\(label): CPU per request, \(name): PostgreSQL backends, µs", value: median(backends), unit: "µs"))
            }
        }
        results += instanceCPURatios(label: label, names: names, cpu: cpu)
        return results
    }

    /// The per-instance CPU ratio of each read route: the bare route's server-process CPU per
    /// request over the route's, the database's own CPU left out. With the database on its own
    /// host (N stateless instances on one PostgreSQL), an instance's CPU is what bounds its
    /// throughput, so this is the ratio of req/s an instance reaches on a route against the bare
    /// route when CPU-bound. Medians of the per-round ratios (each round's routes are measured
    /// back to back, so a round's ratio compares like with like).
    static func instanceCPURatios(
        label: String, names: [String], cpu: [[CPUPerRequest]]
    ) -> [BenchResult] {
        guard let bare = cpu.first, !bare.isEmpty else { return [] }
        var results: [BenchResult] = []
        for index in cpu.indices.dropFirst() where cpu[index].count == bare.count {
            let ratios = zip(bare, cpu[index]).map { $0.process / max($1.process, 0.001) }
            results.append(
                BenchResult(
                    name:
                        "\(label): per-instance CPU ratio, \(names[index]): server CPU per request (database excluded), µs",
                    value: median(cpu[index].map(\.process)), unit: "µs", baseline: "\(names[0]), server CPU per request",
                    baselineValue: median(bare.map(\.process)), ratio: median(ratios)))
        }
        return results
    }

    /// A user's access token (records:read) from the password grant, registered through the
    /// scratch database's storage (either backend).
    static func accessToken(_ baseURL: URL, database: ScratchDatabase) async throws -> String {
        var quiet = Logger(label: "outpost.bench")
        quiet.logLevel = .critical
        let storage = try await database.open(logger: quiet)
        do {
            try await ServerBench.registerPasswordUser(storage)
        } catch {
            try? await storage.close()
            throw error
        }
        try await storage.close()
        return try await ServerBench.passwordGrant(baseURL)
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

    /// The rate of the paced write load: a steady, heavy write traffic (about a seventh of what
    /// SQLite takes at c=8 on a quiet 2-core machine) that leaves the CPUs to be shared rather
    /// than taken. See docs/BENCHMARKS.md, "storage and reads under writes".
    static let pacedWriteRate = 1000.0

    /// Created records per second with `concurrency` clients posting for `duration`: back to back,
    /// or, with `rate`, each client on a fixed schedule of `rate / concurrency` sends a second (a
    /// client that falls behind its schedule sends at once until it has caught up, so the load
    /// keeps its rate when the machine is slow to wake a sleeping task; with one request in flight
    /// per client it cannot exceed what the server answers).
    static func postLoad(_ client: HTTPClient, _ base: String, concurrency: Int, duration: Duration, rate: Double? = nil)
        async throws -> Double
    {
        try await postLoad(concurrency: concurrency, duration: duration, rate: rate) {
            let response = try await client.execute(post(client, base), timeout: .seconds(10))
            _ = try await response.body.collect(upTo: 1 << 20)
            return response.status.code == 201
        }
    }

    /// ``postLoad(_:_:concurrency:duration:rate:)`` with each POST made by `send` (`true` when
    /// the record was created).
    static func postLoad(
        concurrency: Int, duration: Duration, rate: Double?, send: @escaping @Sendable () async throws -> Bool
    ) async throws -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = start + duration
        let interval = rate.map { Duration.seconds(Double(concurrency) / $0) }
        let created = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<concurrency {
                group.addTask {
                    var count = 0
                    // Clients start spread over one interval, so the sends do not come in waves.
                    var next = start + (interval ?? .zero) * (Double(index) / Double(concurrency))
                    while clock.now < deadline {
                        if let interval {
                            if next > clock.now { try await Task.sleep(until: next, clock: clock) }
                            next += interval
                        }
                        if try await send() { count += 1 }
                    }
                    return count
                }
            }
            return try await group.reduce(0, +)
        }
        return Double(created) / (clock.now - start).inSeconds
    }
}
