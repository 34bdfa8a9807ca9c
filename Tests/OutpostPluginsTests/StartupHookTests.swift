import OutpostPlugins
import Synchronization
import Testing

private struct Hook: StartupHook {
    var name: String
    var phases: Set<StartupPhase>
    var log: Log
    var fails = false
    var hangs = false

    struct Boom: Error {}

    func run(phase: StartupPhase, context: [String: String]) async throws {
        log.append("\(name)@\(phase.rawValue)")
        if hangs { try await Task.sleep(for: .seconds(3600)) }
        if fails { throw Boom() }
    }
}

private final class Log: Sendable {
    let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

@Suite("Startup hooks")
struct StartupHookTests {
    @Test("hooks run in order, only at their phases")
    func order() async throws {
        let log = Log()
        let runner = StartupHookRunner(hooks: [
            Hook(name: "a", phases: [.launch], log: log),
            Hook(name: "b", phases: [.applicationReady], log: log),
            Hook(name: "c", phases: [.launch, .applicationReady], log: log),
        ])
        #expect(try await runner.run(.launch) == ["a", "c"])
        #expect(try await runner.run(.applicationReady) == ["b", "c"])
        #expect(log.all == ["a@launch", "c@launch", "b@applicationReady", "c@applicationReady"])
    }

    @Test("a failing hook stops the phase and is named")
    func failure() async throws {
        let log = Log()
        let runner = StartupHookRunner(hooks: [
            Hook(name: "first", phases: [.launch], log: log, fails: true),
            Hook(name: "second", phases: [.launch], log: log),
        ])
        let failure = try await #require(throws: StartupHookFailure.self) { try await runner.run(.launch) }
        #expect(failure.hook == "first")
        #expect(!failure.timedOut)
        #expect(log.all == ["first@launch"])
    }

    @Test("a hook past the timeout is reported as timed out")
    func timeout() async throws {
        let runner = StartupHookRunner(hooks: [Hook(name: "slow", phases: [.launch], log: Log(), hangs: true)], timeout: .milliseconds(50))
        let failure = try await #require(throws: StartupHookFailure.self) { try await runner.run(.launch) }
        #expect(failure.timedOut)
        #expect(failure.description.contains("slow"))
    }
}
