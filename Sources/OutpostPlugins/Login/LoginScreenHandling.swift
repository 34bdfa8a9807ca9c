@_spi(OutpostInternal) public import OutpostCore

/// What a sign-in screen built elsewhere (a web view, a React Native view, a terminal prompt) calls
/// when the user acts: the screen collects what the user typed and hands it to these steps.
///
/// Each step returns when it succeeded and throws a ``PluginError`` when it did not; the error's
/// ``PluginError/message`` is written to be shown to the user. ``ProviderLoginScreenHandler``
/// implements the protocol over a ``LoginProvider``.
public protocol LoginScreenHandling: Sendable {
    /// Creates an account, e.g. from `{"username": ..., "password": ...}`.
    func register(parameters: [String: JSONValue]) async throws
    /// Signs in, e.g. from `{"username": ..., "password": ...}`.
    func login(parameters: [String: JSONValue]) async throws
    /// Starts a password recovery, e.g. from `{"email": ...}`.
    func recoverPassword(parameters: [String: JSONValue]) async throws
    /// Signs out.
    func logout(parameters: [String: JSONValue]) async throws
    /// The screen finished its part of a sign-in (e.g. a web view reached its redirect).
    func loginDone(parameters: [String: JSONValue]) async throws
    /// The user closed the screen without signing in.
    func loginCancelled(parameters: [String: JSONValue]) async throws
}
