@_spi(OutpostInternal) public import OutpostCore

/// ``LoginProviderLogic`` over a ``LoginProvider``: what a sign-in screen built elsewhere calls.
///
/// `login` and `logout` go to the provider. `register` and `recoverPassword` go to the closures
/// given, and fail with a message when none was. `loginDone` succeeds when the provider reports a
/// signed-in user; `loginCancelled` always succeeds (there is nothing to undo).
public struct ProviderLoginLogic: LoginProviderLogic {
    /// A step the provider itself does not offer.
    public typealias Step = @Sendable (_ parameters: [String: JSONValue]) async -> LoginLogicResult

    /// The provider the logic signs in with.
    public let provider: any LoginProvider
    private let registerStep: Step?
    private let recoverPasswordStep: Step?

    /// Creates the logic.
    /// - Parameters:
    ///   - provider: The provider to sign in and out with.
    ///   - register: Creates an account; without it `register` fails with a message.
    ///   - recoverPassword: Starts a password recovery; without it `recoverPassword` fails with a message.
    public init(provider: any LoginProvider, register: Step? = nil, recoverPassword: Step? = nil) {
        self.provider = provider
        self.registerStep = register
        self.recoverPasswordStep = recoverPassword
    }

    public func register(parameters: [String: JSONValue]) async -> LoginLogicResult {
        guard let registerStep else {
            return .failed("Creating an account is not available with '\(provider.identifier)'; sign in with an existing account")
        }
        return await registerStep(parameters)
    }

    public func login(parameters: [String: JSONValue]) async -> LoginLogicResult {
        Self.result(await provider.login(parameters: parameters), doing: "Signing in")
    }

    public func recoverPassword(parameters: [String: JSONValue]) async -> LoginLogicResult {
        guard let recoverPasswordStep else {
            return .failed("Password recovery is not available with '\(provider.identifier)'; contact support to reset it")
        }
        return await recoverPasswordStep(parameters)
    }

    public func logout(parameters: [String: JSONValue]) async -> LoginLogicResult {
        Self.result(await provider.logout(), doing: "Signing out")
    }

    public func loginDone(parameters: [String: JSONValue]) async -> LoginLogicResult {
        provider.isAuthenticated ? .succeeded : .failed("Nobody is signed in yet; finish signing in, then try again")
    }

    public func loginCancelled(parameters: [String: JSONValue]) async -> LoginLogicResult {
        .succeeded
    }

    private static func result(_ outcome: LoginOutcome, doing what: String) -> LoginLogicResult {
        switch outcome.status {
        case .completed: return .succeeded
        case .cancelled: return .failed("\(what) was cancelled")
        case .failed: return .failed(outcome.error?.message ?? "\(what) failed; try again")
        }
    }
}
