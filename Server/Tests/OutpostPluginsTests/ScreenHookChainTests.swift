@_spi(OutpostInternal) import OutpostCore
import OutpostPlugins
import OutpostTestSupport
import Testing

@Suite("Screen hook chains")
struct ScreenHookChainTests {
    /// The error a run of `chain` throws, or `nil` (a recorded issue) when the run let the screen show.
    static func failure(of chain: ScreenHookChain, sourceLocation: SourceLocation = #_sourceLocation) async -> PluginError? {
        do {
            let outcome = try await chain.run()
            Issue.record("the chain let screen '\(chain.screen)' show: \(outcome.passed)", sourceLocation: sourceLocation)
            return nil
        } catch {
            return error
        }
    }

    @Test("hooks run in order and pass the data dictionary along")
    func orderAndData() async throws {
        let log = Log()
        let chain = ScreenHookChain(
            screen: "player",
            hooks: [
                ScriptedHook(name: "a", log: log) { context in
                    #expect(context.data == ["item_id": "42"])
                    return .proceed(adding: ["step": 1])
                },
                ScriptedHook(name: "b", log: log) { context in
                    let step = context.data["step"]?.intValue ?? 0
                    return .proceed(adding: ["step": .int(step + 1), "from_b": true])
                },
                ScriptedHook(name: "c", log: log) { context in
                    #expect(context.screen == "player")
                    #expect(context.data["step"] == 2)
                    return .proceed()
                },
            ])
        let outcome = try await chain.run(data: ["item_id": "42"])
        #expect(outcome.passed == ["a", "b", "c"])
        #expect(outcome.failures.isEmpty)
        #expect(log.all == ["a#0", "b#0", "c#0"])
        #expect(outcome.data == ["item_id": "42", "step": 2, "from_b": true])
    }

    @Test("a failing flow blocker stops the chain; later hooks do not run")
    func blockerStops() async throws {
        let log = Log()
        let chain = ScreenHookChain(
            screen: "premium",
            hooks: [
                ScriptedHook(name: "first", log: log) { _ in .proceed(adding: ["kept": true]) },
                ScriptedHook(name: "gate", log: log) { _ in throw PluginError(.denied, "no subscription") },
                ScriptedHook(name: "never", log: log) { _ in .proceed() },
            ])
        let blocked = try #require(await Self.failure(of: chain))
        #expect(log.all == ["first#0", "gate#0"])
        #expect(blocked.code == .denied)
        #expect(blocked.hook == "gate")
        #expect(blocked.screen == "premium")
        #expect(blocked.description.contains("no subscription"))
    }

    @Test("a failing hook that is not a blocker is recorded and the chain goes on with the data unchanged")
    func nonBlockerContinues() async throws {
        let log = Log()
        let chain = ScreenHookChain(
            screen: "home",
            hooks: [
                ScriptedHook(name: "denies", log: log, isFlowBlocker: false) { _ in
                    throw PluginError(.denied, "no promo today")
                },
                ScriptedHook(name: "throws", log: log, isFlowBlocker: false) { _ in throw Boom() },
                ScriptedHook(name: "last", log: log) { context in
                    #expect(context.data == ["start": true])
                    return .proceed()
                },
            ])
        let outcome = try await chain.run(data: ["start": true])
        #expect(outcome.passed == ["last"])
        #expect(outcome.failures.map(\.code) == [.denied, .hookFailed])
        #expect(outcome.failures.map(\.hook) == ["denies", "throws"])
        #expect(outcome.failures[1].underlying is Boom)
    }

    @Test("a blocker that throws fails with hookFailed; a thrown PluginError keeps its code")
    func thrownErrors() async throws {
        let log = Log()
        let plain = await Self.failure(
            of: ScreenHookChain(screen: "s", hooks: [ScriptedHook(name: "x", log: log) { _ in throw Boom() }]))
        #expect(plain?.code == .hookFailed)
        #expect(plain?.underlying is Boom)
        let typed = await Self.failure(
            of: ScreenHookChain(
                screen: "s",
                hooks: [ScriptedHook(name: "y", log: log) { _ in throw PluginError(.complianceCheckFailed, "offline") }]))
        #expect(typed?.code == .complianceCheckFailed)
        #expect(typed?.hook == "y")
        #expect(typed?.screen == "s")
    }

    @Test("a hook past the time limit fails with timedOut, even one that ignores cancellation")
    func timeouts() async throws {
        let log = Log()
        let gate = Gate()
        let chain = ScreenHookChain(
            screen: "slow",
            hooks: [
                ScriptedHook(name: "sleepy", log: log, isFlowBlocker: false) { _ in
                    try await Task.sleep(for: .seconds(3600))
                    return .proceed()
                },
                ScriptedHook(name: "stubborn", log: log) { _ in
                    await gate.wait()  // ignores cancellation
                    return .proceed()
                },
                ScriptedHook(name: "never", log: log) { _ in .proceed() },
            ],
            timeout: .milliseconds(50))
        let blocked = await Self.failure(of: chain)
        gate.open()
        #expect(blocked?.hook == "stubborn")
        #expect(blocked?.timedOut == true)
        #expect(log.all == ["sleepy#0", "stubborn#0"])

        // The same hooks, none of them a blocker: both time-outs are recorded and the chain goes on.
        let lenient = ScreenHookChain(
            screen: "slow",
            hooks: [
                ScriptedHook(name: "sleepy", log: log, isFlowBlocker: false) { _ in
                    try await Task.sleep(for: .seconds(3600))
                    return .proceed()
                },
                ScriptedHook(name: "after", log: log) { _ in .proceed() },
            ],
            timeout: .milliseconds(50))
        let outcome = try await lenient.run()
        #expect(outcome.failures.map(\.code) == [.timedOut])
        #expect(outcome.failures.map(\.hook) == ["sleepy"])
        #expect(outcome.passed == ["after"])
    }

    @Test("sign-in required: the presenter signs in, the hook is asked again and lets the screen show")
    func signInThenContinue() async throws {
        let log = Log()
        let session = FakeSession()
        let provider = try OAuthLoginProvider(
            identifier: "oauth", session: session, notificationCenter: NotificationRecorder().center)
        let presenter = ScriptedPresenter { request in
            #expect(request.provider == "oauth")
            try await provider.login(parameters: request.parameters)
        }
        let chain = ScreenHookChain(
            screen: "account",
            hooks: [
                ScriptedHook(name: "gate", log: log) { context in
                    provider.isAuthenticated
                        ? .proceed(adding: ["user": "ada"])
                        : .requireSignIn(LoginRequest(provider: "oauth", reason: "Your account needs you"))
                },
                ScriptedHook(name: "after", log: log) { context in
                    #expect(context.data["user"] == "ada")
                    return .proceed()
                },
            ],
            presenter: presenter)
        let outcome = try await chain.run()
        #expect(outcome.passed == ["gate", "after"])
        #expect(log.all == ["gate#0", "gate#0+signedIn", "after#0"])
        #expect(presenter.requests.map(\.reason) == ["Your account needs you"])
        #expect(provider.isAuthenticated)
    }

    @Test("sign-in required: cancelled, failed, no presenter, still required, denied afterwards")
    func signInFailures() async throws {
        let log = Log()
        let requires = ScriptedHook(name: "gate", log: log) { context in
            context.afterSignIn ? .proceed() : .requireSignIn(LoginRequest())
        }
        let gaveUp = ScriptedPresenter { _ in throw PluginError(.loginCancelled, "closed the browser") }
        let cancelled = await Self.failure(of: ScreenHookChain(screen: "s", hooks: [requires], presenter: gaveUp))
        #expect(cancelled?.code == .signInCancelled)
        let interrupted = await Self.failure(
            of: ScreenHookChain(screen: "s", hooks: [requires], presenter: ScriptedPresenter { _ in throw CancellationError() }))
        #expect(interrupted?.code == .signInCancelled)

        let failed = await Self.failure(
            of: ScreenHookChain(
                screen: "s", hooks: [requires],
                presenter: ScriptedPresenter { _ in throw PluginError(.loginFailed, "wrong password") }))
        #expect(failed?.code == .signInFailed)
        #expect((failed?.underlying as? PluginError)?.message == "wrong password")

        let noPresenter = await Self.failure(of: ScreenHookChain(screen: "s", hooks: [requires]))
        #expect(noPresenter?.code == .noLoginPresenter)
        #expect(noPresenter?.suggestion?.contains("LoginPresenting") == true)

        let stubborn = ScriptedHook(name: "stubborn", log: log) { _ in .requireSignIn(LoginRequest()) }
        let still = await Self.failure(of: ScreenHookChain(screen: "s", hooks: [stubborn], presenter: ScriptedPresenter()))
        #expect(still?.code == .signInRequired)

        let picky = ScriptedHook(name: "picky", log: log) { context in
            guard !context.afterSignIn else { throw PluginError(.denied, "not premium") }
            return .requireSignIn(LoginRequest())
        }
        let denied = await Self.failure(of: ScreenHookChain(screen: "s", hooks: [picky], presenter: ScriptedPresenter()))
        #expect(denied?.code == .denied)
        #expect(denied?.hook == "picky")

        var lenient = requires
        lenient.isFlowBlocker = false
        let goesOn = try await ScreenHookChain(screen: "s", hooks: [lenient], presenter: gaveUp).run()
        #expect(goesOn.failures.map(\.code) == [.signInCancelled])
    }

    @Test("post-launch hooks: one-shot hooks run once per presentation, recurring ones every time")
    func postLaunchAndRecurring() async throws {
        let log = Log()
        let chain = ScreenHookChain(
            screen: "home",
            hooks: [
                ScriptedHook(name: "pre", log: log) { _ in .proceed() },
                ScriptedHook(name: "once", log: log, stages: [.postLaunch]) { _ in .proceed() },
                ScriptedHook(name: "every", log: log, stages: [.postLaunch], isRecurring: true) { _ in .proceed() },
            ])
        let presentation = ScreenPresentation(screen: "home")
        let before = try await chain.run(.beforePresentation, presentation: presentation)
        #expect(before.passed == ["pre"])
        let first = try await chain.run(.postLaunch, presentation: presentation)
        #expect(first.passed == ["once", "every"])
        let second = try await chain.run(.postLaunch, presentation: presentation)
        #expect(second.passed == ["every"])
        #expect(second.skipped == ["once"])
        #expect(presentation.runCount(hook: "every", stage: .postLaunch) == 2)
        // A new presentation starts over.
        let fresh = try await chain.run(.postLaunch, presentation: ScreenPresentation(screen: "home"))
        #expect(fresh.passed == ["once", "every"])
        #expect(log.all == ["pre#0", "once#0", "every#0", "every#1", "once#0", "every#0"])
    }
}

@Suite("The access screen hook")
struct AccessScreenHookTests {
    @Test("signed out: sign-in through the provider, then the compliance check grants the screen")
    func signInThenGranted() async throws {
        let provider = try OAuthLoginProvider(
            identifier: "oauth", session: FakeSession(), notificationCenter: NotificationRecorder().center)
        let compliance = FixedCompliance(entitlements: ["premium"]) { provider.isAuthenticated }
        let hook = AccessScreenHook(
            name: "premium-gate", loginProvider: provider, compliance: compliance, policies: ["entitlement": "premium"])
        let denied = await ScreenHookChainTests.failure(of: ScreenHookChain(screen: "premium", hooks: [hook]))
        #expect(denied?.code == .noLoginPresenter)

        let chain = ScreenHookChain(screen: "premium", hooks: [hook], presenter: ProviderLoginPresenter(providers: [provider]))
        let granted = try await chain.run()
        #expect(granted.passed == ["premium-gate"])
        #expect(granted.data == ["compliant": true])
    }

    @Test("signed in without the entitlement: denied; free content passes signed out")
    func deniedAndFree() async throws {
        let session = FakeSession(stored: "old")
        let provider = try OAuthLoginProvider(
            identifier: "oauth", session: session, notificationCenter: NotificationRecorder().center)
        let compliance = FixedCompliance(entitlements: []) { provider.isAuthenticated }
        let hook = AccessScreenHook(
            name: "gate", loginProvider: provider, compliance: compliance, policies: ["entitlement": "premium"])

        let free = try await ScreenHookChain(screen: "v", hooks: [hook]).run(data: ["policies": ["free": true]])
        #expect(free.data["compliant"] == true)

        #expect(await provider.restore())
        let denied = await ScreenHookChainTests.failure(of: ScreenHookChain(screen: "v", hooks: [hook]))
        #expect(denied?.code == .denied)
        #expect(denied?.hook == "gate")
        #expect(denied?.message.contains("premium") == true)
    }

    @Test("without a compliance checker only sign-in matters")
    func signInOnly() async throws {
        let provider = try OAuthLoginProvider(
            identifier: "oauth", session: FakeSession(stored: "t"), notificationCenter: NotificationRecorder().center)
        let hook = AccessScreenHook(name: "gate", loginProvider: provider)
        #expect(try await hook.evaluate(ScreenHookContext(screen: "a")) == .requireSignIn(LoginRequest(provider: "oauth")))
        await provider.restore()
        #expect(try await hook.evaluate(ScreenHookContext(screen: "a")) == .proceed(adding: ["signed_in": true]))
    }

    @Test("the presenter throws unknownPlugin for a provider it does not have")
    func unknownProvider() async throws {
        let provider = try OAuthLoginProvider(
            identifier: "oauth", session: FakeSession(), notificationCenter: NotificationRecorder().center)
        let presenter = ProviderLoginPresenter(providers: [provider])
        await #expect { try await presenter.presentLogin(LoginRequest(provider: "facebook"), screen: "s") } throws: { error in
            let error = error as? PluginError
            return error?.code == .unknownPlugin && error?.suggestion?.contains("oauth") == true
        }
    }
}
