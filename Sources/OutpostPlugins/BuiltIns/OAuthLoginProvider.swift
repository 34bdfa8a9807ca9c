public import Foundation
@_spi(OutpostInternal) public import OutpostCore
import Synchronization

/// A ``LoginProvider`` over an ``OAuthSession``: sign-in in a browser or with a device code, silent
/// sign-in at launch from the stored credential, token refresh by the session.
///
/// It is also a ``StartupHook`` for ``StartupPhase/launch``: listed under `startup` in a manifest,
/// it restores the stored credential silently. A missing credential is not a failure: the user
/// stays signed out.
///
/// Configuration (all optional):
///
/// | key | type | default | meaning |
/// | --- | --- | --- | --- |
/// | `interactive` | bool | `true` | `login` may open a browser or show a device code |
/// | `allows_setting_token` | bool | `true` | ``setUserToken(_:)`` is allowed |
///
/// A login's `parameters` may set `interactive` for that login.
public final class OAuthLoginProvider: LoginProvider, StartupHook {
    /// The plugin type under which ``PluginRegistry/registerOAuthLoginProvider(type:notificationCenter:makeSession:)`` registers it.
    public static let pluginType = "outpost.login.oauth"

    public let identifier: String
    public let configuration: JSONValue
    /// The session the provider signs in with.
    public let session: any OAuthSession
    /// Whether `login` may be interactive unless its parameters say otherwise.
    public let interactive: Bool
    public let allowsSettingUserToken: Bool
    private let broadcaster: LoginStateBroadcaster

    /// Creates a provider.
    /// - Parameters:
    ///   - identifier: The identifier it is known by, e.g. `oauth`.
    ///   - session: The OAuth implementation.
    ///   - configuration: A JSON object; see the type's documentation.
    ///   - notificationCenter: Where login-state notifications are posted.
    /// - Throws: ``PluginError/Code/invalidConfiguration`` naming the key at fault.
    public init(
        identifier: String, session: any OAuthSession, configuration: JSONValue = [:],
        notificationCenter: NotificationCenter = .default
    ) throws(PluginError) {
        let settings = try PluginConfiguration(configuration, plugin: identifier)
        self.identifier = identifier
        self.configuration = configuration
        self.session = session
        self.interactive = try settings.bool("interactive", default: true)
        self.allowsSettingUserToken = try settings.bool("allows_setting_token", default: true)
        self.broadcaster = LoginStateBroadcaster(provider: identifier, notificationCenter: notificationCenter)
    }

    // MARK: State

    public var isAuthenticated: Bool { broadcaster.current.isAuthenticated }
    public var isPerformingAuthorizationFlow: Bool { broadcaster.current.isPerformingAuthorizationFlow }

    /// The current state.
    public var state: LoginState { broadcaster.current }

    public func loginStateChanges() -> AsyncStream<LoginStateChange> { broadcaster.changes() }

    // MARK: Login and logout

    /// Signs in.
    ///
    /// - Throws: ``PluginError`` with ``PluginError/Code/loginCancelled`` when the session's sign-in
    ///   was given up (by the user, or by cancelling the task), ``PluginError/Code/loginInProgress``
    ///   while another login is under way, ``PluginError/Code/loginFailed`` when the session failed.
    public func login(parameters: [String: JSONValue]) async throws(PluginError) {
        let interactive = parameters["interactive"]?.boolValue ?? self.interactive
        var started = false
        broadcaster.update { state in
            guard !state.isPerformingAuthorizationFlow else { return }
            state.isPerformingAuthorizationFlow = true
            started = true
        }
        guard started else {
            throw PluginError(
                .loginInProgress, "A sign-in with '\(identifier)' is already under way",
                suggestion: "Wait for it to finish before starting another", plugin: identifier)
        }
        let signedIn: Bool
        do {
            signedIn = try await session.signIn(interactive: interactive)
        } catch {
            broadcaster.update { $0.isPerformingAuthorizationFlow = false }
            if error is CancellationError { throw cancelled() }
            throw PluginError(
                .loginFailed, "Signing in with '\(identifier)' failed",
                suggestion: interactive ? "Try again" : "Sign in interactively", plugin: identifier, underlying: error)
        }
        broadcaster.update { state in
            state.isPerformingAuthorizationFlow = false
            if signedIn { state.isAuthenticated = true }
        }
        guard signedIn else { throw cancelled() }
    }

    private func cancelled() -> PluginError {
        PluginError(
            .loginCancelled, "Signing in with '\(identifier)' was cancelled", suggestion: "Sign in to go on", plugin: identifier)
    }

    /// Signs out. The provider counts as signed out afterwards even when the session failed to
    /// revoke the credential at the server.
    ///
    /// - Throws: ``PluginError`` with ``PluginError/Code/loginFailed`` when the session's sign-out
    ///   failed (the local sign-in is gone nonetheless).
    public func logout() async throws(PluginError) {
        do {
            try await session.signOut()
            broadcaster.update { $0.isAuthenticated = false }
        } catch {
            broadcaster.update { $0.isAuthenticated = false }
            throw PluginError(
                .loginFailed, "Signing out of '\(identifier)' did not finish cleanly",
                suggestion: "The local sign-in is gone; check the connection if the server must forget it too",
                plugin: identifier, underlying: error)
        }
    }

    /// Restores the stored credential silently and reports whether a user is signed in.
    @discardableResult
    public func restore() async -> Bool {
        let restored = await session.restore()
        broadcaster.update { $0.isAuthenticated = restored }
        return restored
    }

    // MARK: Token

    /// The session's access token, refreshed by the session if need be. When the session has
    /// none (the credential is gone or could not be refreshed) the provider becomes signed out.
    public var userToken: String? {
        get async {
            let token = await session.accessToken
            if token == nil { broadcaster.update { $0.isAuthenticated = false } }
            return token
        }
    }

    /// Replaces the credential with `token`; `nil` clears it and signs out.
    /// - Throws: ``PluginError/Code/notSupported`` when the configuration forbids it, or
    ///   ``PluginError/Code/loginFailed`` when the session refused the token.
    public func setUserToken(_ token: String?) async throws {
        guard allowsSettingUserToken else {
            throw PluginError(
                .notSupported, "The login provider '\(identifier)' does not allow setting the user token",
                suggestion: "Set \"allows_setting_token\": true in its configuration, or sign in with login(parameters:)",
                plugin: identifier)
        }
        do {
            try await session.setAccessToken(token)
        } catch {
            throw PluginError(
                .loginFailed, "The session of '\(identifier)' did not accept the token", plugin: identifier, underlying: error)
        }
        broadcaster.update { $0.isAuthenticated = token != nil }
    }

    // MARK: StartupHook

    public var name: String { identifier }
    public var phases: Set<StartupPhase> { [.launch] }

    /// At launch: restores the stored credential silently.
    public func run(phase: StartupPhase, context: [String: String]) async throws {
        guard phase == .launch else { return }
        await restore()
    }
}
