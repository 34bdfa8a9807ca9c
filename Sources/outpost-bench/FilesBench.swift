import Foundation
import Logging
import Outpost
import OutpostServer
import OutpostSupport
import Synchronization

/// Issue 14's file figures: a large file uploaded and downloaded through `OutpostFiles` against
/// the server in this process, with the process's peak resident memory during each transfer
/// (client and server together; the target is under 64 MB for 1 GB) and the throughput as a ratio
/// to copying the same file locally in 256 KiB reads and writes, measured in the same run.
enum FilesBench {
    /// Set in the child process that measures; see ``run(_:)``.
    static let childVariable = "OUTPOST_BENCH_FILES_CHILD"

    /// Runs the measurement in a fresh process of this program (`--only files`), so that the
    /// memory figures start from the same state whichever groups ran before in this one (each
    /// group leaves memory resident: caches, allocator arenas, code paged in).
    static func run(_ options: BenchOptions) async throws -> [BenchResult] {
        if ProcessInfo.processInfo.environment[childVariable] != nil { return try await measure(options) }
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/proc/self/exe")
        child.arguments = ["--only", "files", "--json"] + (options.quick ? ["--quick"] : [])
        child.environment = ProcessInfo.processInfo.environment.merging([childVariable: "1"]) { $1 }
        let output = Pipe()
        child.standardOutput = output
        try child.run()
        let json = output.fileHandleForReading.readDataToEndOfFile()
        child.waitUntilExit()
        guard child.terminationStatus == 0 else {
            throw BenchFailure("the files measurement's process exited with status \(child.terminationStatus)")
        }
        return try JSONDecoder().decode([BenchResult].self, from: json)
    }

    static func measure(_ options: BenchOptions) async throws -> [BenchResult] {
        let size = options.quick ? 64 << 20 : 1 << 30
        let label = options.quick ? "64 MiB" : "1 GiB"
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = folder.appendingPathComponent("source.bin")
        try writeFile(source, size: size)

        var quiet = Logger(label: "outpost.bench")
        quiet.logLevel = .critical
        let secret = UUID().uuidString
        var configuration = ServerConfiguration(
            port: 0, databasePath: folder.appendingPathComponent("files.sqlite").path, logger: quiet,
            auth: AuthConfiguration(passwordCost: 4, testProviderSecret: secret))
        configuration.maxFileBytes = Int64(size) * 2
        let running = try await OutpostServer(configuration: configuration).start()
        let plain = OutpostClient(configuration: .init(baseURL: running.baseURL))
        _ = try await plain.send(.post("/users", json: ["username": "bench", "password": "bench-password"]))
        let authenticator = Authenticator(
            configuration: .init(
                registration: ClientRegistration(clientID: OutpostServer.cliClientID, scopes: ["records:read", "records:write"]),
                endpoints: .outpost(base: running.baseURL)),
            client: plain)
        _ = try await authenticator.signIn(
            provider: "outpost.test",
            data: ["user": "bench", "signature": .string(TestAuthProvider.signature(user: "bench", secret: secret))])
        let signed = OutpostClient(
            configuration: plain.configuration, transport: plain.transport,
            middlewares: [AuthMiddleware(authenticator: authenticator)])

        let clock = ContinuousClock()
        let copyTime = try clock.measure { try copy(source, to: folder.appendingPathComponent("copy.bin")) }
        try FileManager.default.removeItem(at: folder.appendingPathComponent("copy.bin"))

        let before = Memory.residentBytes()
        let anonymousBefore = ProcessMemory.now().anonymous
        let (uploaded, uploadTime, uploadPeak, uploadAnonymousPeak) = try await sampled {
            try await signed.files.upload(from: source, as: "big.bin").result
        }
        // What the upload left resident (the allocator keeps some of it): the download starts there.
        let beforeDownload = Memory.residentBytes()
        let anonymousBeforeDownload = ProcessMemory.now().anonymous
        DownloadMeter.shared.watch("big.bin")
        defer { DownloadMeter.shared.stopWatching("big.bin") }
        let (downloaded, downloadTime, downloadPeak, downloadAnonymousPeak) = try await sampled {
            try await plain.files.download("big.bin", to: folder.appendingPathComponent("download.bin")).result
        }
        // Pages mapped from files (the program's code and libraries) only grow while it runs, so
        // those resident now bound the part of the download's peak that is code, not data.
        let fileBacked = ProcessMemory.now().fileBacked
        let serverHeld = DownloadMeter.shared.measurement("big.bin")?.peakUnsentBytes ?? 0
        try await plain.shutdown()

        // The same download through URLSessionTransport: FoundationNetworking cannot be paused, so
        // past its buffer the body waits in a temporary file (and FoundationNetworking queues what
        // it receives for the delegate without any backpressure).
        let viaURLSession = OutpostClient(configuration: plain.configuration, ownedTransport: URLSessionTransport())
        let (secondDownload, secondTime, secondPeak) = try await measured {
            try await viaURLSession.files.download("big.bin", to: folder.appendingPathComponent("download-2.bin")).result
        }
        try await viaURLSession.shutdown()
        await running.stop()

        guard uploaded.file.size == Int64(size), downloaded.sha256 == uploaded.file.sha256,
            secondDownload.sha256 == uploaded.file.sha256
        else {
            throw BenchFailure("the file came back different: \(downloaded.sha256) vs \(uploaded.file.sha256)")
        }
        let megabytes = Double(size) / 1_048_576
        let copyRate = megabytes / copyTime.inSeconds
        return [
            BenchResult(
                name: "files: upload \(label) through OutpostFiles (higher is better)", value: megabytes / uploadTime.inSeconds,
                unit: "MB/s", baseline: "local file copy, 256 KiB chunks", baselineValue: copyRate),
            BenchResult(
                name: "files: download \(label) through OutpostFiles (higher is better)",
                value: megabytes / downloadTime.inSeconds,
                unit: "MB/s", baseline: "local file copy, 256 KiB chunks", baselineValue: copyRate),
            BenchResult(
                name: "files: peak resident memory uploading \(label) (client + server; target < 64)",
                value: Double(uploadPeak) / 1_048_576, unit: "MB", baseline: "resident before",
                baselineValue: Double(before) / 1_048_576),
            BenchResult(
                name: "files: peak resident memory downloading \(label) (client + server; target < 64)",
                value: Double(downloadPeak) / 1_048_576, unit: "MB", baseline: "resident when the download started",
                baselineValue: Double(beforeDownload) / 1_048_576),
            BenchResult(
                name: "files: anonymous memory (heap, stacks) at most while uploading \(label), sampled every 2 ms",
                value: Double(uploadAnonymousPeak) / 1_048_576, unit: "MB", baseline: "anonymous before",
                baselineValue: Double(anonymousBefore) / 1_048_576),
            BenchResult(
                name: "files: anonymous memory (heap, stacks) at most while downloading \(label), sampled every 2 ms",
                value: Double(downloadAnonymousPeak) / 1_048_576, unit: "MB", baseline: "anonymous when the download started",
                baselineValue: Double(anonymousBeforeDownload) / 1_048_576),
            BenchResult(
                name: "files: resident pages mapped from files (code, libraries) after the download",
                value: Double(fileBacked) / 1_048_576,
                unit: "MB"),
            BenchResult(
                name: "files: most bytes the server held unsent for that download (watermark 64 KiB + a 256 KiB piece)",
                value: Double(serverHeld) / 1024, unit: "KiB", baseline: "a 256 KiB piece", baselineValue: 256),
            BenchResult(
                name: "files: download \(label) through URLSessionTransport (higher is better)",
                value: megabytes / secondTime.inSeconds, unit: "MB/s", baseline: "local file copy, 256 KiB chunks",
                baselineValue: copyRate),
            BenchResult(
                name: "files: peak resident memory downloading \(label) through URLSessionTransport (target < 64)",
                value: Double(secondPeak) / 1_048_576, unit: "MB", baseline: "resident before",
                baselineValue: Double(before) / 1_048_576),
        ]
    }

    /// The result of `transfer`, its duration and the peak resident memory while it ran.
    static func measured<T>(_ transfer: () async throws -> T) async throws -> (T, Duration, Int) {
        let (result, time, peak, _) = try await sampled(transfer)
        return (result, time, peak)
    }

    /// ``measured(_:)``, with what the peak is made of: the most anonymous memory (heap, stacks)
    /// seen while `transfer` ran, sampled every 2 ms.
    static func sampled<T>(_ transfer: () async throws -> T) async throws -> (T, Duration, Int, Int) {
        Memory.resetPeak()
        let sampler = AnonymousMemorySampler()
        let clock = ContinuousClock()
        let started = clock.now
        let result = try await transfer()
        let time = clock.now - started
        return (result, time, Memory.peakResidentBytes(), sampler.stop())
    }

    /// `size` bytes of a repeating non-trivial pattern, written 1 MiB at a time.
    static func writeFile(_ url: URL, size: Int) throws {
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var generator = SystemRandomNumberGenerator()
        let block = (0..<(1 << 17)).map { _ in generator.next() as UInt64 }.withUnsafeBytes { Data($0) }
        var written = 0
        while written < size {
            let piece = block.prefix(size - written)
            try handle.write(contentsOf: piece)
            written += piece.count
        }
    }

    /// The baseline: read and write the file in 256 KiB pieces, as the SDK does.
    static func copy(_ source: URL, to target: URL) throws {
        _ = FileManager.default.createFile(atPath: target.path, contents: nil)
        let input = try FileHandle(forReadingFrom: source)
        let output = try FileHandle(forWritingTo: target)
        defer {
            try? input.close()
            try? output.close()
        }
        while let data = try input.read(upToCount: 256 * 1024), !data.isEmpty {
            try output.write(contentsOf: data)
        }
    }
}

/// This process's resident memory from `/proc/self/statm`: anonymous (heap, stacks) and mapped
/// from files (code, libraries). Read without allocating, so a sampler does not disturb what it
/// samples.
struct ProcessMemory {
    var anonymous: Int
    var fileBacked: Int

    static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    static func now() -> ProcessMemory {
        let descriptor = open("/proc/self/statm", O_RDONLY)
        guard descriptor >= 0 else { return ProcessMemory(anonymous: 0, fileBacked: 0) }
        defer { close(descriptor) }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 160) { buffer in
            let count = read(descriptor, buffer.baseAddress, buffer.count)
            // size resident shared text lib data dt, in pages; shared = mapped from files.
            var fields = (0, 0, 0)
            var index = 0
            var value = 0
            for byte in buffer.prefix(max(0, count)) {
                if byte >= 0x30 && byte <= 0x39 {
                    value = value * 10 + Int(byte - 0x30)
                    continue
                }
                if index == 1 { fields.1 = value } else if index == 2 { fields.2 = value }
                index += 1
                value = 0
                if index > 2 { break }
            }
            return ProcessMemory(anonymous: (fields.1 - fields.2) * pageSize, fileBacked: fields.2 * pageSize)
        }
    }
}

/// Samples ``ProcessMemory/anonymous`` every 2 ms on a thread of its own until ``stop()``.
final class AnonymousMemorySampler: Sendable {
    private let peak = Atomic<Int>(0)
    private let running = Atomic<Bool>(true)
    private let finished = DispatchSemaphore(value: 0)

    init() {
        Thread.detachNewThread { [self] in
            while running.load(ordering: .acquiring) {
                let anonymous = ProcessMemory.now().anonymous
                if anonymous > peak.load(ordering: .relaxed) { peak.store(anonymous, ordering: .relaxed) }
                usleep(2000)
            }
            finished.signal()
        }
    }

    /// Stops sampling; returns the most seen.
    func stop() -> Int {
        running.store(false, ordering: .releasing)
        finished.wait()
        return max(peak.load(ordering: .relaxed), ProcessMemory.now().anonymous)
    }
}
