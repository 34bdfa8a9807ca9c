public import OutpostAuth

/// OutpostAuth's `Authenticator` as the ``OAuthSession`` of an ``OAuthLoginProvider``:
/// the login provider plugin over real OAuth 2.0 sign-in.
///
/// ```swift
/// registry.registerOAuthLoginProvider { _ in AuthenticatorSession(authenticator: auth, flow: .browser) }
/// ```
///
/// Silent sign-in (`restore`) uses the stored credential, refreshing it if it is due; token refresh
/// during use is the authenticator's job (through its `AuthMiddleware`).
public struct AuthenticatorSession: OAuthSession {
    /// How an interactive sign-in happens.
    public enum InteractiveFlow: Sendable {
        /// Authorization code with PKCE through the browser and a loopback redirect.
        case browser
        /// The device authorization grant; the closure shows the user code.
        case device(onUserCode: @Sendable (DeviceCode) async -> Void)
        /// The password grant, for trusted first-party apps and scripted demos.
        case password(username: String, password: String)
    }

    public let authenticator: Authenticator
    public let flow: InteractiveFlow

    public init(authenticator: Authenticator, flow: InteractiveFlow) {
        self.authenticator = authenticator
        self.flow = flow
    }

    public func signIn(interactive: Bool) async throws -> Bool {
        guard interactive else { return await restore() }
        do {
            switch flow {
            case .browser:
                _ = try await authenticator.signInWithBrowser()
            case .device(let onUserCode):
                _ = try await authenticator.signInWithDeviceCode(onUserCode: onUserCode)
            case .password(let username, let password):
                _ = try await authenticator.signIn(username: username, password: password)
            }
            return true
        } catch let error as AuthError where error.code == .cancelled {
            return false
        }
    }

    public func signOut() async throws {
        try await authenticator.signOut(revoke: true)
    }

    public var accessToken: String? {
        get async { try? await authenticator.validCredential()?.accessToken }
    }

    /// A token from elsewhere becomes the authenticator's credential (without a refresh token), used
    /// from the next request on; `nil` signs out locally without revoking.
    public func setAccessToken(_ token: String?) async throws {
        try await authenticator.setCredential(token.map { Credential(accessToken: $0) })
    }

    public func restore() async -> Bool {
        (try? await authenticator.validCredential()) != nil
    }
}
