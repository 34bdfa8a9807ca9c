import Foundation
import OutpostTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The stock Django REST framework + django-oauth-toolkit backend of `Server/Tests/Interop/drf`, run by the
/// python that `OUTPOST_INTEROP_PYTHON` names (`bash .ci/python-venv.sh` prints one), on a port of
/// 127.0.0.1 the OS picks. Fresh SQLite database in a temporary directory for each start.
struct DjangoServer: Sendable {
    /// The interop python, or `nil` when the suite is off.
    static var python: String? {
        guard let path = ProcessInfo.processInfo.environment["OUTPOST_INTEROP_PYTHON"], !path.isEmpty else { return nil }
        return path
    }
    static var isEnabled: Bool { python != nil }

    /// The server of the running suite (see ``DjangoServerTrait``).
    @TaskLocal static var current: DjangoServer?

    let baseURL: URL
    let username: String
    let password: String
    let secrets: [String: String]
    let pid: Int32
    private let exited: ProcessExit
    private let stdin: FileHandle

    /// Starts the server and waits, at most `timeout`, until it answers.
    static func start(timeout: Duration = .seconds(180)) async throws -> DjangoServer {
        guard let python else { throw Failure("OUTPOST_INTEROP_PYTHON is not set") }
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Interop/drf")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [folder.appendingPathComponent("serve.py").path]
        process.currentDirectoryURL = folder
        var environment = ProcessInfo.processInfo.environment
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
        environment["PYTHONUNBUFFERED"] = "1"
        process.environment = environment
        let output = Pipe()
        let input = Pipe()
        process.standardOutput = output
        process.standardInput = input
        process.standardError = FileHandle.nullDevice
        let exited = ProcessExit(watching: process)
        try process.run()
        // The child has its own copy; with ours closed, its stdout reaches EOF when it exits.
        try? output.fileHandleForWriting.close()
        let pid = process.processIdentifier
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        do {
            // The first line on stdout: {"port": ..., "base_url": ..., "username": ..., ...}.
            let line = try await firstLine(of: output.fileHandleForReading, pid: pid, deadline: deadline)
            guard let ready = try JSONSerialization.jsonObject(with: line) as? [String: Any],
                let base = (ready["base_url"] as? String).flatMap(URL.init(string:)),
                let username = ready["username"] as? String, let password = ready["password"] as? String,
                let clients = ready["clients"] as? [String: [String: Any]]
            else { throw Failure("serve.py printed no readiness line") }
            let server = DjangoServer(
                baseURL: base, username: username, password: password,
                secrets: clients.compactMapValues { $0["secret"] as? String }, pid: pid, exited: exited,
                stdin: input.fileHandleForWriting)
            try await server.awaitReadiness(deadline: deadline)
            return server
        } catch {
            kill(pid, SIGKILL)
            await exited.wait()
            throw error
        }
    }

    /// Stops the server by its PID (SIGTERM, then SIGKILL after 10 s) and waits for it to exit.
    func stop() async {
        kill(pid, SIGTERM)
        let pid = pid
        let escalation = Task {
            try await Task.sleep(for: .seconds(10))  // a bound on a graceful stop, not a synchronisation
            kill(pid, SIGKILL)
        }
        await exited.wait()
        escalation.cancel()
        try? stdin.close()
    }

    /// Polls the discovery document until it answers 200, or the deadline passes.
    private func awaitReadiness(deadline: ContinuousClock.Instant) async throws {
        let url = baseURL.appendingPathComponent(".well-known/oauth-authorization-server")
        let exited = exited
        let ready = try await eventually(within: deadline - .now, every: .milliseconds(100)) {
            if exited.hasExited { throw Failure("the Django server exited before it was ready") }
            var request = URLRequest(url: url)
            request.timeoutInterval = 5
            guard let (_, response) = try? await URLSession.shared.data(for: request) else { return false }
            return (response as? HTTPURLResponse)?.statusCode == 200
        }
        guard ready else { throw Failure("the Django server did not answer before the deadline") }
    }

    /// Reads `handle` up to the first newline on a thread of its own; gives up at `deadline`.
    private static func firstLine(of handle: FileHandle, pid: Int32, deadline: ContinuousClock.Instant) async throws -> Data {
        try await withThrowingTaskGroup(of: Data?.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    Thread.detachNewThread {
                        var line = Data()
                        while true {
                            let chunk = handle.availableData
                            if chunk.isEmpty { break }
                            line.append(chunk)
                            if let newline = line.firstIndex(of: UInt8(ascii: "\n")) {
                                line = line[..<newline]
                                break
                            }
                        }
                        continuation.resume(returning: line)
                    }
                }
            }
            group.addTask {
                try await Task.sleep(until: deadline, clock: .continuous)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let line = first, !line.isEmpty else {
                kill(pid, SIGKILL)  // ends the reader thread too (EOF)
                throw Failure("the Django server did not start (no readiness line before the deadline, or it exited)")
            }
            return line
        }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}

/// Starts one Django server for a suite, hands it to the tests in ``DjangoServer/current``, and stops
/// it when the suite ends, passed or failed.
struct DjangoServerTrait: SuiteTrait, TestScoping {
    var isRecursive: Bool { false }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        guard DjangoServer.isEnabled else { return try await function() }  // the suite is skipped
        let server = try await DjangoServer.start()
        do {
            try await DjangoServer.$current.withValue(server) { try await function() }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
