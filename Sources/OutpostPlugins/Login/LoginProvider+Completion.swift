@_spi(OutpostInternal) public import OutpostCore

extension LoginProvider {
    /// Completion-handler form of ``login(parameters:)``. The handler runs on an arbitrary thread.
    /// - Returns: The task doing the work; cancel it to give the login up.
    @discardableResult
    public func login(
        parameters: [String: JSONValue] = [:], completion: @escaping @Sendable (LoginOutcome) -> Void
    ) -> Task<Void, Never> {
        Task { completion(await login(parameters: parameters)) }
    }

    /// Completion-handler form of ``logout()``. The handler runs on an arbitrary thread.
    @discardableResult
    public func logout(completion: @escaping @Sendable (LoginOutcome) -> Void) -> Task<Void, Never> {
        Task { completion(await logout()) }
    }

    /// Completion-handler form of ``userToken``.
    @discardableResult
    public func userToken(completion: @escaping @Sendable (String?) -> Void) -> Task<Void, Never> {
        Task { completion(await userToken) }
    }

    /// Completion-handler form of ``setUserToken(_:)``: the handler receives `nil` on success.
    @discardableResult
    public func setUserToken(_ token: String?, completion: @escaping @Sendable ((any Error)?) -> Void) -> Task<Void, Never> {
        Task {
            do {
                try await setUserToken(token)
                completion(nil)
            } catch {
                completion(error)
            }
        }
    }
}
