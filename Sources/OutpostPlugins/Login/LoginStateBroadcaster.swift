public import Foundation
import Synchronization

/// Keeps a login provider's ``LoginState`` and tells observers when it changes: through
/// `AsyncStream`s and through ``Foundation/NSNotification/Name/outpostLoginStateDidChange`` on a
/// notification center. Build a ``LoginProvider`` on it to get both for free.
///
/// Changes are delivered to streams in the order they were made. The notification is posted
/// synchronously on the thread that made the change, after the state was updated, so an observer
/// reading the provider sees the new state.
public final class LoginStateBroadcaster: Sendable {
    private struct State {
        var current: LoginState
        var nextID = 0
        var continuations: [Int: AsyncStream<LoginStateChange>.Continuation] = [:]
    }

    /// The identifier of the provider, put in every change.
    public let provider: String
    /// Where the notifications are posted.
    public let notificationCenter: NotificationCenter
    private let state: Mutex<State>

    /// Creates a broadcaster.
    /// - Parameters:
    ///   - provider: The provider's identifier.
    ///   - initial: The state to start from.
    ///   - notificationCenter: Where to post ``Foundation/NSNotification/Name/outpostLoginStateDidChange``.
    public init(provider: String, initial: LoginState = .signedOut, notificationCenter: NotificationCenter = .default) {
        self.provider = provider
        self.notificationCenter = notificationCenter
        self.state = Mutex(State(current: initial))
    }

    deinit {
        finish()
    }

    /// The current state.
    public var current: LoginState { state.withLock { $0.current } }

    /// Changes the state; observers hear of it only when it actually changed.
    /// - Returns: The change, or `nil` when the state stayed the same.
    @discardableResult
    public func update(_ change: (inout LoginState) -> Void) -> LoginStateChange? {
        let made: LoginStateChange? = state.withLock { state in
            var next = state.current
            change(&next)
            guard next != state.current else { return nil }
            let made = LoginStateChange(provider: provider, previous: state.current, current: next)
            state.current = next
            for continuation in state.continuations.values { continuation.yield(made) }
            return made
        }
        if let made {
            notificationCenter.post(
                name: .outpostLoginStateDidChange, object: provider, userInfo: [LoginStateChange.userInfoKey: made])
        }
        return made
    }

    /// Sets the state; see ``update(_:)``.
    @discardableResult
    public func set(_ new: LoginState) -> LoginStateChange? {
        update { $0 = new }
    }

    /// The changes from now on, buffered until read. Stop reading (or cancel the reading task) to
    /// unsubscribe.
    public func changes() -> AsyncStream<LoginStateChange> {
        let (stream, continuation) = AsyncStream.makeStream(of: LoginStateChange.self)
        let id = state.withLock { state in
            state.nextID += 1
            state.continuations[state.nextID] = continuation
            return state.nextID
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    /// Finishes every stream handed out so far.
    public func finish() {
        let continuations = state.withLock { state in
            defer { state.continuations = [:] }
            return Array(state.continuations.values)
        }
        for continuation in continuations { continuation.finish() }
    }
}
