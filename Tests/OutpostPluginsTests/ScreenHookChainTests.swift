@_spi(OutpostInternal) import OutpostCore
import OutpostPlugins
import OutpostTestSupport
import Testing

@Suite("Screen hook chains")
struct ScreenHookChainTests {
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
        let outcome = await chain.run(data: ["item_id": "42"])
        #expect(outcome.isAllowed)
        #expect(outcome.passed == ["a", "b", "c"])
        #expect(log.all == ["a#0", "b#0", "c#0"])
        #expect(outcome.data == ["item_id": "42", "step": 2, "from_b": true])
        #expect(try outcome.get() == outcome.data)
    }

    @Test("a failing flow blocker stops the chain; later hooks do not run")
    func blockerStops() async throws {
        let log = Log()
        let chain = ScreenHookChain(
            screen: "premium",
            hooks: [
                ScriptedHook(name: "first", log: log) { _ in .proceed(adding: ["kept": true]) },
                ScriptedHook(name: "gate", log: log) { _ in .deny(reason: "no subscription") },
                ScriptedHook(name: "never", log: log) { _ in .proceed() },
            ])
        let outcome = await chain.run()
        #expect(!outcome.isAllowed)
        #expect(log.all == ["first#0", "gate#0"])
        let blocked = try #require(outcome.blockedBy)
        #expect(blocked.code == .denied)
        #expect(blocked.hook == "gate")
        #expect(blocked.screen == "premium")
        #expect(blocked.description.contains("no subscription"))
        #expect(outcome.data == ["kept": true])
        #expect(throws: PluginError.self) { try outcome.get() }
    }

    @Test("a failing hook that is not a blocker is recorded and the chain goes on with the data unchanged")
    func nonBlockerContinues() async throws {
        let log = Log()
        let chain = ScreenHookChain(
            screen: "home",
            hooks: [
                ScriptedHook(name: "denies", log: log, isFlowBlocker: false) { _ in .deny(reason: "no promo today") },
                ScriptedHook(name: "throws", log: log, isFlowBlocker: false) { _ in throw Boom() },
                ScriptedHook(name: "last", log: log) { context in
                    #expect(context.data == ["start": true])
                    return .proceed()
                },
            ])
        let outcome = await chain.run(data: ["start": true])
        #expect(outcome.isAllowed)
        #expect(outcome.passed == ["last"])
        #expect(outcome.failures.map(\.code) == [.denied, .hookFailed])
        #expect(outcome.failures.map(\.hook) == ["denies", "throws"])
        #expect(outcome.failures[1].underlying is Boom)
    }

    @Test("a blocker that throws fails with hookFailed; a thrown PluginError keeps its code")
    func thrownErrors() async throws {
        let log = Log()
        let plain = await ScreenHookChain(screen: "s", hooks: [ScriptedHook(name: "x", log: log) { _ in throw Boom() }]).run()
        #expect(plain.blockedBy?.code == .hookFailed)
        #expect(plain.blockedBy?.underlying is Boom)
        let typed = await ScreenHookChain(
            screen: "s",
            hooks: [ScriptedHook(name: "y", log: log) { _ in throw PluginError(.complianceCheckFailed, "offline") }]
        ).run()
        #expect(typed.blockedBy?.code == .complianceCheckFailed)
        #expect(typed.blockedBy?.hook == "y")
        #expect(typed.blockedBy?.screen == "s")
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
        let outcome = await chain.run()
        gate.open()
        #expect(outcome.failures.map(\.code) == [.timedOut, .timedOut])
        #expect(outcome.failures.map(\.hook) == ["sleepy", "stubborn"])
        #expect(outcome.blockedBy?.hook == "stubborn")
        #expect(outcome.blockedBy?.timedOut == true)
        #expect(!log.all.contains("never#0"))
    }

    @Test("sign-in required: the presenter signs in, the hook is asked again and lets the screen show")
    func signInThenContinue() async throws {
        let log = Log()
        let session = FakeSession()
        let provider = try OAuthLoginProvider(
            identifier: "oauth", session: session, notificationCenter: NotificationRecorder().center)
        let presenter = ScriptedPresenter { request in
            #expect(request.provider == "oauth")
            return await provider.login(parameters: request.parameters)
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
        let outcome = await chain.run()
        #expect(outcome.isAllowed)
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
        let cancelled = await ScreenHookChain(screen: "s", hooks: [requires], presenter: ScriptedPresenter { _ in .cancelled })
            .run()
        #expect(cancelled.blockedBy?.code == .signInCancelled)

        let failed = await ScreenHookChain(
            screen: "s", hooks: [requires],
            presenter: ScriptedPresenter { _ in .failed(PluginError(.loginFailed, "wrong password")) }
        ).run()
        #expect(failed.blockedBy?.code == .signInFailed)
        #expect((failed.blockedBy?.underlying as? PluginError)?.message == "wrong password")

        let noPresenter = await ScreenHookChain(screen: "s", hooks: [requires]).run()
        #expect(noPresenter.blockedBy?.code == .noLoginPresenter)
        #expect(noPresenter.blockedBy?.suggestion?.contains("LoginPresenting") == true)

        let stubborn = ScriptedHook(name: "stubborn", log: log) { _ in .requireSignIn(LoginRequest()) }
        let still = await ScreenHookChain(screen: "s", hooks: [stubborn], presenter: ScriptedPresenter { _ in .completed }).run()
        #expect(still.blockedBy?.code == .signInRequired)

        let picky = ScriptedHook(name: "picky", log: log) { context in
            context.afterSignIn ? .deny(reason: "not premium") : .requireSignIn(LoginRequest())
        }
        let denied = await ScreenHookChain(screen: "s", hooks: [picky], presenter: ScriptedPresenter { _ in .completed }).run()
        #expect(denied.blockedBy?.code == .denied)

        var lenient = requires
        lenient.isFlowBlocker = false
        let goesOn = await ScreenHookChain(screen: "s", hooks: [lenient], presenter: ScriptedPresenter { _ in .cancelled }).run()
        #expect(goesOn.isAllowed)
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
        let before = await chain.run(.beforePresentation, presentation: presentation)
        #expect(before.passed == ["pre"])
        let first = await chain.run(.postLaunch, presentation: presentation)
        #expect(first.passed == ["once", "every"])
        let second = await chain.run(.postLaunch, presentation: presentation)
        #expect(second.passed == ["every"])
        #expect(second.skipped == ["once"])
        #expect(presentation.runCount(hook: "every", stage: .postLaunch) == 2)
        // A new presentation starts over.
        let fresh = await chain.run(.postLaunch, presentation: ScreenPresentation(screen: "home"))
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
        let denied = await ScreenHookChain(screen: "premium", hooks: [hook]).run()
        #expect(denied.blockedBy?.code == .noLoginPresenter)

        let chain = ScreenHookChain(screen: "premium", hooks: [hook], presenter: ProviderLoginPresenter(providers: [provider]))
        let granted = await chain.run()
        #expect(granted.isAllowed)
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

        let free = await ScreenHookChain(screen: "v", hooks: [hook]).run(data: ["policies": ["free": true]])
        #expect(free.isAllowed)

        #expect(await provider.restore())
        let denied = await ScreenHookChain(screen: "v", hooks: [hook]).run()
        #expect(denied.blockedBy?.code == .denied)
        #expect(denied.blockedBy?.message.contains("premium") == true)
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

    @Test("the presenter reports an unknown provider as a failed login")
    func unknownProvider() async throws {
        let provider = try OAuthLoginProvider(
            identifier: "oauth", session: FakeSession(), notificationCenter: NotificationRecorder().center)
        let outcome = await ProviderLoginPresenter(providers: [provider]).presentLogin(
            LoginRequest(provider: "facebook"), screen: "s")
        #expect(outcome.status == .failed)
        #expect(outcome.error?.code == .unknownPlugin)
        #expect(outcome.error?.suggestion?.contains("oauth") == true)
    }
}
