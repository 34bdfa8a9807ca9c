@_spi(OutpostInternal) import OutpostCore
import OutpostPlugins
import Testing

@Suite("Login provider logic")
struct LoginLogicTests {
    @Test("login, loginDone, logout go to the provider; failures come back as messages")
    func overProvider() async throws {
        let session = FakeSession()
        let provider = try OAuthLoginProvider(
            identifier: "oauth", session: session, notificationCenter: NotificationRecorder().center)
        let logic = ProviderLoginLogic(provider: provider)
        #expect(await logic.loginDone(parameters: [:]).success == false)
        #expect(await logic.login(parameters: [:]) == .succeeded)
        #expect(await logic.loginDone(parameters: [:]) == .succeeded)
        #expect(await logic.loginCancelled(parameters: [:]) == .succeeded)
        #expect(await logic.logout(parameters: [:]) == .succeeded)
        #expect(!provider.isAuthenticated)

        session.state.withLock { $0.signInResult = .success(false) }
        let cancelled = await logic.login(parameters: [:])
        #expect(!cancelled.success)
        #expect(cancelled.errorMessage?.contains("cancelled") == true)

        session.state.withLock { $0.signInResult = .failure(Boom()) }
        let failed = await logic.login(parameters: [:])
        #expect(!failed.success)
        #expect(failed.errorMessage?.contains("oauth") == true)
    }

    @Test("register and recoverPassword use the steps given, or say they are not available")
    func optionalSteps() async throws {
        let provider = try OAuthLoginProvider(
            identifier: "oauth", session: FakeSession(), notificationCenter: NotificationRecorder().center)
        let bare = ProviderLoginLogic(provider: provider)
        #expect(await bare.register(parameters: [:]).errorMessage?.contains("not available") == true)
        #expect(await bare.recoverPassword(parameters: [:]).errorMessage?.contains("not available") == true)

        let full = ProviderLoginLogic(
            provider: provider,
            register: { parameters in parameters["username"] == "ada" ? .succeeded : .failed("Choose a username") },
            recoverPassword: { _ in .succeeded })
        #expect(await full.register(parameters: ["username": "ada"]) == .succeeded)
        #expect(await full.register(parameters: [:]) == .failed("Choose a username"))
        #expect(await full.recoverPassword(parameters: ["email": "ada@example.com"]) == .succeeded)
    }

    @Test("completion-handler forms finish with (success, error message)")
    func completionForms() async throws {
        let provider = try OAuthLoginProvider(
            identifier: "oauth", session: FakeSession(), notificationCenter: NotificationRecorder().center)
        let logic = ProviderLoginLogic(provider: provider)
        let registered = await withCheckedContinuation { continuation in
            logic.register(parameters: [:]) { success, message in continuation.resume(returning: (success, message)) }
        }
        #expect(registered.0 == false)
        #expect(registered.1 != nil)
        let login = await withCheckedContinuation { continuation in
            logic.login(parameters: [:]) { success, message in continuation.resume(returning: (success, message)) }
        }
        #expect(login.0 && login.1 == nil)
        for step in [logic.loginDone, logic.loginCancelled, logic.logout, logic.recoverPassword]
            as [@Sendable ([String: JSONValue], @escaping @Sendable (Bool, String?) -> Void) -> Task<Void, Never>]
        {
            _ = await withCheckedContinuation { continuation in
                _ = step([:]) { _, _ in continuation.resume() }
            }
        }
        #expect(!provider.isAuthenticated)
    }
}
