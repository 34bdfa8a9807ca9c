import OutpostCallbacks
import OutpostPlugins
import Synchronization
import Testing

@Suite("The x-callback-url startup hook")
struct CallbackStartupHookTests {
    @Test("an incoming URL is routed to the registered action")
    func routes() async throws {
        let router = CallbackRouter(opener: RecordingURLOpener())
        let seen = Mutex<[String: String]>([:])
        router.register(scheme: "myapp", action: "open") { callback in seen.withLock { $0 = callback.parameters } }
        let runner = StartupHookRunner(hooks: [CallbackStartupHook(router: router)])
        let ran = try await runner.run(.continueUserActivity, context: ["url": "myapp://x-callback-url/open?id=42"])
        #expect(ran == ["callbacks"])
        #expect(seen.withLock { $0 } == ["id": "42"])
        #expect(try await runner.run(.launch).isEmpty, "only at continueUserActivity")
        #expect(
            try await runner.run(.continueUserActivity, context: ["activity": "handoff"]) == ["callbacks"],
            "no url: nothing to do")
    }

    @Test("a URL the router refuses fails the hook with the routing error")
    func refuses() async throws {
        let router = CallbackRouter(opener: RecordingURLOpener())
        router.register(scheme: "myapp", action: "open") { _ in }
        let runner = StartupHookRunner(hooks: [CallbackStartupHook(name: "links", router: router)])
        let failure = await #expect(throws: StartupHookFailure.self) {
            try await runner.run(.continueUserActivity, context: ["url": "myapp://x-callback-url/delete?id=1"])
        }
        #expect(failure?.code == .routingFailed)
        #expect(failure?.hook == "links")
        #expect(failure?.phase == .continueUserActivity)
        #expect((failure?.underlying as? CallbackError)?.code == .unknownAction)
        #expect(failure?.suggestion?.contains("action") == true)

        let other = await #expect(throws: StartupHookFailure.self) {
            try await runner.run(.continueUserActivity, context: ["url": "elsewhere://x-callback-url/open"])
        }
        #expect((other?.underlying as? CallbackError)?.code == .unknownScheme)
    }
}
