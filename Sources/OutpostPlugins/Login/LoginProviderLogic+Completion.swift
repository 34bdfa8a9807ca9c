@_spi(OutpostInternal) public import OutpostCore

extension LoginProviderLogic {
    /// The completion handler of the callback forms: `(success, errorMessage)`.
    public typealias LogicCompletion = @Sendable (_ success: Bool, _ errorMessage: String?) -> Void

    /// Completion-handler form of ``register(parameters:)``.
    @discardableResult
    public func register(parameters: [String: JSONValue], completion: @escaping LogicCompletion) -> Task<Void, Never> {
        Self.finish(completion) { await register(parameters: parameters) }
    }

    /// Completion-handler form of ``login(parameters:)``.
    @discardableResult
    public func login(parameters: [String: JSONValue], completion: @escaping LogicCompletion) -> Task<Void, Never> {
        Self.finish(completion) { await login(parameters: parameters) }
    }

    /// Completion-handler form of ``recoverPassword(parameters:)``.
    @discardableResult
    public func recoverPassword(parameters: [String: JSONValue], completion: @escaping LogicCompletion) -> Task<Void, Never> {
        Self.finish(completion) { await recoverPassword(parameters: parameters) }
    }

    /// Completion-handler form of ``logout(parameters:)``.
    @discardableResult
    public func logout(parameters: [String: JSONValue], completion: @escaping LogicCompletion) -> Task<Void, Never> {
        Self.finish(completion) { await logout(parameters: parameters) }
    }

    /// Completion-handler form of ``loginDone(parameters:)``.
    @discardableResult
    public func loginDone(parameters: [String: JSONValue], completion: @escaping LogicCompletion) -> Task<Void, Never> {
        Self.finish(completion) { await loginDone(parameters: parameters) }
    }

    /// Completion-handler form of ``loginCancelled(parameters:)``.
    @discardableResult
    public func loginCancelled(parameters: [String: JSONValue], completion: @escaping LogicCompletion) -> Task<Void, Never> {
        Self.finish(completion) { await loginCancelled(parameters: parameters) }
    }

    private static func finish(
        _ completion: @escaping LogicCompletion, _ step: @escaping @Sendable () async -> LoginLogicResult
    ) -> Task<Void, Never> {
        Task {
            let result = await step()
            completion(result.success, result.errorMessage)
        }
    }
}
