#if os(Linux) || os(Android) || os(Windows) || os(OpenBSD)
    import Crypto
    import CryptoExtras

    extension RSASignatureCheck {
        /// Whether `signature` is `signingInput`'s RSA signature by the key (`modulus`, `exponent`),
        /// checked by swift-crypto's `_RSA` (BoringSSL, which swift-crypto already builds on these
        /// platforms); a key it will not read never verifies.
        static func isValid(
            _ signature: [UInt8], over signingInput: [UInt8], modulus: [UInt8], exponent: [UInt8], hash: Hash,
            padding: Padding
        ) -> Bool {
            guard let key = try? _RSA.Signing.PublicKey(n: modulus, e: exponent) else { return false }
            let value = _RSA.Signing.RSASignature(rawRepresentation: signature)
            let scheme: _RSA.Signing.Padding = padding == .pss ? .PSS : .insecurePKCS1v1_5
            return switch hash {
            case .sha256: key.isValidSignature(value, for: SHA256.hash(data: signingInput), padding: scheme)
            case .sha384: key.isValidSignature(value, for: SHA384.hash(data: signingInput), padding: scheme)
            case .sha512: key.isValidSignature(value, for: SHA512.hash(data: signingInput), padding: scheme)
            }
        }
    }
#endif
