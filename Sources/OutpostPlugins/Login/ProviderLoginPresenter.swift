/// A ``LoginPresenting`` with no screen of its own: it signs in directly with a login provider.
/// Fits programs where the provider brings its own user interface (a browser, a device code
/// printed in a terminal) and tests.
public struct ProviderLoginPresenter: LoginPresenting {
    /// The providers, by identifier.
    public let providers: [String: any LoginProvider]
    /// The provider used when a request names none.
    public let defaultProvider: String?

    /// Creates a presenter.
    /// - Parameters:
    ///   - providers: The providers a request may name.
    ///   - defaultProvider: The identifier used when a request names none; the first provider by default.
    public init(providers: [any LoginProvider], defaultProvider: String? = nil) {
        self.providers = Dictionary(providers.map { ($0.identifier, $0) }, uniquingKeysWith: { first, _ in first })
        self.defaultProvider = defaultProvider ?? providers.first?.identifier
    }

    /// Signs in with the provider `request` names (or the default one).
    ///
    /// - Throws: ``PluginError/Code/unknownPlugin`` when there is no such provider, else what the
    ///   provider's ``LoginProvider/login(parameters:)`` throws.
    public func presentLogin(_ request: LoginRequest, screen: String) async throws {
        guard let identifier = request.provider ?? defaultProvider, let provider = providers[identifier] else {
            let name = request.provider ?? "(default)"
            throw PluginError(
                .unknownPlugin, "No login provider '\(name)' to sign in with for screen '\(screen)'",
                suggestion: "Give the presenter that provider; it has: \(providers.keys.sorted().joined(separator: ", "))",
                plugin: request.provider, screen: screen)
        }
        try await provider.login(parameters: request.parameters)
    }
}
