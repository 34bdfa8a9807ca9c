import Foundation
@_spi(OutpostInternal) public import OutpostCore

/// Completion-handler forms of the ``Authenticator`` operations, for callers that are not async.
///
/// Each starts a task and returns its `OperationHandle`; the completion handler runs once, on that
/// task, with the result or an ``AuthError`` (``AuthError/Code/cancelled`` after `cancel()`; any other
/// error as the ``AuthError/underlying`` of an ``AuthError/Code/requestFailed``).
extension Authenticator {
    /// Completion-handler form of ``credential()``.
    @discardableResult
    public nonisolated func credential(completion: @escaping @Sendable (Result<Credential?, AuthError>) -> Void)
        -> OperationHandle
    {
        Self.run(completion) { try await self.credential() }
    }

    /// Completion-handler form of ``validCredential()``.
    @discardableResult
    public nonisolated func validCredential(completion: @escaping @Sendable (Result<Credential?, AuthError>) -> Void)
        -> OperationHandle
    {
        Self.run(completion) { try await self.validCredential() }
    }

    /// Completion-handler form of ``refresh()``.
    @discardableResult
    public nonisolated func refresh(completion: @escaping @Sendable (Result<Credential, AuthError>) -> Void)
        -> OperationHandle
    {
        Self.run(completion) { try await self.refresh() }
    }

    /// Completion-handler form of ``signInWithBrowser(scopes:)``.
    @discardableResult
    public nonisolated func signInWithBrowser(
        scopes: [String]? = nil, completion: @escaping @Sendable (Result<Credential, AuthError>) -> Void
    ) -> OperationHandle {
        Self.run(completion) { try await self.signInWithBrowser(scopes: scopes) }
    }

    /// Completion-handler form of ``signIn(username:password:scopes:)``.
    @discardableResult
    public nonisolated func signIn(
        username: String, password: String, scopes: [String]? = nil,
        completion: @escaping @Sendable (Result<Credential, AuthError>) -> Void
    ) -> OperationHandle {
        Self.run(completion) { try await self.signIn(username: username, password: password, scopes: scopes) }
    }

    /// Completion-handler form of ``signInWithClientCredentials(scopes:)``.
    @discardableResult
    public nonisolated func signInWithClientCredentials(
        scopes: [String]? = nil, completion: @escaping @Sendable (Result<Credential, AuthError>) -> Void
    ) -> OperationHandle {
        Self.run(completion) { try await self.signInWithClientCredentials(scopes: scopes) }
    }

    /// Completion-handler form of ``signInWithDeviceCode(scopes:onUserCode:)``.
    @discardableResult
    public nonisolated func signInWithDeviceCode(
        scopes: [String]? = nil, onUserCode: @escaping @Sendable (DeviceCode) -> Void,
        completion: @escaping @Sendable (Result<Credential, AuthError>) -> Void
    ) -> OperationHandle {
        Self.run(completion) { try await self.signInWithDeviceCode(scopes: scopes, onUserCode: { onUserCode($0) }) }
    }

    /// Completion-handler form of ``signIn(provider:data:)``.
    @discardableResult
    public nonisolated func signIn(
        provider: String, data: JSONValue, completion: @escaping @Sendable (Result<Credential, AuthError>) -> Void
    ) -> OperationHandle {
        Self.run(completion) { try await self.signIn(provider: provider, data: data) }
    }

    /// Completion-handler form of ``setCredential(_:)``.
    @discardableResult
    public nonisolated func setCredential(
        _ credential: Credential?, completion: @escaping @Sendable (Result<Void, AuthError>) -> Void
    ) -> OperationHandle {
        Self.run(completion) { try await self.setCredential(credential) }
    }

    /// Completion-handler form of ``signOut(revoke:endBrowserSession:)``.
    @discardableResult
    public nonisolated func signOut(
        revoke: Bool = true, endBrowserSession: Bool = false,
        completion: @escaping @Sendable (Result<Void, AuthError>) -> Void
    ) -> OperationHandle {
        Self.run(completion) { try await self.signOut(revoke: revoke, endBrowserSession: endBrowserSession) }
    }

    private static func run<Output: Sendable>(
        _ completion: @escaping @Sendable (Result<Output, AuthError>) -> Void,
        _ body: @escaping @Sendable () async throws -> Output
    ) -> OperationHandle {
        OperationHandle.start(completion, mapError: authError, body)
    }

    /// The error a completion handler receives: an ``AuthError`` as it is, a cancellation as
    /// ``AuthError/Code/cancelled``, anything else wrapped in ``AuthError/Code/requestFailed``.
    private static func authError(_ error: any Error) -> AuthError {
        if let error = error as? AuthError { return error }
        if error is CancellationError || Task.isCancelled {
            return AuthError(.cancelled, "The operation was cancelled", underlying: error)
        }
        return AuthError(.requestFailed, "The operation failed: \(error)", underlying: error)
    }
}
