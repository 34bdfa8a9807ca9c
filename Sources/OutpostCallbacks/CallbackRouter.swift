public import Foundation
import Synchronization

/// Routes incoming x-callback-urls to the targets registered for their scheme and action.
///
/// ```swift
/// let router = CallbackRouter()
/// router.register(scheme: "myapp", action: "open") { callback in ... }
/// try router.route("myapp://x-callback-url/open?x-success=other://done&id=42")
/// ```
///
/// Several schemes can share one router. Each (scheme, action) pair has one target: a closure,
/// a delegate, a notification, or an `AsyncStream`; registering the pair again replaces it.
/// Schemes compare case-insensitively, actions case-sensitively.
public final class CallbackRouter: Sendable {
    /// How the router behaves.
    public struct Configuration: Sendable {
        /// When set, a URL with a missing or unknown action that has an `x-error` is answered
        /// through it with this `errorCode` and a message naming the problem; `route` still throws.
        public var unknownActionErrorCode: String?

        /// Creates a configuration.
        public init(unknownActionErrorCode: String? = nil) {
            self.unknownActionErrorCode = unknownActionErrorCode
        }
    }

    enum Target: Sendable {
        case handler(@Sendable (Callback) -> Void)
        case delegate(WeakDelegate)
        case notification(Notification.Name, NotificationCenter)
        case stream(AsyncStream<Callback>.Continuation)
    }

    final class WeakDelegate: Sendable {
        weak let delegate: (any CallbackRouterDelegate)?
        init(_ delegate: any CallbackRouterDelegate) { self.delegate = delegate }
    }

    struct Registration: Sendable {
        var id: UInt64
        var target: Target
    }

    struct State: Sendable {
        var isEnabled = true {
            didSet { rebuildRoutes() }
        }
        var nextID: UInt64 = 0
        /// Lower-cased scheme → action → target.
        var table: [String: [String: Registration]] = [:] {
            didSet { rebuildRoutes() }
        }
        /// What ``CallbackRouter/route(_:)-(String)`` reads; rebuilt on every change.
        private(set) var routes = Routes(isEnabled: true, table: [:])

        private mutating func rebuildRoutes() {
            routes = Routes(isEnabled: isEnabled, table: table)
        }
    }

    /// An immutable snapshot of the registrations, shaped for routing: registering and removing
    /// are rare, routing is the hot path. Routing takes the lock only to retain the snapshot, then
    /// finds the scheme by comparing bytes and the action by a linear scan when there are few, so
    /// that it hashes nothing.
    final class Routes: Sendable {
        let isEnabled: Bool
        let schemes: [SchemeRoutes]

        init(isEnabled: Bool, table: [String: [String: Registration]]) {
            self.isEnabled = isEnabled
            self.schemes = table.map { SchemeRoutes(name: $0.key, actions: $0.value) }
        }

        /// The routes of the scheme spelled by `bytes` (ASCII, any case), if it is registered.
        func scheme(matching bytes: UnsafeBufferPointer<UInt8>) -> SchemeRoutes? {
            var folded: String?
            for routes in schemes {
                if let ascii = routes.asciiName {
                    guard ascii.count == bytes.count else { continue }
                    var equal = true
                    for k in 0..<ascii.count where CallbackParser.lowercased(bytes[k]) != ascii[k] {
                        equal = false
                        break
                    }
                    if equal { return routes }
                } else {
                    // A name that is not ASCII compares as a String, as a dictionary key would.
                    if folded == nil { folded = CallbackParser.lowercasedScheme(bytes) }
                    if folded == routes.name { return routes }
                }
            }
            return nil
        }
    }

    /// The actions of one scheme.
    final class SchemeRoutes: Sendable {
        /// The lower-cased scheme.
        let name: String
        /// `name`'s UTF-8 bytes when they are all ASCII, compared with an incoming scheme's bytes.
        let asciiName: [UInt8]?
        let routes: [Route]
        /// Action → route, used only when there are too many actions for a linear scan to pay.
        let index: [String: Route]?

        private static let linearLimit = 8

        init(name: String, actions table: [String: Registration]) {
            self.name = name
            let bytes = Array(name.utf8)
            self.asciiName = bytes.allSatisfy { $0 < 0x80 } ? bytes : nil
            let routes = table.map { Route(action: $0.key, target: $0.value.target) }
            self.routes = routes
            self.index =
                routes.count > Self.linearLimit
                ? Dictionary(routes.map { ($0.action, $0) }, uniquingKeysWith: { first, _ in first }) : nil
        }

        /// The route of `action` (compared as Strings, case-sensitively, as a dictionary key would).
        func route(for action: String) -> Route? {
            if let index { return index[action] }
            for route in routes where route.action == action { return route }
            return nil
        }
    }

    /// One action and its target; a closure target is also kept unwrapped, for the common case.
    final class Route: Sendable {
        let action: String
        let target: Target
        let handler: (@Sendable (Callback) -> Void)?

        init(action: String, target: Target) {
            self.action = action
            self.target = target
            if case .handler(let handler) = target { self.handler = handler } else { self.handler = nil }
        }
    }

    private let state = Mutex(State())

    /// The configuration given at creation.
    public let configuration: Configuration
    /// Opens callback URLs for the callbacks this router routes.
    public let opener: any URLOpening

    /// Creates a router.
    /// - Parameters:
    ///   - configuration: Behaviour, such as answering unknown actions.
    ///   - opener: Opens callback URLs when callbacks are answered. An app extension passes its own
    ///     (``SystemURLOpener`` is unavailable there).
    public init(configuration: Configuration = Configuration(), opener: any URLOpening) {
        self.configuration = configuration
        self.opener = opener
    }

    /// Creates a router that opens callback URLs with ``SystemURLOpener``; unavailable in app
    /// extensions, which use ``init(configuration:opener:)``.
    /// - Parameter configuration: Behaviour, such as answering unknown actions.
    @available(iOSApplicationExtension, unavailable)
    @available(macCatalystApplicationExtension, unavailable)
    @available(tvOSApplicationExtension, unavailable)
    @available(visionOSApplicationExtension, unavailable)
    public convenience init(configuration: Configuration = Configuration()) {
        self.init(configuration: configuration, opener: SystemURLOpener())
    }

    /// Whether ``route(_:)-(String)`` dispatches; when `false` it throws
    /// ``CallbackError/Code/routingDisabled``.
    public var isEnabled: Bool {
        get { state.withLock { $0.isEnabled } }
        set { state.withLock { $0.isEnabled = newValue } }
    }

    /// The schemes that have at least one action, lower-cased.
    public var schemes: Set<String> { state.withLock { Set($0.table.keys) } }

    /// Registers a closure for `action` under `scheme`. It runs on the routing thread.
    public func register(scheme: String, action: String, handler: @escaping @Sendable (Callback) -> Void) {
        _ = add(scheme: scheme, action: action, target: .handler(handler))
    }

    /// Registers a delegate (held weakly) for `action` under `scheme`.
    public func register(scheme: String, action: String, delegate: any CallbackRouterDelegate) {
        _ = add(scheme: scheme, action: action, target: .delegate(WeakDelegate(delegate)))
    }

    /// Registers a notification for `action` under `scheme`: each callback is posted as the
    /// notification's `object`.
    public func register(
        scheme: String, action: String, notification name: Notification.Name,
        center: NotificationCenter = .default
    ) {
        _ = add(scheme: scheme, action: action, target: .notification(name, center))
    }

    /// Registers `action` under `scheme` and returns its callbacks as an `AsyncStream`.
    ///
    /// The stream buffers callbacks until they are read. It finishes when the action is removed
    /// or replaced; when the consumer stops, the action is removed.
    public func callbacks(scheme: String, action: String) -> AsyncStream<Callback> {
        let (stream, continuation) = AsyncStream.makeStream(of: Callback.self)
        let id = add(scheme: scheme, action: action, target: .stream(continuation))
        let key = scheme.lowercased()
        continuation.onTermination = { [weak self] _ in
            self?.remove(key: key, action: action, onlyID: id)
        }
        return stream
    }

    /// Removes `action` from `scheme`; an AsyncStream target finishes.
    public func removeAction(_ action: String, scheme: String) {
        remove(key: scheme.lowercased(), action: action, onlyID: nil)
    }

    /// Removes every action of `scheme`.
    public func removeScheme(_ scheme: String) {
        let removed = state.withLock { $0.table.removeValue(forKey: scheme.lowercased()) }
        for registration in (removed ?? [:]).values { Self.finish(registration.target) }
    }

    private func add(scheme: String, action: String, target: Target) -> UInt64 {
        let (id, replaced): (UInt64, Registration?) = state.withLock { state in
            state.nextID += 1
            let registration = Registration(id: state.nextID, target: target)
            let replaced = state.table[scheme.lowercased(), default: [:]].updateValue(registration, forKey: action)
            return (registration.id, replaced)
        }
        if let replaced { Self.finish(replaced.target) }
        return id
    }

    private func remove(key: String, action: String, onlyID: UInt64?) {
        let removed: Registration? = state.withLock { state in
            guard let registration = state.table[key]?[action] else { return nil }
            if let onlyID, registration.id != onlyID { return nil }
            state.table[key]?[action] = nil
            if state.table[key]?.isEmpty == true { state.table[key] = nil }
            return registration
        }
        if let removed { Self.finish(removed.target) }
    }

    private static func finish(_ target: Target) {
        if case .stream(let continuation) = target { continuation.finish() }
    }
}

extension CallbackRouter {
    /// Parses `url` and hands the callback to the target of its scheme and action.
    ///
    /// Checks, in order: ``CallbackError/Code/unknownScheme``, ``CallbackError/Code/invalidHost``,
    /// ``CallbackError/Code/missingAction``, ``CallbackError/Code/unknownAction``. Never traps,
    /// whatever the text and however long. The error carries what could be parsed.
    ///
    /// - Parameter url: The URL as text, so that text Foundation's `URL` refuses still routes.
    /// - Returns: The callback that was dispatched.
    @discardableResult
    public func route(_ url: String) throws(CallbackError) -> Callback {
        let routes = state.withLock { $0.routes }
        guard routes.isEnabled else { throw CallbackError(code: .routingDisabled, url: url) }
        var matched: SchemeRoutes?
        let callback = try CallbackParser.parse(url, opener: opener) { bytes in
            matched = routes.scheme(matching: bytes)
            return matched?.name
        }
        guard !callback.action.isEmpty else {
            answerUnrouted(callback, message: "The URL names no action.")
            throw CallbackError(code: .missingAction, url: url, callback: callback)
        }
        guard let route = matched?.route(for: callback.action), dispatch(callback, to: route) else {
            answerUnrouted(callback, message: "Unknown action '\(callback.action)'.")
            throw CallbackError(code: .unknownAction, url: url, callback: callback)
        }
        return callback
    }

    /// Routes a `URL`; see ``route(_:)-(String)``.
    @discardableResult
    public func route(_ url: URL) throws(CallbackError) -> Callback {
        try route(url.absoluteString)
    }

    private func dispatch(_ callback: Callback, to route: Route) -> Bool {
        if let handler = route.handler {
            handler(callback)
            return true
        }
        switch route.target {
        case .handler(let handler):
            handler(callback)
        case .delegate(let box):
            guard let delegate = box.delegate else { return false }
            delegate.router(self, didReceive: callback)
        case .notification(let name, let center):
            center.post(name: name, object: callback)
        case .stream(let continuation):
            if case .terminated = continuation.yield(callback) { return false }
        }
        return true
    }

    /// Answers through `x-error` when configured to; opening happens in a new task.
    private func answerUnrouted(_ callback: Callback, message: String) {
        guard let code = configuration.unknownActionErrorCode, callback.errorURL != nil else { return }
        Task { await callback.fail(code: code, message: message) }
    }
}
