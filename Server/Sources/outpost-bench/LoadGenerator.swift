import AsyncHTTPClient
import Foundation
@_spi(OutpostInternal) import OutpostSupport

/// Drives GET requests at one URL from many connections for a fixed time: with `wrk` when it is on
/// the `PATH` (Debian package `wrk`), with a built-in AsyncHTTPClient generator otherwise.
///
/// ```swift
/// let load = try await LoadGenerator.run(url: url, concurrency: 32, duration: .seconds(3))
/// print(load.requestsPerSecond, load.p50, load.p99, load.tool)
/// ```
///
/// Both stop by themselves: wrk after `-d` (and is terminated if it overstays by 30 s), the built-in
/// generator at its deadline. Any non-2xx response or socket error is counted in ``Result/errors``.
enum LoadGenerator {
    enum Tool: String, Sendable {
        case wrk
        case builtIn = "built-in"
    }

    struct Result: Sendable {
        var requestsPerSecond: Double
        var p50: Duration
        var p99: Duration
        /// Completed requests.
        var requests: Int
        /// Non-2xx responses, socket errors and timeouts.
        var errors: Int
        var tool: Tool
    }

    /// The wrk executable on the `PATH`, if any.
    static let wrkPath: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/wrk" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// The tool ``run(url:concurrency:duration:tool:)`` uses when not told.
    static var defaultTool: Tool { wrkPath == nil ? .builtIn : .wrk }

    /// Loads `url` with `concurrency` connections for `duration` (wrk rounds it up to whole seconds).
    static func run(
        url: URL, concurrency: Int, duration: Duration, headers: [(name: String, value: String)] = [], tool: Tool = defaultTool
    ) async throws -> Result {
        guard url.host == "127.0.0.1" || url.host == "localhost" || url.host == "[::1]" || url.host == "::1" else {
            throw BenchError("the load generator only targets loopback, not \(url.absoluteString)")
        }
        switch tool {
        case .wrk:
            guard let wrkPath else { throw BenchError("wrk is not installed (apt-get install wrk)") }
            return try await runWrk(wrkPath, url: url, concurrency: concurrency, duration: duration, headers: headers)
        case .builtIn:
            return try await runBuiltIn(url: url, concurrency: concurrency, duration: duration, headers: headers)
        }
    }

    // MARK: Paced POSTs

    /// POSTs `body` (JSON) to `url` from `concurrency` connections of one wrk thread for `duration`
    /// (rounded up to whole seconds), held to `rate` requests a second in all; `nil` without wrk.
    ///
    /// A write load that runs in a process of its own, in C, as the reads' load does: on a 2-core
    /// machine the CPU a load's own client takes is taken from the server under test, and a client
    /// on another machine would take none. The pacing is wrk's `delay()` hook: its Lua script keeps
    /// one schedule for the thread, a send every `1/rate` s, and delays each connection's next
    /// request to the next free slot of it (a connection that is late sends at once), so the load
    /// holds its rate while the server answers within `concurrency / rate` s.
    static func runPacedPosts(url: URL, body: String, concurrency: Int, rate: Double, duration: Duration) async throws
        -> Result?
    {
        guard let wrkPath else { return nil }
        let script = FileManager.default.temporaryDirectory.appendingPathComponent(
            "outpost-bench-paced-\(UUID().uuidString).lua")
        try pacedPostScript(body: body, rate: rate).write(to: script, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: script) }
        return try await runWrk(
            wrkPath, url: url, concurrency: concurrency, duration: duration, headers: [("Content-Type", "application/json")],
            threads: 1, script: script.path)
    }

    /// The Lua script of ``runPacedPosts(url:body:concurrency:rate:duration:)``: the method, the
    /// body, and a `delay()` that hands each request the next slot of a schedule of `rate` a second
    /// (LuaJIT's FFI reads the monotonic clock; wrk gives its scripts none).
    static func pacedPostScript(body: String, rate: Double) -> String {
        let quoted = body.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return """
            local ffi = require("ffi")
            ffi.cdef[[
            typedef struct { long tv_sec; long tv_nsec; } outpost_timespec;
            int clock_gettime(int clock, outpost_timespec *now);
            ]]
            local now = ffi.new("outpost_timespec")
            local function milliseconds()
              ffi.C.clock_gettime(1, now) -- CLOCK_MONOTONIC
              return tonumber(now.tv_sec) * 1000 + tonumber(now.tv_nsec) / 1e6
            end
            wrk.method = "POST"
            wrk.body = "\(quoted)"
            local period = \(1000 / rate)
            local slot = nil
            function delay()
              local time = milliseconds()
              if slot == nil or slot < time then slot = time end
              slot = slot + period
              return math.floor(slot - time)
            end

            """
    }

    // MARK: wrk

    private static func runWrk(
        _ executable: String, url: URL, concurrency: Int, duration: Duration, headers: [(name: String, value: String)],
        threads fixedThreads: Int? = nil, script: String? = nil
    ) async throws -> Result {
        let seconds = max(1, Int(duration.inSeconds.rounded(.up)))
        // Half the cores for wrk's threads; the server under test needs the rest.
        let threads = fixedThreads ?? max(1, min(concurrency, ProcessInfo.processInfo.activeProcessorCount / 2))
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-bench-wrk-\(UUID().uuidString).txt")
        guard FileManager.default.createFile(atPath: output.path, contents: nil) else {
            throw BenchError("cannot create \(output.path) for wrk's output")
        }
        defer { try? FileManager.default.removeItem(at: output) }
        let handle = try FileHandle(forWritingTo: output)
        defer { try? handle.close() }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments =
            [
                "-t", "\(threads)", "-c", "\(concurrency)", "-d", "\(seconds)s", "--timeout", "5s", "--latency",
            ] + headers.flatMap { ["-H", "\($0.name): \($0.value)"] } + (script.map { ["-s", $0] } ?? []) + [url.absoluteString]
        process.standardOutput = handle
        process.standardError = handle
        // wrk stops itself after -d; the watchdog only ends one that hangs.
        let watchdog = Task {
            try await Task.sleep(for: .seconds(seconds + 30))
            if process.isRunning { process.terminate() }
        }
        defer { watchdog.cancel() }
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { process in continuation.resume(returning: process.terminationStatus) }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: BenchError("cannot start wrk: \(error)"))
            }
        }
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        guard status == 0 else { throw BenchError("wrk exited with status \(status): \(text)") }
        return try parseWrk(text)
    }

    /// Reads `Requests/sec`, the 50% and 99% latencies of `--latency`, the request count, non-2xx
    /// responses and socket errors from wrk's report.
    static func parseWrk(_ text: String) throws -> Result {
        var perSecond: Double?
        var p50: Duration?
        var p99: Duration?
        var requests = 0
        var errors = 0
        for rawLine in text.split(separator: "\n") {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            let words = line.split(whereSeparator: { $0 == " " || $0 == "," })
            if line.hasPrefix("Requests/sec:"), words.count >= 2 {
                perSecond = Double(words[1])
            } else if line.hasPrefix("50%"), words.count >= 2 {
                p50 = parseWrkDuration(String(words[1]))
            } else if line.hasPrefix("99%"), words.count >= 2 {
                p99 = parseWrkDuration(String(words[1]))
            } else if line.contains(" requests in "), let first = words.first {
                requests = Int(first) ?? 0
            } else if line.hasPrefix("Non-2xx or 3xx responses:"), let last = words.last {
                errors += Int(last) ?? 0
            } else if line.hasPrefix("Socket errors:") {
                // Socket errors: connect 0, read 0, write 0, timeout 0
                errors += words.compactMap { Int($0) }.reduce(0, +)
            }
        }
        guard let perSecond, let p50, let p99 else {
            throw BenchError("could not read wrk's report:\n\(text)")
        }
        return Result(requestsPerSecond: perSecond, p50: p50, p99: p99, requests: requests, errors: errors, tool: .wrk)
    }

    /// `812.00us`, `1.23ms`, `2.00s`, `1.5m` → a duration.
    static func parseWrkDuration(_ text: String) -> Duration? {
        let units: [(String, Double)] = [("us", 1e-6), ("ms", 1e-3), ("s", 1), ("m", 60), ("h", 3600)]
        for (suffix, scale) in units where text.hasSuffix(suffix) {
            guard let number = Double(text.dropLast(suffix.count)) else { return nil }
            return .nanoseconds(Int64((number * scale * 1e9).rounded()))
        }
        return nil
    }

    // MARK: Built-in

    private static func runBuiltIn(
        url: URL, concurrency: Int, duration: Duration, headers: [(name: String, value: String)]
    ) async throws -> Result {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = concurrency
        configuration.connectionPool.retryConnectionEstablishment = false
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = start + duration
        let request: HTTPClientRequest = {
            var request = HTTPClientRequest(url: url.absoluteString)
            for header in headers { request.headers.add(name: header.name, value: header.value) }
            return request
        }()
        let outcome: (LatencySample, Int, ContinuousClock.Instant)
        do {
            outcome = try await withThrowingTaskGroup(of: (LatencySample, Int).self) { group in
                for _ in 0..<concurrency {
                    group.addTask {
                        var sample = LatencySample(reservingCapacity: 4_096)
                        var errors = 0
                        while clock.now < deadline {
                            let sent = clock.now
                            do {
                                let response = try await client.execute(request, timeout: .seconds(5))
                                _ = try await response.body.collect(upTo: 64 << 20)
                                if (200..<300).contains(response.status.code) {
                                    sample.record(clock.now - sent)
                                } else {
                                    errors += 1
                                }
                            } catch {
                                errors += 1
                            }
                        }
                        return (sample, errors)
                    }
                }
                var all = LatencySample()
                var errors = 0
                for try await (sample, failed) in group {
                    all.append(contentsOf: sample)
                    errors += failed
                }
                return (all, errors, clock.now)
            }
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
        var (sample, errors, finished) = outcome
        return Result(
            requestsPerSecond: Double(sample.count) / (finished - start).inSeconds, p50: sample.percentile(0.50),
            p99: sample.percentile(0.99), requests: sample.count, errors: errors, tool: .builtIn)
    }
}
