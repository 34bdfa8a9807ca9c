import Foundation
import Logging
@_spi(OutpostInternal) import OutpostCore
import OutpostServer
@_spi(OutpostInternal) import OutpostSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What the durable outbox costs.
///
/// - Enqueue: one `Outbox.enqueue` of a small record create (encode, frame, append, `fsync`, off the
///   concurrency pool) against the baseline of writing the same bytes as a plain atomic file
///   (temporary file, write, `fsync`, rename, `fsync` of the folder) in the same folder. Interleaved
///   rounds; the median of the rounds' per-write times.
/// - Replay: keyed record creates replayed from the journal against the embedded server (SQLite in a
///   temporary folder), against the baseline of the same creates sent directly with the client at
///   the same concurrency. Interleaved rounds; the median of the rounds' writes per second.
enum OutboxBench {
    static func run(_ options: BenchOptions) async throws -> [BenchResult] {
        let rounds = options.rounds ?? (options.quick ? 3 : 7)
        let writesPerRound = options.quick ? 100 : 400
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-outboxbench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var quiet = Logger(label: "outpost.bench")
        quiet.logLevel = .critical
        let server = try OutpostServer.bench(
            configuration: ServerConfiguration(
                port: 0, databasePath: folder.appendingPathComponent("bench.sqlite").path, logger: quiet))
        let running = try await server.start()
        let client = OutpostClient(configuration: .init(baseURL: running.baseURL))
        let concurrency = 4

        var enqueueTimes: [Double] = []
        var atomicTimes: [Double] = []
        var replayRates: [Double] = []
        var directRates: [Double] = []
        var replayRatios: [Double] = []
        var enqueueRatios: [Double] = []
        var concurrentTimes: [Double] = []
        var concurrentRatios: [Double] = []
        let clock = ContinuousClock()
        do {
            for round in 0..<rounds {
                let journal = folder.appendingPathComponent("round-\(round).journal")
                let outbox = try await Outbox.open(
                    .init(fileURL: journal, maxBytes: 64 << 20, maxConcurrentWrites: concurrency), client: client)
                let body: JSONValue = [
                    "title": "bench", "round": .int(round), "text": .string(String(repeating: "x", count: 120)),
                ]
                let sample = try body.encoded()

                // Enqueue and the atomic-write baseline, alternating which goes first.
                func enqueueAll() async throws -> Double {
                    let start = clock.now
                    for n in 0..<writesPerRound {
                        try await outbox.enqueue(.post("/records/outbox-bench", json: ["n": .int(n), "body": body]))
                    }
                    return (clock.now - start).inSeconds / Double(writesPerRound)
                }
                func atomicAll() throws -> Double {
                    let start = clock.now
                    for n in 0..<writesPerRound {
                        try atomicWrite(sample, to: folder.appendingPathComponent("atomic-\(n % 8).json").path)
                    }
                    return (clock.now - start).inSeconds / Double(writesPerRound)
                }
                let enqueue: Double
                let atomic: Double
                if round.isMultiple(of: 2) {
                    enqueue = try await enqueueAll()
                    atomic = try atomicAll()
                } else {
                    atomic = try atomicAll()
                    enqueue = try await enqueueAll()
                }
                enqueueTimes.append(enqueue)
                atomicTimes.append(atomic)
                enqueueRatios.append(enqueue / atomic)
                // 16 writers at once: writes staged during an fsync share the next one (group commit).
                let writers = 16
                let concurrentStart = clock.now
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for lane in 0..<writers {
                        group.addTask {
                            for n in stride(from: lane, to: writesPerRound, by: writers) {
                                try await outbox.enqueue(.post("/records/outbox-bench", json: ["n": .int(n), "body": body]))
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                let concurrent = (clock.now - concurrentStart).inSeconds / Double(writesPerRound)
                concurrentTimes.append(concurrent)
                concurrentRatios.append(concurrent / atomic)

                // Replay of what was just queued, and the same creates sent directly.
                func replayAll() async throws -> Double {
                    let start = clock.now
                    let summary = await outbox.replay()
                    guard summary.completed == 2 * writesPerRound else {
                        throw BenchError("the replay sent \(summary.completed) of \(2 * writesPerRound) writes")
                    }
                    return Double(2 * writesPerRound) / (clock.now - start).inSeconds
                }
                func directAll() async throws -> Double {
                    let start = clock.now
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for lane in 0..<concurrency {
                            group.addTask {
                                for n in stride(from: lane, to: 2 * writesPerRound, by: concurrency) {
                                    _ = try await client.send(
                                        Request.post("/records/outbox-bench-direct", json: ["n": .int(n), "body": body])
                                            .idempotencyKey())
                                }
                            }
                        }
                        try await group.waitForAll()
                    }
                    return Double(2 * writesPerRound) / (clock.now - start).inSeconds
                }
                let replay: Double
                let direct: Double
                if round.isMultiple(of: 2) {
                    replay = try await replayAll()
                    direct = try await directAll()
                } else {
                    direct = try await directAll()
                    replay = try await replayAll()
                }
                replayRates.append(replay)
                directRates.append(direct)
                replayRatios.append(replay / direct)
                await outbox.close()
            }
        } catch {
            try? await client.shutdown()
            await running.stop()
            throw error
        }
        try await client.shutdown()
        await running.stop()

        return [
            BenchResult(
                name: "outbox enqueue with fsync (lower is better)", value: median(enqueueTimes) * 1e6, unit: "µs/write",
                baseline: "atomic file write (tmp + fsync + rename)", baselineValue: median(atomicTimes) * 1e6,
                ratio: median(enqueueRatios)),
            BenchResult(
                name: "outbox enqueue with fsync, 16 writers at once (lower is better)", value: median(concurrentTimes) * 1e6,
                unit: "µs/write", baseline: "atomic file write (tmp + fsync + rename)", baselineValue: median(atomicTimes) * 1e6,
                ratio: median(concurrentRatios)),
            BenchResult(
                name: "outbox replay, \(concurrency) at a time", value: median(replayRates), unit: "writes/s",
                baseline: "the same keyed POSTs sent directly", baselineValue: median(directRates), ratio: median(replayRatios)),
        ]
    }

    /// The baseline: `data` written to `path` atomically and durably, as a careful file store does.
    static func atomicWrite(_ data: Data, to path: String) throws {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw BenchError("cannot create \(temporary)") }
        let written = data.withUnsafeBytes { posixWrite(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == data.count, synced, rename(temporary, path) == 0 else { throw BenchError("cannot write \(path)") }
        let folder = open((path as NSString).deletingLastPathComponent, O_RDONLY | O_CLOEXEC)
        if folder >= 0 {
            _ = fsync(folder)
            close(folder)
        }
    }
}

/// `write(2)`, named apart from the `write` methods around.
private func posixWrite(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
    write(fd, buffer, count)
}
