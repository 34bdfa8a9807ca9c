public import Foundation
@_spi(OutpostInternal) public import OutpostCore

/// What a login provider knows about its user at one moment.
public struct LoginState: Sendable, Hashable, CustomStringConvertible {
    /// A user is signed in.
    public var isAuthenticated: Bool
    /// A login (an authorization flow) is under way.
    public var isPerformingAuthorizationFlow: Bool

    /// Creates a state.
    public init(isAuthenticated: Bool, isPerformingAuthorizationFlow: Bool = false) {
        self.isAuthenticated = isAuthenticated
        self.isPerformingAuthorizationFlow = isPerformingAuthorizationFlow
    }

    /// Nobody signed in, nothing under way.
    public static let signedOut = LoginState(isAuthenticated: false)
    /// Signed in, nothing under way.
    public static let signedIn = LoginState(isAuthenticated: true)

    public var description: String {
        (isAuthenticated ? "signed in" : "signed out") + (isPerformingAuthorizationFlow ? ", authorizing" : "")
    }
}

/// A change of a login provider's ``LoginState``, as delivered by
/// ``LoginProvider/loginStateChanges()`` and by the ``Foundation/NSNotification/Name/outpostLoginStateDidChange``
/// notification.
public struct LoginStateChange: Sendable, Hashable {
    /// The identifier of the provider whose state changed.
    public var provider: String
    /// The state before the change.
    public var previous: LoginState
    /// The state after the change.
    public var current: LoginState

    /// Creates a change.
    public init(provider: String, previous: LoginState, current: LoginState) {
        self.provider = provider
        self.previous = previous
        self.current = current
    }

    /// The `userInfo` key under which a notification carries the change.
    public static let userInfoKey = "change"

    /// The change a ``Foundation/NSNotification/Name/outpostLoginStateDidChange`` notification carries.
    public init?(notification: Notification) {
        guard let change = notification.userInfo?[Self.userInfoKey] as? LoginStateChange else { return nil }
        self = change
    }
}

extension Notification.Name {
    /// Posted by login providers when their ``LoginState`` changes. The notification's `object` is
    /// the provider's identifier (a `String`); read the change with ``LoginStateChange/init(notification:)``.
    public static let outpostLoginStateDidChange = Notification.Name("OutpostLoginStateDidChange")
}

/// A way for a user to sign in: OAuth in a browser, a device code on a TV, a paywall vendor's SDK.
///
/// A provider is created from a configuration (a JSON object) under an identifier, usually by a
/// ``PluginRegistry`` from a ``PluginManifest``. ``login(parameters:)`` and ``logout()`` return
/// when they finished and throw a ``PluginError`` when they did not: ``PluginError/Code/loginCancelled``
/// when the user or the app gave the login up, ``PluginError/Code/loginFailed`` or
/// ``PluginError/Code/loginInProgress`` otherwise.
///
/// Changes of ``LoginState`` are observable in two ways: ``loginStateChanges()`` as an
/// `AsyncSequence`, and the ``Foundation/NSNotification/Name/outpostLoginStateDidChange`` notification
/// on the provider's notification center. ``LoginStateBroadcaster`` does both for a conforming type.
///
/// Completion-handler forms of the async members are in `LoginProvider+Completion.swift`.
public protocol LoginProvider: Sendable {
    /// The identifier the provider was created under, e.g. `oauth`.
    var identifier: String { get }
    /// The configuration the provider was created from (a JSON object).
    var configuration: JSONValue { get }

    /// Signs a user in. `parameters` are provider-specific (e.g. `{"interactive": false}`).
    ///
    /// - Throws: ``PluginError``; ``PluginError/Code/loginCancelled`` when the user or the app gave
    ///   the login up.
    func login(parameters: [String: JSONValue]) async throws
    /// Signs the user out and forgets the stored credential.
    ///
    /// - Throws: ``PluginError`` when signing out did not finish cleanly.
    func logout() async throws

    /// Whether a user is signed in, as far as the provider last knew (no network).
    var isAuthenticated: Bool { get }
    /// Whether a login is under way.
    var isPerformingAuthorizationFlow: Bool { get }

    /// The signed-in user's token, e.g. an OAuth access token; `nil` when signed out.
    var userToken: String? { get async }
    /// Whether ``setUserToken(_:)`` is allowed.
    var allowsSettingUserToken: Bool { get }
    /// Replaces the user's token (e.g. one obtained elsewhere); `nil` clears it and signs out.
    ///
    /// - Throws: ``PluginError`` with ``PluginError/Code/notSupported`` when the provider does not
    ///   allow it (see ``allowsSettingUserToken``).
    func setUserToken(_ token: String?) async throws

    /// The provider's login-state changes from now on, buffered until read. The stream finishes
    /// when the provider is done with; stop reading to unsubscribe.
    func loginStateChanges() -> AsyncStream<LoginStateChange>
}

extension LoginProvider {
    /// Providers that say nothing do not allow setting the token.
    public var allowsSettingUserToken: Bool { false }

    /// Throws ``PluginError/Code/notSupported``: the provider does not allow setting its token.
    public func setUserToken(_ token: String?) async throws {
        throw PluginError(
            .notSupported, "The login provider '\(identifier)' does not allow setting the user token",
            suggestion: "Sign in with login(parameters:) instead", plugin: identifier)
    }

    /// Signs a user in with no parameters.
    public func login() async throws { try await login(parameters: [:]) }
}
