import Crypto
import Foundation
@_spi(OutpostInternal) import OutpostSupport

/// Random tokens, hashing and constant-time comparison.
enum Secrets {
    /// A new random token: `prefix` + 32 random bytes in base64url (256 bits).
    static func token(prefix: String) -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return prefix + base64URL(Data(bytes))
    }

    /// SHA-256 as lower-case hex: how tokens, codes and client secrets are stored.
    static func hash(_ text: String) -> String {
        var text = text
        return text.withUTF8 { hex(SHA256.hash(data: UnsafeRawBufferPointer($0))) }
    }

    static func hmac(_ text: String, key: Data) -> String {
        hex(hmacBytes(text, key: key))
    }

    static func hmacBytes(_ text: String, key: Data) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: SymmetricKey(data: key)))
    }

    /// Lower-case hex of `bytes` (``Hex``).
    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        Hex.string(bytes)
    }

    /// Compares without an early exit, so the time taken says nothing about where they differ.
    static func equal(_ left: String, _ right: String) -> Bool {
        let a = Array(left.utf8)
        let b = Array(right.utf8)
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }

    /// The PKCE S256 transform (RFC 7636 §4.2).
    static func s256(_ verifier: String) -> String {
        base64URL(Data(SHA256.hash(data: Data(verifier.utf8))))
    }

    static func base64URL(_ bytes: some Collection<UInt8>) -> String {
        Base64URL.encode(bytes)
    }

    /// A user code for the device flow: 8 letters without vowels (no accidental words), as XXXX-XXXX.
    static func userCode() -> String {
        let alphabet = Array("BCDFGHJKLMNPQRSTVWXZ")
        var generator = SystemRandomNumberGenerator()
        let letters = (0..<8).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] }
        return String(letters[0..<4]) + "-" + String(letters[4..<8])
    }
}
