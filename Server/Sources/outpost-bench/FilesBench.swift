import Foundation
import Logging
import Outpost
import OutpostServer
import OutpostServerTesting
@_spi(OutpostInternal) import OutpostSupport
import Synchronization

/// File figures: a large file uploaded and downloaded through `OutpostFiles`, with the
/// peak resident memory during each transfer (the target is under 64 MB for 1 GB) and the
/// throughput as a ratio to copying the same file locally in 256 KiB reads and writes, measured in
/// the same run. Two set-ups, each in fresh processes:
/// - **client and server in one process** (the stricter figure: both sides' memory), which
///   also downloads through `URLSessionTransport` and reports the server's unsent bytes;
/// - **the client alone**: the server runs in a process of its own (this program again, on a free
///   loopback port with its own SQLite file, stopped when the client is done), and the client's
///   process is measured the same way. This is what an app moving a file with the SDK pays.
/// - with `--postgres URL`, **client and server in one process, files in PostgreSQL** (a fresh
///   database on that server, `PostgresFileStorage`): the same transfers and figures.
enum FilesBench {
    /// Set in a child process that measures: `combined` or `client`; see ``run(_:)``.
    static let childVariable = "OUTPOST_BENCH_FILES_CHILD"
    /// Set in the child process that only serves, for a `client` child.
    static let serverVariable = "OUTPOST_BENCH_FILES_SERVER"
    /// The serving child's base URL, for the `client` child.
    static let urlVariable = "OUTPOST_BENCH_FILES_URL"
    /// The test sign-in provider's secret the server and the client share.
    static let secretVariable = "OUTPOST_BENCH_FILES_SECRET"

    /// Runs the measurements in fresh processes of this program (`--only files`), so that the
    /// memory figures start from the same state whichever groups ran before in this one (each
    /// group leaves memory resident: caches, allocator arenas, code paged in).
    static func run(_ options: BenchOptions) async throws -> [BenchResult] {
        let environment = ProcessInfo.processInfo.environment
        if environment[serverVariable] != nil { return try await serve(options) }
        switch environment[childVariable] {
        case "combined": return try await measureCombined(options)
        case "client": return try await measureClientAlone(options)
        case "postgres": return try await measurePostgres(options)
        default: break
        }
        let secret = UUID().uuidString
        var combined = try await child(options, [childVariable: "combined"]).results()
        if ScratchDatabase.postgresBase != nil {
            combined += try await child(options, [childVariable: "postgres"]).results()
        }
        let server = try child(options, [serverVariable: "1", secretVariable: secret])
        do {
            let url = try server.firstLine()
            let client = try await child(options, [childVariable: "client", urlVariable: url, secretVariable: secret]).results()
            return combined + client + (try await server.stop())
        } catch {
            _ = try? await server.stop()
            throw error
        }
    }

    /// The client and the server in this process.
    static func measureCombined(_ options: BenchOptions) async throws -> [BenchResult] {
        let setup = try Setup(options)
        defer { setup.remove() }
        let secret = UUID().uuidString
        let meter = DownloadMeter()
        meter.watch(setup.remoteName)
        var configuration = serverConfiguration(setup, secret: secret)
        configuration.downloadObserver = meter
        let running = try await OutpostServer.bench(configuration: configuration).start()
        let (plain, signed) = try await clients(running.baseURL, secret: secret)
        let copyRate = try setup.copyRate()
        let (upload, download) = try await transfers(setup, plain: plain, signed: signed)
        // Pages mapped from files (the program's code and libraries) only grow while it runs, so
        // those resident now bound the part of the download's peak that is code, not data.
        let fileBacked = ProcessMemory.now().fileBacked
        let serverHeld = meter.measurement(setup.remoteName)?.peakUnsentBytes ?? 0
        try await plain.shutdown()

        // The same download through URLSessionTransport: FoundationNetworking cannot be paused, so
        // past its buffer the body waits in a temporary file (and FoundationNetworking queues what
        // it receives for the delegate without any backpressure).
        let viaURLSession = OutpostClient(configuration: plain.configuration, ownedTransport: URLSessionTransport())
        let second = try await sampled {
            viaURLSession.files.download(setup.remoteName, to: setup.target("download-2.bin"))
        }
        try await viaURLSession.shutdown()
        await running.stop()
        try setup.check(second.result.sha256, against: upload.result.file.sha256)

        let scope = "client + server"
        return figures(upload, "upload", setup, scope: scope, copyRate: copyRate)
            + figures(download, "download", setup, scope: scope, copyRate: copyRate) + [
                BenchResult(
                    name: "files: resident pages mapped from files (code, libraries) after the download",
                    value: Double(fileBacked) / 1_048_576,
                    unit: "MB"),
                BenchResult(
                    name: "files: most bytes the server held unsent for that download (watermark 64 KiB + a 256 KiB piece)",
                    value: Double(serverHeld) / 1024, unit: "KiB", baseline: "a 256 KiB piece", baselineValue: 256),
                BenchResult(
                    name: "files: download \(setup.label) through URLSessionTransport (higher is better)",
                    value: setup.megabytes / second.time.inSeconds, unit: "MB/s", baseline: "local file copy, 256 KiB chunks",
                    baselineValue: copyRate),
                BenchResult(
                    name: "files: peak resident memory downloading \(setup.label) through URLSessionTransport (target < 64)",
                    value: Double(second.peak.resident) / 1_048_576, unit: "MB", baseline: "resident when it started",
                    baselineValue: Double(second.before.resident) / 1_048_576),
            ]
    }

    /// The client and the server in this process, the server's files in a fresh PostgreSQL database.
    static func measurePostgres(_ options: BenchOptions) async throws -> [BenchResult] {
        let setup = try Setup(options)
        defer { setup.remove() }
        let scratch = try await ScratchDatabase.make(.postgres)
        do {
            let secret = UUID().uuidString
            var configuration = serverConfiguration(setup, secret: secret)
            let logger = configuration.logger
            configuration.storageFactory = { try await scratch.location.open(logger: logger) }
            let running = try await OutpostServer.bench(configuration: configuration).start()
            let (plain, signed) = try await clients(running.baseURL, secret: secret)
            let copyRate = try setup.copyRate()
            let transferred = try await transfers(setup, plain: plain, signed: signed)
            try await plain.shutdown()
            await running.stop()
            await scratch.remove()
            let scope = "client + server, files in PostgreSQL"
            return figures(transferred.upload, "upload", setup, scope: scope, copyRate: copyRate)
                + figures(transferred.download, "download", setup, scope: scope, copyRate: copyRate)
        } catch {
            await scratch.remove()
            throw error
        }
    }

    /// The client alone, against the server child at ``urlVariable``.
    static func measureClientAlone(_ options: BenchOptions) async throws -> [BenchResult] {
        let environment = ProcessInfo.processInfo.environment
        guard let url = environment[urlVariable].flatMap(URL.init(string:)), let secret = environment[secretVariable] else {
            throw BenchFailure("the client child needs \(urlVariable) and \(secretVariable)")
        }
        let setup = try Setup(options)
        defer { setup.remove() }
        let (plain, signed) = try await clients(url, secret: secret)
        let copyRate = try setup.copyRate()
        let (upload, download) = try await transfers(setup, plain: plain, signed: signed)
        let fileBacked = ProcessMemory.now().fileBacked
        try await plain.shutdown()
        let scope = "client alone, server in its own process"
        return figures(upload, "upload", setup, scope: scope, copyRate: copyRate)
            + figures(download, "download", setup, scope: scope, copyRate: copyRate) + [
                BenchResult(
                    name: "files: resident pages mapped from files (code, libraries) after the download, client alone",
                    value: Double(fileBacked) / 1_048_576, unit: "MB")
            ]
    }

    /// The server child: serves on a free loopback port, prints its base URL on a line of its own,
    /// and stops once its standard input closes; then reports its own peak.
    static func serve(_ options: BenchOptions) async throws -> [BenchResult] {
        let setup = try Setup(options, writesSource: false)
        defer { setup.remove() }
        let secret = ProcessInfo.processInfo.environment[secretVariable] ?? UUID().uuidString
        let running = try await OutpostServer.bench(configuration: serverConfiguration(setup, secret: secret)).start()
        FileHandle.standardOutput.write(Data("\(running.baseURL.absoluteString)\n".utf8))
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                _ = FileHandle.standardInput.readDataToEndOfFile()
                done.resume()
            }
        }
        await running.stop()
        return [
            BenchResult(
                name: "files: peak resident memory of the server in its own process, over both transfers of \(setup.label)",
                value: Double(Memory.peakResidentBytes()) / 1_048_576, unit: "MB")
        ]
    }

    /// The folder, the file to send and the figures' size, for one measuring process.
    struct Setup {
        let size: Int
        let label: String
        let folder: URL
        let remoteName = "big.bin"

        init(_ options: BenchOptions, writesSource: Bool = true) throws {
            size = options.quick ? 64 << 20 : 1 << 30
            label = options.quick ? "64 MiB" : "1 GiB"
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-bench-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            if writesSource { try writeFile(source, size: size) }
        }

        var source: URL { target("source.bin") }
        var megabytes: Double { Double(size) / 1_048_576 }
        func target(_ name: String) -> URL { folder.appendingPathComponent(name) }
        func remove() { try? FileManager.default.removeItem(at: folder) }

        /// The baseline: MB/s of a local copy of the source.
        func copyRate() throws -> Double {
            let copyTime = try ContinuousClock().measure { try copy(source, to: target("copy.bin")) }
            try FileManager.default.removeItem(at: target("copy.bin"))
            return megabytes / copyTime.inSeconds
        }

        func check(_ sha256: String, against expected: String) throws {
            guard sha256 == expected else { throw BenchFailure("the file came back different: \(sha256) vs \(expected)") }
        }
    }

    static func serverConfiguration(_ setup: Setup, secret: String) -> ServerConfiguration {
        var quiet = Logger(label: "outpost.bench")
        quiet.logLevel = .critical
        var configuration = ServerConfiguration(
            port: 0, databasePath: setup.target("files.sqlite").path, logger: quiet,
            auth: AuthConfiguration(passwordCost: 4, testProviderSecret: secret))
        configuration.maxFileBytes = Int64(setup.size) * 2
        return configuration
    }

    /// A client without credentials and one signed in (through the test provider) on its transport.
    static func clients(_ baseURL: URL, secret: String) async throws -> (plain: OutpostClient, signed: OutpostClient) {
        let plain = OutpostClient(configuration: .init(baseURL: baseURL))
        _ = try await plain.send(.post("/users", json: ["username": "bench", "password": "bench-password"]))
        let authenticator = Authenticator(
            configuration: .init(
                registration: ClientRegistration(clientID: OutpostServer.cliClientID, scopes: ["records:read", "records:write"]),
                endpoints: .outpost(base: baseURL)),
            client: plain)
        _ = try await authenticator.signIn(
            provider: "outpost.test",
            data: ["user": "bench", "signature": .string(TestProvider.signature(user: "bench", secret: secret))])
        let signed = OutpostClient(
            configuration: plain.configuration, transport: plain.transport,
            middlewares: [AuthMiddleware(authenticator: authenticator)])
        return (plain, signed)
    }

    /// Uploads the source, then downloads it, each measured; checks the bytes.
    static func transfers(_ setup: Setup, plain: OutpostClient, signed: OutpostClient) async throws -> (
        upload: Sampled<FileUploadResult>, download: Sampled<FileDownloadResult>
    ) {
        let upload = try await sampled { signed.files.upload(from: setup.source, as: setup.remoteName) }
        let download = try await sampled { plain.files.download(setup.remoteName, to: setup.target("download.bin")) }
        guard upload.result.file.size == Int64(setup.size) else {
            throw BenchFailure("the server stored \(upload.result.file.size) bytes of \(setup.size)")
        }
        try setup.check(download.result.sha256, against: upload.result.file.sha256)
        return (upload, download)
    }

    /// Throughput, peak and anonymous memory of one transfer.
    static func figures<T>(_ transfer: Sampled<T>, _ direction: String, _ setup: Setup, scope: String, copyRate: Double)
        -> [BenchResult]
    {
        let starting = direction == "upload" ? "resident before" : "resident when the download started"
        let anonymousStarting = direction == "upload" ? "anonymous before" : "anonymous when the download started"
        let what = "\(direction)ing \(setup.label) (\(scope)"
        return [
            BenchResult(
                name: "files: \(direction) \(setup.label) through OutpostFiles, \(scope) (higher is better)",
                value: setup.megabytes / transfer.time.inSeconds,
                unit: "MB/s", baseline: "local file copy, 256 KiB chunks", baselineValue: copyRate),
            BenchResult(
                name: "files: peak resident memory \(what); target < 64)",
                value: Double(transfer.peak.resident) / 1_048_576, unit: "MB", baseline: starting,
                baselineValue: Double(transfer.before.resident) / 1_048_576),
            BenchResult(
                name: "files: anonymous memory (heap, stacks) at most while \(what)), sampled every 2 ms",
                value: Double(transfer.peak.anonymous) / 1_048_576, unit: "MB", baseline: anonymousStarting,
                baselineValue: Double(transfer.before.anonymous) / 1_048_576),
        ]
    }

    /// Resident memory, and the part of it that is anonymous (heap, stacks).
    struct Footprint {
        var resident: Int
        var anonymous: Int
    }

    /// A transfer's result, its duration, where memory stood when it started, and its peak: the
    /// most resident (`VmHWM`) and the most anonymous memory, sampled every 2 ms.
    struct Sampled<T> {
        var result: T
        var time: Duration
        var before: Footprint
        var peak: Footprint
    }

    /// Runs `transfer` and waits for its result, measuring it (see ``Sampled``).
    static func sampled<T: Sendable>(_ transfer: () -> FileTransfer<T>) async throws -> Sampled<T> {
        let before = Footprint(resident: Memory.residentBytes(), anonymous: ProcessMemory.now().anonymous)
        Memory.resetPeak()
        let sampler = AnonymousMemorySampler()
        let clock = ContinuousClock()
        let started = clock.now
        let result = try await transfer().result
        let time = clock.now - started
        let peak = Footprint(resident: Memory.peakResidentBytes(), anonymous: sampler.stop())
        return Sampled(result: result, time: time, before: before, peak: peak)
    }

    /// This program again, as a child process of the files group with `variables` set.
    static func child(_ options: BenchOptions, _ variables: [String: String]) throws -> Child {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe")
        process.arguments = ["--only", "files", "--json"] + (options.quick ? ["--quick"] : [])
        process.environment = ProcessInfo.processInfo.environment.merging(variables) { $1 }
        let output = Pipe()
        let input = Pipe()
        process.standardOutput = output
        process.standardInput = input
        try process.run()
        return Child(process: process, output: output.fileHandleForReading, input: input.fileHandleForWriting)
    }

    /// A child process of the files group: its figures come as JSON on its standard output (after
    /// the line with its URL, for the serving child).
    final class Child: @unchecked Sendable {
        let process: Process
        let output: FileHandle
        let input: FileHandle
        /// What was read past the first line.
        private var rest = Data()

        init(process: Process, output: FileHandle, input: FileHandle) {
            self.process = process
            self.output = output
            self.input = input
        }

        /// The first line it prints (the serving child's base URL).
        func firstLine() throws -> String {
            var line = Data()
            while true {
                let piece = output.availableData
                guard !piece.isEmpty else { throw BenchFailure("the server's process ended before it printed its URL") }
                if let newline = piece.firstIndex(of: UInt8(ascii: "\n")) {
                    line.append(piece[..<newline])
                    rest.append(piece[piece.index(after: newline)...])
                    return String(decoding: line, as: UTF8.self)
                }
                line.append(piece)
            }
        }

        /// Waits for it to end and decodes its figures.
        func results() async throws -> [BenchResult] {
            let json = rest + output.readDataToEndOfFile()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw BenchFailure("a files measurement's process exited with status \(process.terminationStatus)")
            }
            return try JSONDecoder().decode([BenchResult].self, from: json)
        }

        /// Closes its standard input (the serving child stops then) and returns its figures; a
        /// child still running 30 s later is ended by its process id.
        func stop() async throws -> [BenchResult] {
            try? input.close()
            let pid = process.processIdentifier
            let watchdog = Task {
                try await Task.sleep(for: .seconds(30))
                kill(pid, SIGTERM)
            }
            defer { watchdog.cancel() }
            return try await results()
        }
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
