import Crypto
import Foundation
@_spi(OutpostInternal) import OutpostSupport

/// A fresh nonce for one native sign-in with an upstream provider, binding the provider's ID token
/// to this sign-in so that a token taken from elsewhere cannot be replayed.
///
/// Give the provider ``value`` (Google and most OpenID Connect providers) or ``sha256`` (Sign in
/// with Apple, whose `ASAuthorizationAppleIDRequest.nonce` takes the hash), then send ``value`` to
/// ``Authenticator/signIn(idToken:provider:nonce:scopes:)``. The server compares the token's `nonce`
/// claim with the raw value or with its hash, as the provider's kind says.
public struct SignInNonce: Sendable, Hashable {
    /// The raw nonce: 32 random bytes in base64url (43 characters).
    public let value: String

    /// A new random nonce.
    public init() {
        var generator = SystemRandomNumberGenerator()
        self.value = Base64URL.encode((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// A nonce made elsewhere, e.g. by another sign-in SDK.
    public init(value: String) {
        self.value = value
    }

    /// The SHA-256 of ``value``, in lower-case hex: what Sign in with Apple's request takes.
    public var sha256: String {
        Hex.string(SHA256.hash(data: Data(value.utf8)))
    }
}
