import Crypto
import Foundation
@_spi(OutpostInternal) import OutpostSupport

/// Proof Key for Code Exchange (RFC 7636) with the S256 method, the only one Outpost sends.
public struct PKCE: Sendable, Hashable {
    /// The secret kept by the client and sent with the token request: 43–128 unreserved characters.
    public let verifier: String
    /// `BASE64URL(SHA256(verifier))`, sent with the authorization request.
    public let challenge: String
    /// Always `S256`.
    public let method = "S256"

    /// A new pair from 32 random bytes (a 43-character verifier), as RFC 7636 section 4.1 recommends.
    public init<Generator: RandomNumberGenerator>(using generator: inout Generator) {
        var bytes = [UInt8](repeating: 0, count: 32)
        for index in bytes.indices { bytes[index] = UInt8.random(in: .min ... .max, using: &generator) }
        let verifier = Self.base64URL(Data(bytes))
        self.verifier = verifier
        self.challenge = Self.challenge(for: verifier)
    }

    /// A new pair from the system's secure random source.
    public init() {
        var generator = SystemRandomNumberGenerator()
        self.init(using: &generator)
    }

    /// A pair from a known verifier.
    ///
    /// - Throws: ``AuthError`` when the verifier is not 43–128 characters of `A-Z a-z 0-9 - . _ ~`.
    public init(verifier: String) throws {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        guard (43...128).contains(verifier.count), verifier.allSatisfy(allowed.contains) else {
            throw AuthError(.invalidVerifier, "A PKCE verifier must be 43–128 characters of A-Z a-z 0-9 - . _ ~ (RFC 7636, 4.1)")
        }
        self.verifier = verifier
        self.challenge = Self.challenge(for: verifier)
    }

    static func challenge(for verifier: String) -> String {
        base64URL(Data(SHA256.hash(data: Data(verifier.utf8))))
    }

    /// Base64url without padding (``Base64URL``).
    static func base64URL(_ bytes: some Collection<UInt8>) -> String {
        Base64URL.encode(bytes)
    }
}
