/// Checks RSA signatures of ID tokens with the platform's RSA: the Security framework on Apple
/// platforms (`RSASignatureCheck+Security.swift`), swift-crypto's `_RSA` elsewhere
/// (`RSASignatureCheck+CryptoExtras.swift`). Both take the key as the JWKS gives it, modulus and
/// exponent.
enum RSASignatureCheck {
    enum Hash: Sendable { case sha256, sha384, sha512 }
    /// PKCS #1 v1.5 (`RS…`) or PSS with MGF1 and a salt as long as the digest (`PS…`, RFC 7518 §3.5).
    enum Padding: Sendable { case pkcs1v15, pss }

    /// The PKCS #1 `RSAPublicKey` DER encoding (RFC 8017 §A.1.1: a SEQUENCE of the modulus and the
    /// exponent as INTEGERs), the form `SecKeyCreateWithData` reads for an RSA public key.
    static func pkcs1DER(modulus: [UInt8], exponent: [UInt8]) -> [UInt8] {
        let body = integer(modulus) + integer(exponent)
        return [0x30] + length(body.count) + body
    }

    /// A non-negative DER INTEGER: no leading zero bytes, but one zero byte when the first bit is set.
    private static func integer(_ magnitude: [UInt8]) -> [UInt8] {
        var content = Array(magnitude.drop { $0 == 0 })
        if content.isEmpty || content[0] & 0x80 != 0 { content.insert(0, at: 0) }
        return [0x02] + length(content.count) + content
    }

    /// A DER length: one byte below 128, else 0x80 + the count of big-endian length bytes.
    private static func length(_ count: Int) -> [UInt8] {
        guard count >= 0x80 else { return [UInt8(count)] }
        var bytes: [UInt8] = []
        var rest = count
        while rest > 0 {
            bytes.insert(UInt8(rest & 0xFF), at: 0)
            rest >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }
}
