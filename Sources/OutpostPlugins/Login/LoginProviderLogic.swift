@_spi(OutpostInternal) public import OutpostCore

/// How one step of a sign-in screen's logic ended: success, or a message to show the user.
public struct LoginLogicResult: Sendable, Hashable, CustomStringConvertible {
    /// Whether the step succeeded.
    public var success: Bool
    /// What to show the user when it did not; `nil` on success.
    public var errorMessage: String?

    /// Creates a result.
    public init(success: Bool, errorMessage: String? = nil) {
        self.success = success
        self.errorMessage = errorMessage
    }

    /// The step succeeded.
    public static let succeeded = LoginLogicResult(success: true)
    /// The step failed with `message`.
    public static func failed(_ message: String) -> LoginLogicResult { LoginLogicResult(success: false, errorMessage: message) }

    public var description: String { success ? "success" : "failure: \(errorMessage ?? "no message")" }
}

/// The logic behind a sign-in screen built elsewhere (a web view, a React Native view, a terminal
/// prompt): the screen collects what the user typed and calls these; each step finishes with a
/// ``LoginLogicResult`` (success, or an error message to show).
///
/// ``ProviderLoginLogic`` implements it over a ``LoginProvider``.
public protocol LoginProviderLogic: Sendable {
    /// Creates an account, e.g. from `{"username": ..., "password": ...}`.
    func register(parameters: [String: JSONValue]) async -> LoginLogicResult
    /// Signs in, e.g. from `{"username": ..., "password": ...}`.
    func login(parameters: [String: JSONValue]) async -> LoginLogicResult
    /// Starts a password recovery, e.g. from `{"email": ...}`.
    func recoverPassword(parameters: [String: JSONValue]) async -> LoginLogicResult
    /// Signs out.
    func logout(parameters: [String: JSONValue]) async -> LoginLogicResult
    /// The screen finished its part of a sign-in (e.g. a web view reached its redirect).
    func loginDone(parameters: [String: JSONValue]) async -> LoginLogicResult
    /// The user closed the screen without signing in.
    func loginCancelled(parameters: [String: JSONValue]) async -> LoginLogicResult
}
