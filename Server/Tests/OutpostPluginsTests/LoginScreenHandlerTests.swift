@_spi(OutpostInternal) import OutpostCore
import OutpostPlugins
import Testing

@Suite("Login screen handler over a provider")
struct LoginScreenHandlerTests {
    @Test("login, loginDone, logout go to the provider; failures are thrown as PluginErrors")
    func overProvider() async throws {
        let session = FakeSession()
        let provider = try OAuthLoginProvider(
            identifier: "oauth", session: session, notificationCenter: NotificationRecorder().center)
        let handler = ProviderLoginScreenHandler(provider: provider)
        await #expect { try await handler.loginDone(parameters: [:]) } throws: { ($0 as? PluginError)?.code == .notSignedIn }
        try await handler.login(parameters: [:])
        try await handler.loginDone(parameters: [:])
        try await handler.loginCancelled(parameters: [:])
        #expect(provider.isAuthenticated)
        try await handler.logout(parameters: [:])
        #expect(!provider.isAuthenticated)

        session.state.withLock { $0.signInResult = .success(false) }
        await #expect { try await handler.login(parameters: [:]) } throws: { error in
            let error = error as? PluginError
            return error?.code == .loginCancelled && error?.message.contains("cancelled") == true
        }

        session.state.withLock { $0.signInResult = .failure(Boom()) }
        await #expect { try await handler.login(parameters: [:]) } throws: { error in
            let error = error as? PluginError
            return error?.code == .loginFailed && error?.message.contains("oauth") == true && error?.underlying is Boom
        }
    }

    @Test("register and recoverPassword use the steps given, or throw notSupported")
    func optionalSteps() async throws {
        let provider = try OAuthLoginProvider(
            identifier: "oauth", session: FakeSession(), notificationCenter: NotificationRecorder().center)
        let bare = ProviderLoginScreenHandler(provider: provider)
        await #expect { try await bare.register(parameters: [:]) } throws: { error in
            (error as? PluginError)?.code == .notSupported && (error as? PluginError)?.message.contains("not available") == true
        }
        await #expect { try await bare.recoverPassword(parameters: [:]) } throws: { error in
            (error as? PluginError)?.code == .notSupported && (error as? PluginError)?.plugin == "oauth"
        }

        let full = ProviderLoginScreenHandler(
            provider: provider,
            register: { parameters in
                guard parameters["username"] == "ada" else { throw PluginError(.invalidConfiguration, "Choose a username") }
            },
            recoverPassword: { _ in })
        try await full.register(parameters: ["username": "ada"])
        await #expect { try await full.register(parameters: [:]) } throws: {
            ($0 as? PluginError)?.message == "Choose a username"
        }
        try await full.recoverPassword(parameters: ["email": "ada@example.com"])
    }

    @Test("completion-handler forms finish with nil on success and the error otherwise")
    func completionForms() async throws {
        let provider = try OAuthLoginProvider(
            identifier: "oauth", session: FakeSession(), notificationCenter: NotificationRecorder().center)
        let handler = ProviderLoginScreenHandler(provider: provider)
        let registered = await withCheckedContinuation { continuation in
            handler.register(parameters: [:]) { continuation.resume(returning: $0 as? PluginError) }
        }
        #expect(registered?.code == .notSupported)
        let login = await withCheckedContinuation { continuation in
            handler.login(parameters: [:]) { continuation.resume(returning: $0 == nil) }
        }
        #expect(login)
        #expect(provider.isAuthenticated)
        for step in [handler.loginDone, handler.loginCancelled, handler.logout]
            as [@Sendable ([String: JSONValue], @escaping @Sendable ((any Error)?) -> Void) -> Task<Void, Never>]
        {
            let failure = await withCheckedContinuation { continuation in
                _ = step([:]) { continuation.resume(returning: $0.map { "\($0)" }) }
            }
            #expect(failure == nil)
        }
        #expect(!provider.isAuthenticated)
    }
}
