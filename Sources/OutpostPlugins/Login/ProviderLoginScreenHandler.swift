@_spi(OutpostInternal) public import OutpostCore

/// A ``LoginScreenHandling`` over a ``LoginProvider``: what a sign-in screen built elsewhere calls.
///
/// `login` and `logout` go to the provider and throw what it throws. `register` and
/// `recoverPassword` go to the closures given, and throw ``PluginError/Code/notSupported`` when
/// none was. `loginDone` succeeds when the provider reports a signed-in user and throws
/// ``PluginError/Code/notSignedIn`` otherwise; `loginCancelled` always succeeds (there is nothing to undo).
public struct ProviderLoginScreenHandler: LoginScreenHandling {
    /// A step the provider itself does not offer. Throw a ``PluginError`` whose message the screen
    /// can show.
    public typealias Step = @Sendable (_ parameters: [String: JSONValue]) async throws -> Void

    /// The provider the screen signs in with.
    public let provider: any LoginProvider
    private let registerStep: Step?
    private let recoverPasswordStep: Step?

    /// Creates a handler.
    /// - Parameters:
    ///   - provider: The provider to sign in and out with.
    ///   - register: Creates an account; without it `register` throws ``PluginError/Code/notSupported``.
    ///   - recoverPassword: Starts a password recovery; without it `recoverPassword` throws
    ///     ``PluginError/Code/notSupported``.
    public init(provider: any LoginProvider, register: Step? = nil, recoverPassword: Step? = nil) {
        self.provider = provider
        self.registerStep = register
        self.recoverPasswordStep = recoverPassword
    }

    public func register(parameters: [String: JSONValue]) async throws {
        try await run(registerStep, parameters, missing: "Creating an account", suggestion: "Sign in with an existing account")
    }

    public func login(parameters: [String: JSONValue]) async throws {
        try await provider.login(parameters: parameters)
    }

    public func recoverPassword(parameters: [String: JSONValue]) async throws {
        try await run(
            recoverPasswordStep, parameters, missing: "Password recovery", suggestion: "Contact support to reset the password")
    }

    public func logout(parameters: [String: JSONValue]) async throws {
        try await provider.logout()
    }

    public func loginDone(parameters: [String: JSONValue]) async throws {
        guard provider.isAuthenticated else {
            throw PluginError(
                .notSignedIn, "Nobody is signed in with '\(provider.identifier)' yet",
                suggestion: "Finish signing in, then try again", plugin: provider.identifier)
        }
    }

    public func loginCancelled(parameters: [String: JSONValue]) async throws {}

    /// Runs `step`, or throws ``PluginError/Code/notSupported`` saying that `what` is not available.
    private func run(_ step: Step?, _ parameters: [String: JSONValue], missing what: String, suggestion: String) async throws {
        guard let step else {
            throw PluginError(
                .notSupported, "\(what) is not available with '\(provider.identifier)'", suggestion: suggestion,
                plugin: provider.identifier)
        }
        try await step(parameters)
    }
}
