import Foundation
import OutpostTestSupport
import Testing

@Suite("Waiting for a child process", .timeLimit(.minutes(1)))
struct ProcessExitTests {
    func sleeper() -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sleep")
        process.arguments = ["600"]
        return process
    }

    @Test("a kill -9 is seen through the termination handler")
    func terminationHandler() async throws {
        let process = sleeper()
        let exit = ProcessExit(watching: process)
        try process.run()
        #expect(!exit.hasExited)
        // SIGKILL: children spawned from the test's threads may block SIGTERM (an inherited mask).
        _ = kill(process.processIdentifier, SIGKILL)
        let ended = await exit.wait()
        #expect(ended == ChildExit(status: SIGKILL, signalled: true))
    }

    #if canImport(Glibc)
        /// A child Foundation does not know (spawned directly), which nobody reaps: what a child
        /// whose end Foundation missed looks like. `peekExit` sees its end and leaves it unreaped.
        @Test("an ended child nobody reaped is seen as ended, and left for its owner to reap")
        func peekAtAZombie() async throws {
            var pid: pid_t = 0
            let arguments = ["/bin/sleep", "600"]
            var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
            defer { for argument in argv { free(argument) } }
            #expect(posix_spawn(&pid, "/bin/sleep", nil, nil, &argv, environ) == 0)
            #expect(ProcessExit.peekExit(pid) == nil, "still running")
            _ = kill(pid, SIGKILL)
            let seen = try await eventually(within: .seconds(10)) { ProcessExit.peekExit(pid) }
            #expect(seen == ChildExit(status: SIGKILL, signalled: true))
            #expect(ProcessExit.peekExit(pid) == seen, "not reaped by looking")
            var status: Int32 = 0
            #expect(waitpid(pid, &status, 0) == pid)
        }
    #endif
}
