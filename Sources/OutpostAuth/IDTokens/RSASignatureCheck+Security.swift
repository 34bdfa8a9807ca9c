#if os(macOS) || os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
    import Foundation
    import Security

    extension RSASignatureCheck {
        /// Whether `signature` is `signingInput`'s RSA signature by the key (`modulus`, `exponent`),
        /// checked by the Security framework (`SecKeyVerifySignature`); a key Security will not
        /// read never verifies.
        static func isValid(
            _ signature: [UInt8], over signingInput: [UInt8], modulus: [UInt8], exponent: [UInt8], hash: Hash,
            padding: Padding
        ) -> Bool {
            let attributes: [CFString: Any] = [
                kSecAttrKeyType: kSecAttrKeyTypeRSA,
                kSecAttrKeyClass: kSecAttrKeyClassPublic,
            ]
            let der = Data(pkcs1DER(modulus: modulus, exponent: exponent))
            guard let key = SecKeyCreateWithData(der as CFData, attributes as CFDictionary, nil) else { return false }
            let algorithm: SecKeyAlgorithm =
                switch (hash, padding) {
                case (.sha256, .pkcs1v15): .rsaSignatureMessagePKCS1v15SHA256
                case (.sha384, .pkcs1v15): .rsaSignatureMessagePKCS1v15SHA384
                case (.sha512, .pkcs1v15): .rsaSignatureMessagePKCS1v15SHA512
                case (.sha256, .pss): .rsaSignatureMessagePSSSHA256
                case (.sha384, .pss): .rsaSignatureMessagePSSSHA384
                case (.sha512, .pss): .rsaSignatureMessagePSSSHA512
                }
            guard SecKeyIsAlgorithmSupported(key, .verify, algorithm) else { return false }
            return SecKeyVerifySignature(key, algorithm, Data(signingInput) as CFData, Data(signature) as CFData, nil)
        }
    }
#endif
