@_spi(OutpostInternal) public import OutpostCore

extension LoginProvider {
    /// Completion-handler form of ``login(parameters:)``: the handler receives `nil` on success. It
    /// runs on an arbitrary thread.
    /// - Returns: The task doing the work; cancel it to give the login up.
    @discardableResult
    public func login(
        parameters: [String: JSONValue] = [:], completion: @escaping @Sendable ((any Error)?) -> Void
    ) -> Task<Void, Never> {
        completing(completion) { try await login(parameters: parameters) }
    }

    /// Completion-handler form of ``logout()``: the handler receives `nil` on success. It runs on an
    /// arbitrary thread.
    @discardableResult
    public func logout(completion: @escaping @Sendable ((any Error)?) -> Void) -> Task<Void, Never> {
        completing(completion) { try await logout() }
    }

    /// Completion-handler form of ``userToken``.
    @discardableResult
    public func userToken(completion: @escaping @Sendable (String?) -> Void) -> Task<Void, Never> {
        Task { completion(await userToken) }
    }

    /// Completion-handler form of ``setUserToken(_:)``: the handler receives `nil` on success.
    @discardableResult
    public func setUserToken(_ token: String?, completion: @escaping @Sendable ((any Error)?) -> Void) -> Task<Void, Never> {
        completing(completion) { try await setUserToken(token) }
    }
}

/// Runs `work` in a task and hands its error, or `nil` on success, to `completion`: the body of every
/// completion-handler form of the module's login steps.
func completing(
    _ completion: @escaping @Sendable ((any Error)?) -> Void, _ work: @escaping @Sendable () async throws -> Void
) -> Task<Void, Never> {
    Task {
        do {
            try await work()
            completion(nil)
        } catch {
            completion(error)
        }
    }
}
