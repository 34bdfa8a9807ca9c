import Foundation
import OutpostTestSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A helper server of the interop suites written in Python (the Django backend, the SMTP sink), run
/// by the python that `OUTPOST_INTEROP_PYTHON` names (`bash .ci/python-venv.sh` prints one). The
/// script prints one JSON line on stdout once it listens, on a port of 127.0.0.1 the OS picked, and
/// stops when its stdin closes or on SIGTERM.
struct PythonHelper: Sendable {
    /// The interop python, or `nil` when the suites that need one are off.
    static var python: String? {
        guard let path = ProcessInfo.processInfo.environment["OUTPOST_INTEROP_PYTHON"], !path.isEmpty else { return nil }
        return path
    }

    let pid: Int32
    private let exited: ProcessExit
    private let stdin: FileHandle

    var hasExited: Bool { exited.hasExited }

    /// Starts `script` with `arguments` and returns it with its readiness line, read before `deadline`.
    static func start(
        _ script: URL, arguments: [String] = [], directory: URL? = nil, deadline: ContinuousClock.Instant
    ) async throws -> (helper: PythonHelper, ready: Data) {
        guard let python else { throw Failure("OUTPOST_INTEROP_PYTHON is not set") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script.path] + arguments
        process.currentDirectoryURL = directory
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
        let helper = PythonHelper(pid: process.processIdentifier, exited: exited, stdin: input.fileHandleForWriting)
        guard let line = await firstLine(of: output.fileHandleForReading, pid: helper.pid, deadline: deadline), !line.isEmpty
        else {
            await helper.killNow()
            throw Failure("\(script.lastPathComponent) did not start: no readiness line before the deadline, or it exited")
        }
        return (helper, line)
    }

    /// Asks it to stop (its stdin closed and SIGTERM), then SIGKILL after 10 s; waits for it to exit.
    func stop() async {
        try? stdin.close()
        kill(pid, SIGTERM)
        let pid = pid
        let escalation = Task {
            try await Task.sleep(for: .seconds(10))  // a bound on a graceful stop, not a synchronisation
            kill(pid, SIGKILL)
        }
        await exited.wait()
        escalation.cancel()
    }

    /// Ends it at once (SIGKILL) and waits for it to exit.
    func killNow() async {
        kill(pid, SIGKILL)
        await exited.wait()
        try? stdin.close()
    }

    /// Reads `handle` up to the first newline on a thread of its own; at `deadline`, kills `pid`
    /// (which ends the read: EOF) and answers `nil`.
    private static func firstLine(of handle: FileHandle, pid: Int32, deadline: ContinuousClock.Instant) async -> Data? {
        await withTaskGroup(of: Data?.self) { group in
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
                try? await Task.sleep(until: deadline, clock: .continuous)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            if first == nil { kill(pid, SIGKILL) }
            return first
        }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
