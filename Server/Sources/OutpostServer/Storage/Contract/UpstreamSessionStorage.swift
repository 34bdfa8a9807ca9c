import Foundation

/// A sign-in through an upstream provider's web page that the server started and not yet finished:
/// what the callback needs to check the provider's answer and to finish the app's request.
public struct PendingUpstreamSignIn: Sendable, Equatable {
    /// The provider's name (``UpstreamProvider/name``).
    public var provider: String
    /// The raw nonce; the provider was sent it (or, for Apple, its SHA-256).
    public var nonce: String
    /// The PKCE code verifier (RFC 7636) whose S256 challenge the provider was sent.
    public var codeVerifier: String
    /// The SHA-256 of the browser's binding cookie: only the browser that started may finish.
    public var bindingHash: String
    /// What to finish afterwards, as JSON text: the app's authorization request, or a device code.
    public var request: String
    /// Milliseconds since 1970.
    public var expiresAt: Int64

    package init(
        provider: String, nonce: String, codeVerifier: String, bindingHash: String, request: String, expiresAt: Int64
    ) {
        self.provider = provider
        self.nonce = nonce
        self.codeVerifier = codeVerifier
        self.bindingHash = bindingHash
        self.request = request
        self.expiresAt = expiresAt
    }
}

/// The state of web sign-ins through upstream providers, and the refresh tokens providers issued,
/// kept in the database so that any instance behind a load balancer can finish a sign-in, and the
/// deletion of an account on any instance can revoke them.
public protocol UpstreamSessionStorage: Sendable {
    /// Keeps a pending sign-in under the SHA-256 of its `state`, and drops those past their expiry.
    func savePendingSignIn(stateHash: String, _ pending: PendingUpstreamSignIn, now: Int64) async throws
    /// Removes and returns the pending sign-in of a `state` hash, expired or not: a state is used once.
    func takePendingSignIn(stateHash: String) async throws -> PendingUpstreamSignIn?
    /// Keeps (replacing) a provider's refresh token of a user, sealed (AES-GCM, with a key derived from the server's secret).
    func saveUpstreamToken(userID: String, provider: String, sealed: String, now: Int64) async throws
    /// The sealed refresh tokens of a user, by provider name.
    func upstreamTokens(userID: String) async throws -> [(provider: String, sealed: String)]
    func removeUpstreamToken(userID: String, provider: String) async throws
}
