public import Foundation
@_spi(OutpostInternal) import OutpostSupport
import Synchronization

/// Calls other apps over x-callback-url and awaits their answers.
///
/// ```swift
/// let router = CallbackRouter()
/// let caller = try CallbackCaller(
///     configuration: .init(scheme: "myapp", source: "My App"), router: router)
/// let result = try await caller.call(scheme: "otherapp", action: "translate",
///                                    parameters: [("text", "hello")])
/// ```
///
/// The request carries `x-source` and `x-success`/`x-error`/`x-cancel` URLs of the form
/// `myapp://x-callback-url/<replyAction>/success?requestID=ID`; the caller registers those
/// actions on the router, so routing the other app's answer resumes the matching `call`.
/// With a store file, pending calls survive a restart: an answer whose `call` is no longer
/// waiting (after a restart or a timeout) comes out of ``lateReplies`` until it expires.
public final class CallbackCaller: Sendable {
    /// How the caller builds requests and waits.
    public struct Configuration: Sendable {
        /// Our own URL scheme, the one the other app answers to.
        public var scheme: String
        /// Our name, sent as `x-source`.
        public var source: String
        /// The action prefix of the answers: `<replyAction>/success`, `/error`, `/cancel`.
        public var replyAction: String
        /// How long ``CallbackCaller/call(scheme:action:parameters:timeout:)`` waits by default.
        public var timeout: Duration
        /// How long a pending call stays recognisable in the store.
        public var expiry: Duration
        /// A JSON file (created with mode 0600) for pending calls; `nil` keeps them in memory.
        public var storeURL: URL?

        /// Creates a configuration.
        public init(
            scheme: String, source: String, replyAction: String = "outpost-reply",
            timeout: Duration = .seconds(300), expiry: Duration = .seconds(86_400), storeURL: URL? = nil
        ) {
            self.scheme = scheme
            self.source = source
            self.replyAction = replyAction
            self.timeout = timeout
            self.expiry = expiry
            self.storeURL = storeURL
        }
    }

    /// An answer from another app.
    public enum Outcome: Sendable, Hashable {
        /// `x-success`, with the answer's parameters (without `requestID`).
        case success([String: String])
        /// `x-error`, with the answer's `errorCode` and `errorMessage`.
        case error(code: String?, message: String?)
        /// `x-cancel`.
        case cancel
    }

    /// An answer that arrived when no `call` was waiting for it: after a restart or a timeout.
    public struct LateReply: Sendable, Hashable {
        /// The request's id.
        public var requestID: String
        /// The scheme of the app that was called.
        public var scheme: String
        /// The action that was called.
        public var action: String
        /// What the other app answered.
        public var outcome: Outcome
    }

    private enum Slot {
        case waiting(CheckedContinuation<Outcome, any Error>?)
        case finished(Result<Outcome, any Error>)
    }

    /// The configuration given at creation.
    public let configuration: Configuration
    /// Answers nobody was waiting for; see ``LateReply``. Read it from one task.
    public let lateReplies: AsyncStream<LateReply>

    private let lateContinuation: AsyncStream<LateReply>.Continuation
    private let opener: any URLOpening
    private let store: PendingCallStore?
    private let slots = Mutex<[String: Slot]>([:])

    /// Creates a caller and registers its answer actions on `router`.
    ///
    /// With a ``Configuration/storeURL``, the store file is read on the calling thread; from async
    /// code, ``opening(configuration:router:)`` reads it off Swift's cooperative pool instead.
    ///
    /// - Throws: ``CallbackError/Code/storeFailed`` when the store file exists but cannot be read.
    public convenience init(configuration: Configuration, router: CallbackRouter) throws(CallbackError) {
        let store = try configuration.storeURL.map { url throws(CallbackError) in try PendingCallStore(fileURL: url) }
        self.init(configuration: configuration, router: router, store: store)
    }

    /// Creates a caller like ``init(configuration:router:)``, reading the store file (if any) on the
    /// client modules' blocking threads, so that a slow disk never holds a thread of Swift's
    /// cooperative pool.
    ///
    /// - Throws: ``CallbackError/Code/storeFailed`` when the store file exists but cannot be read.
    public static func opening(configuration: Configuration, router: CallbackRouter) async throws(CallbackError)
        -> CallbackCaller
    {
        let store: PendingCallStore?
        if let url = configuration.storeURL {
            store = try await PendingCallStore.opening(fileURL: url)
        } else {
            store = nil
        }
        return CallbackCaller(configuration: configuration, router: router, store: store)
    }

    private init(configuration: Configuration, router: CallbackRouter, store: PendingCallStore?) {
        self.configuration = configuration
        self.opener = router.opener
        self.store = store
        (lateReplies, lateContinuation) = AsyncStream.makeStream(of: LateReply.self)
        for kind in ["success", "error", "cancel"] {
            router.register(scheme: configuration.scheme, action: "\(configuration.replyAction)/\(kind)") {
                [weak self] callback in
                self?.receive(callback, kind: kind)
            }
        }
    }

    deinit {
        lateContinuation.finish()
    }

    /// The ids of the calls in the store that still wait for an answer.
    public var pendingRequestIDs: [String] { store?.all.map(\.id) ?? [] }

    /// Waits until the store file holds every change made so far (it is rewritten in the background).
    func flushStore() async throws(CallbackError) {
        try await store?.flush()
    }

    /// The URL that calls `action` of the app with `scheme`, answering to our scheme.
    public func requestURL(
        scheme: String, action: String, parameters: [(name: String, value: String)], requestID: String
    ) -> String {
        func reply(_ kind: String) -> String {
            "\(configuration.scheme)://x-callback-url/\(PercentEncoding.encodePath(configuration.replyAction))/\(kind)?requestID=\(PercentEncoding.encode(requestID))"
        }
        let all =
            parameters + [
                ("x-source", configuration.source), ("x-success", reply("success")),
                ("x-error", reply("error")), ("x-cancel", reply("cancel")),
            ]
        return CallbackAnswer.appending(all, to: "\(scheme)://x-callback-url/\(PercentEncoding.encodePath(action))")
    }

    /// Calls `action` of the app with `scheme` and waits for its answer.
    ///
    /// - Parameters:
    ///   - scheme: The URL scheme of the app to call, e.g. `notes`.
    ///   - action: The action to perform, the path after `x-callback-url/`.
    ///   - parameters: Extra query parameters for the action, in order.
    ///   - timeout: How long to wait; ``Configuration/timeout`` when `nil`.
    /// - Returns: The parameters of a success answer (without `requestID`).
    /// - Throws: ``CallbackError`` with ``CallbackError/Code/remoteError`` (with the remote code
    ///   and message), ``CallbackError/Code/remoteCancelled``, ``CallbackError/Code/timedOut``,
    ///   ``CallbackError/Code/cannotOpen`` or ``CallbackError/Code/storeFailed``; or
    ///   `CancellationError` when the task is cancelled.
    public func call(
        scheme: String, action: String, parameters: [(name: String, value: String)] = [],
        timeout: Duration? = nil
    ) async throws -> [String: String] {
        try Task.checkCancellation()
        let id = UUID().uuidString
        let now = Date()
        try await store?.insert(
            PendingCall(
                id: id, scheme: scheme, action: action, createdAt: now,
                expiresAt: now.addingTimeInterval(configuration.expiry.inSeconds)))
        slots.withLock { $0[id] = .waiting(nil) }
        let text = requestURL(scheme: scheme, action: action, parameters: parameters, requestID: id)
        guard let url = URL(string: text), await opener.open(url) else {
            _ = slots.withLock { $0.removeValue(forKey: id) }
            store?.remove(id)
            throw CallbackError(code: .cannotOpen, url: text)
        }
        let limit = timeout ?? configuration.timeout
        let timer = Task { [weak self] in
            do { try await Task.sleep(for: limit) } catch { return }
            self?.finish(id, with: .failure(CallbackError(code: .timedOut, url: text)))
        }
        defer { timer.cancel() }
        let outcome: Outcome
        do {
            outcome = try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Outcome, any Error>) in
                    let ready: Result<Outcome, any Error>? = slots.withLock { slots in
                        switch slots[id] {
                        case .finished(let result):
                            slots[id] = nil
                            return result
                        case .waiting, nil:
                            slots[id] = .waiting(continuation)
                            return nil
                        }
                    }
                    if let ready { continuation.resume(with: ready) }
                }
            } onCancel: {
                self.finish(id, with: .failure(CancellationError()))
            }
        } catch is CancellationError {
            store?.remove(id)
            throw CancellationError()
        }
        switch outcome {
        case .success(let parameters):
            return parameters
        case .error(let code, let message):
            throw CallbackError(code: .remoteError, url: text, remoteCode: code, remoteMessage: message)
        case .cancel:
            throw CallbackError(code: .remoteCancelled, url: text)
        }
    }

    /// Resumes the waiting `call` for `id`; false when none waits for it.
    @discardableResult
    private func finish(_ id: String, with result: Result<Outcome, any Error>) -> Bool {
        let (found, continuation): (Bool, CheckedContinuation<Outcome, any Error>?) = slots.withLock { slots in
            switch slots[id] {
            case .waiting(let continuation?):
                slots[id] = nil
                return (true, continuation)
            case .waiting(nil):
                slots[id] = .finished(result)
                return (true, nil)
            case .finished:
                return (true, nil)
            case nil:
                return (false, nil)
            }
        }
        continuation?.resume(with: result)
        return found
    }

    /// Handles an answer routed to one of our reply actions.
    private func receive(_ callback: Callback, kind: String) {
        guard let id = callback.parameters["requestID"] else { return }
        let outcome: Outcome
        switch kind {
        case "success":
            var parameters = callback.parameters
            parameters["requestID"] = nil
            outcome = .success(parameters)
        case "error":
            outcome = .error(code: callback.parameters["errorCode"], message: callback.parameters["errorMessage"])
        default:
            outcome = .cancel
        }
        let stored = store?.remove(id)
        if finish(id, with: .success(outcome)) { return }
        guard let stored, stored.expiresAt > Date() else { return }
        lateContinuation.yield(
            LateReply(requestID: id, scheme: stored.scheme, action: stored.action, outcome: outcome))
    }
}
