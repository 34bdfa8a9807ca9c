@_spi(OutpostInternal) public import OutpostCore

extension LoginScreenHandling {
    /// Completion-handler form of ``register(parameters:)``: the handler receives `nil` on success.
    @discardableResult
    public func register(
        parameters: [String: JSONValue], completion: @escaping @Sendable ((any Error)?) -> Void
    ) -> Task<Void, Never> {
        completing(completion) { try await register(parameters: parameters) }
    }

    /// Completion-handler form of ``login(parameters:)``: the handler receives `nil` on success.
    @discardableResult
    public func login(parameters: [String: JSONValue], completion: @escaping @Sendable ((any Error)?) -> Void) -> Task<
        Void, Never
    > {
        completing(completion) { try await login(parameters: parameters) }
    }

    /// Completion-handler form of ``recoverPassword(parameters:)``: the handler receives `nil` on success.
    @discardableResult
    public func recoverPassword(
        parameters: [String: JSONValue], completion: @escaping @Sendable ((any Error)?) -> Void
    ) -> Task<Void, Never> {
        completing(completion) { try await recoverPassword(parameters: parameters) }
    }

    /// Completion-handler form of ``logout(parameters:)``: the handler receives `nil` on success.
    @discardableResult
    public func logout(parameters: [String: JSONValue], completion: @escaping @Sendable ((any Error)?) -> Void) -> Task<
        Void, Never
    > {
        completing(completion) { try await logout(parameters: parameters) }
    }

    /// Completion-handler form of ``loginDone(parameters:)``: the handler receives `nil` on success.
    @discardableResult
    public func loginDone(
        parameters: [String: JSONValue], completion: @escaping @Sendable ((any Error)?) -> Void
    ) -> Task<Void, Never> {
        completing(completion) { try await loginDone(parameters: parameters) }
    }

    /// Completion-handler form of ``loginCancelled(parameters:)``: the handler receives `nil` on success.
    @discardableResult
    public func loginCancelled(
        parameters: [String: JSONValue], completion: @escaping @Sendable ((any Error)?) -> Void
    ) -> Task<Void, Never> {
        completing(completion) { try await loginCancelled(parameters: parameters) }
    }
}
