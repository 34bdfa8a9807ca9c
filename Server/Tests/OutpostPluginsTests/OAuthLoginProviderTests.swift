import Foundation
@_spi(OutpostInternal) import OutpostCore
import OutpostPlugins
import OutpostTestSupport
import Testing

@Suite("The OAuth login provider")
struct OAuthLoginProviderTests {
    private func provider(_ session: FakeSession, configuration: JSONValue = [:]) throws -> (
        OAuthLoginProvider, NotificationRecorder
    ) {
        let recorder = NotificationRecorder()
        return (
            try OAuthLoginProvider(
                identifier: "oauth", session: session, configuration: configuration, notificationCenter: recorder.center),
            recorder
        )
    }

    @Test("a completed login: states, the AsyncSequence and the notifications agree")
    func completedLogin() async throws {
        let session = FakeSession()
        let (provider, recorder) = try provider(session)
        let changes = provider.loginStateChanges()
        #expect(!provider.isAuthenticated)
        try await provider.login()
        #expect(provider.isAuthenticated)
        #expect(!provider.isPerformingAuthorizationFlow)
        #expect(await provider.userToken == "access-1")
        #expect(session.signInCalls == [true])

        let expected = [
            LoginStateChange(
                provider: "oauth", previous: .signedOut,
                current: LoginState(isAuthenticated: false, isPerformingAuthorizationFlow: true)),
            LoginStateChange(
                provider: "oauth", previous: LoginState(isAuthenticated: false, isPerformingAuthorizationFlow: true),
                current: .signedIn),
        ]
        #expect(await changes.first(2) == expected)
        #expect(recorder.all == expected)
    }

    @Test("during a login the flow is under way and a second login is refused")
    func inProgress() async throws {
        let gate = Gate()
        let (provider, _) = try provider(FakeSession(gate: gate))
        let changes = provider.loginStateChanges()
        let first = Task { try await provider.login() }
        let started = await changes.first(1)
        #expect(started.first?.current.isPerformingAuthorizationFlow == true)
        #expect(provider.isPerformingAuthorizationFlow)
        await #expect { try await provider.login() } throws: { ($0 as? PluginError)?.code == .loginInProgress }
        gate.open()
        try await first.value
        #expect(provider.isAuthenticated)
        #expect(!provider.isPerformingAuthorizationFlow)
    }

    @Test("a cancelled login and a failed login leave the user signed out")
    func cancelledAndFailed() async throws {
        let (cancelling, cancelRecorder) = try provider(FakeSession(signIn: .success(false)))
        await #expect { try await cancelling.login() } throws: { ($0 as? PluginError)?.code == .loginCancelled }
        #expect(!cancelling.isAuthenticated)
        #expect(cancelRecorder.all.last?.current == .signedOut)

        let (interrupted, _) = try provider(FakeSession(signIn: .failure(CancellationError())))
        await #expect { try await interrupted.login() } throws: { ($0 as? PluginError)?.code == .loginCancelled }
        #expect(!interrupted.isPerformingAuthorizationFlow)

        let (failing, _) = try provider(FakeSession(signIn: .failure(Boom())))
        await #expect { try await failing.login() } throws: { error in
            (error as? PluginError)?.code == .loginFailed && (error as? PluginError)?.underlying is Boom
        }
        #expect(!failing.isAuthenticated)
        #expect(!failing.isPerformingAuthorizationFlow)
    }

    @Test("parameters and configuration choose interactive or silent sign-in")
    func interactivity() async throws {
        let session = FakeSession()
        let (provider, _) = try provider(session, configuration: ["interactive": false])
        try await provider.login()
        try await provider.logout()
        try await provider.login(parameters: ["interactive": true])
        #expect(session.signInCalls == [false, true])
    }

    @Test("logout signs out and notifies; a failing sign-out still signs out locally")
    func logout() async throws {
        let session = FakeSession(stored: "t")
        let (provider, recorder) = try provider(session)
        #expect(await provider.restore())
        try await provider.logout()
        #expect(!provider.isAuthenticated)
        #expect(recorder.all.map(\.current) == [.signedIn, .signedOut])
        #expect(await provider.userToken == nil)

        session.state.withLock {
            $0.stored = "t2"; $0.signOutError = Boom()
        }
        await provider.restore()
        await #expect { try await provider.logout() } throws: { error in
            (error as? PluginError)?.code == .loginFailed && (error as? PluginError)?.underlying is Boom
        }
        #expect(!provider.isAuthenticated)
    }

    @Test("silent sign-in at launch restores the stored credential; none stored is not a failure")
    func launchRestore() async throws {
        let (stored, _) = try provider(FakeSession(stored: "saved"))
        let (empty, _) = try provider(FakeSession())
        let ran = try await StartupHookRunner(hooks: [stored, empty]).run(.launch)
        #expect(ran == ["oauth", "oauth"])
        #expect(stored.isAuthenticated)
        #expect(await stored.userToken == "saved")
        #expect(!empty.isAuthenticated)
        #expect(stored.phases == [.launch])
    }

    @Test("the user token can be set and cleared, where the configuration allows it")
    func settingTheToken() async throws {
        let session = FakeSession()
        let (provider, recorder) = try provider(session)
        #expect(provider.allowsSettingUserToken)
        try await provider.setUserToken("from-elsewhere")
        #expect(provider.isAuthenticated)
        #expect(await provider.userToken == "from-elsewhere")
        try await provider.setUserToken(nil)
        #expect(!provider.isAuthenticated)
        #expect(await provider.userToken == nil)
        #expect(recorder.all.map(\.current.isAuthenticated) == [true, false])

        session.state.withLock { $0.rejectsTokens = true }
        let rejected = await #expect(throws: PluginError.self) { try await provider.setUserToken("bad") }
        #expect(rejected?.code == .loginFailed)

        let (locked, _) = try self.provider(FakeSession(), configuration: ["allows_setting_token": false])
        #expect(!locked.allowsSettingUserToken)
        let refused = await #expect(throws: PluginError.self) { try await locked.setUserToken("x") }
        #expect(refused?.code == .notSupported)
        #expect(refused?.suggestion?.contains("allows_setting_token") == true)
    }

    @Test("a token the session can no longer give signs the provider out")
    func lostToken() async throws {
        let session = FakeSession(stored: "t")
        let (provider, _) = try provider(session)
        await provider.restore()
        session.state.withLock { $0.token = nil }
        #expect(await provider.userToken == nil)
        #expect(!provider.isAuthenticated)
    }

    @Test("a bad configuration names the key")
    func badConfiguration() throws {
        let error = #expect(throws: PluginError.self) {
            try OAuthLoginProvider(identifier: "oauth", session: FakeSession(), configuration: ["interactive": "yes"])
        }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.location == "configuration.interactive")
        let notObject = #expect(throws: PluginError.self) {
            try OAuthLoginProvider(identifier: "oauth", session: FakeSession(), configuration: [1, 2])
        }
        #expect(notObject?.code == .invalidConfiguration)
    }

    @Test("completion-handler forms deliver nil on success, the error otherwise")
    func completionForms() async throws {
        let (provider, _) = try provider(FakeSession())
        let login = await withCheckedContinuation { continuation in
            provider.login(parameters: [:]) { continuation.resume(returning: $0.map { "\($0)" }) }
        }
        #expect(login == nil)
        #expect(provider.isAuthenticated)
        let token = await withCheckedContinuation { continuation in provider.userToken { continuation.resume(returning: $0) } }
        #expect(token == "access-1")
        let setError = await withCheckedContinuation { continuation in
            provider.setUserToken("other") { continuation.resume(returning: $0.map { "\($0)" }) }
        }
        #expect(setError == nil)
        let logout = await withCheckedContinuation { continuation in
            provider.logout { continuation.resume(returning: $0.map { "\($0)" }) }
        }
        #expect(logout == nil)
        #expect(!provider.isAuthenticated)
    }

    @Test("a stream stops receiving once its reader is gone; others keep receiving")
    func unsubscribing() async throws {
        let (provider, _) = try provider(FakeSession(stored: "t"))
        let kept = provider.loginStateChanges()
        do {
            let dropped = provider.loginStateChanges()
            let reader = Task { await dropped.first(1) }
            reader.cancel()
            _ = await reader.value
        }
        await provider.restore()
        #expect(await kept.first(1).map(\.current) == [.signedIn])
    }
}

@Suite("The login state broadcaster")
struct LoginStateBroadcasterTests {
    @Test("only real changes are published, on the injected center")
    func onlyChanges() async {
        let recorder = NotificationRecorder()
        let broadcaster = LoginStateBroadcaster(provider: "p", notificationCenter: recorder.center)
        let stream = broadcaster.changes()
        #expect(broadcaster.set(.signedOut) == nil)
        #expect(broadcaster.set(.signedIn) != nil)
        broadcaster.update { $0.isAuthenticated = true }
        broadcaster.finish()
        var all: [LoginStateChange] = []
        for await change in stream { all.append(change) }
        #expect(all == [LoginStateChange(provider: "p", previous: .signedOut, current: .signedIn)])
        #expect(recorder.all == all)
    }
}
