import OutpostPlugins
import OutpostTestSupport
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
        let runner = StartupHookRunner(
            hooks: [Hook(name: "slow", phases: [.launch], log: Log(), hangs: true)], timeout: .milliseconds(50))
        let failure = try await #require(throws: StartupHookFailure.self) { try await runner.run(.launch) }
        #expect(failure.timedOut)
        #expect(failure.description.contains("slow"))
    }
}

@Suite("Startup hooks, more")
struct StartupHookMoreTests {
    private struct Stubborn: StartupHook {
        let name = "stubborn"
        let phases: Set<StartupPhase> = [.applicationReady]
        let gate: Gate
        func run(phase: StartupPhase, context: [String: String]) async throws { await gate.wait() }
    }

    private struct Typed: StartupHook {
        let name = "typed"
        let phases: Set<StartupPhase> = [.loadingFailed]
        func run(phase: StartupPhase, context: [String: String]) async throws {
            throw PluginError(.complianceCheckFailed, "offline")
        }
    }

    @Test("a hook that ignores cancellation cannot hold the runner past the limit")
    func ignoresCancellation() async throws {
        let gate = Gate()
        let runner = StartupHookRunner(hooks: [Stubborn(gate: gate)], timeout: .milliseconds(50))
        let failure = await #expect(throws: StartupHookFailure.self) { try await runner.run(.applicationReady) }
        gate.open()
        #expect(failure?.code == .timedOut)
        #expect(failure?.phase == .applicationReady)
    }

    @Test("a PluginError thrown by a hook keeps its code and gains the hook and phase")
    func typedError() async throws {
        let failure = await #expect(throws: StartupHookFailure.self) {
            try await StartupHookRunner(hooks: [Typed()]).run(.loadingFailed)
        }
        #expect(failure?.code == .complianceCheckFailed)
        #expect(failure?.hook == "typed")
        #expect(failure?.phase == .loadingFailed)
    }

    @Test("a cancelled runner stops at once")
    func cancelled() async throws {
        let gate = Gate()
        let task = Task {
            try await StartupHookRunner(hooks: [Stubborn(gate: gate)], timeout: .seconds(3600)).run(.applicationReady)
        }
        task.cancel()
        let result = await task.result
        gate.open()
        #expect(throws: StartupHookFailure.self) { try result.get() }
    }
}
