import Crypto
@_spi(OutpostInternal) import OutpostCore
@_spi(OutpostInternal) import OutpostSupport

/// A public signing key from an issuer's JWKS (RFC 7517), as the ID token checks use it.
///
/// Elliptic-curve and Ed25519 signatures are checked by swift-crypto (CryptoKit on Apple
/// platforms); RSA signatures by ``RSASignatureCheck``, which is the Security framework on Apple
/// platforms and swift-crypto's RSA elsewhere, so an app on an Apple platform compiles no C crypto
/// library to sign in.
enum JSONWebKey: Sendable {
    case rsa(modulus: [UInt8], exponent: [UInt8])
    case p256(P256.Signing.PublicKey)
    case p384(P384.Signing.PublicKey)
    case p521(P521.Signing.PublicKey)
    case ed25519(Curve25519.Signing.PublicKey)

    /// RSA moduli from 2048 bits (RFC 7518 §3.3 asks for at least 2048) up to 16384 bits.
    static let rsaModulusBytes = 256...2048

    /// Reads one JWKS entry (RFC 7518 §6); `nil` for a key type, curve or size this module does not
    /// check signatures with (such a key is skipped, as an unknown key is).
    init?(_ entry: JSONValue) {
        func bytes(_ name: String) -> [UInt8]? {
            guard let text = entry[name]?.stringValue, text.utf8.count <= 4096 else { return nil }
            return Base64URL.decode(text)
        }
        switch entry["kty"]?.stringValue {
        case "RSA":
            guard let n = bytes("n"), let e = bytes("e") else { return nil }
            let modulus = Array(n.drop { $0 == 0 })
            let exponent = Array(e.drop { $0 == 0 })
            guard Self.rsaModulusBytes.contains(modulus.count), (1...8).contains(exponent.count) else { return nil }
            self = .rsa(modulus: modulus, exponent: exponent)
        case "EC":
            guard let x = bytes("x"), let y = bytes("y") else { return nil }
            let point = x + y
            switch entry["crv"]?.stringValue {
            case "P-256":
                guard let key = try? P256.Signing.PublicKey(rawRepresentation: point) else { return nil }
                self = .p256(key)
            case "P-384":
                guard let key = try? P384.Signing.PublicKey(rawRepresentation: point) else { return nil }
                self = .p384(key)
            case "P-521":
                guard let key = try? P521.Signing.PublicKey(rawRepresentation: point) else { return nil }
                self = .p521(key)
            default: return nil
            }
        case "OKP":
            guard entry["crv"]?.stringValue == "Ed25519", let x = bytes("x"),
                let key = try? Curve25519.Signing.PublicKey(rawRepresentation: x)
            else { return nil }
            self = .ed25519(key)
        default:
            return nil
        }
    }

    /// Whether `signature` is a JWS signature (RFC 7518 §3) with `alg` over `signingInput` (the
    /// token's `header.payload` text) by this key. A key of another type than `alg` names never
    /// verifies.
    func verifies(_ signature: [UInt8], over signingInput: [UInt8], alg: String) -> Bool {
        switch self {
        case .rsa(let modulus, let exponent):
            guard let (hash, padding) = Self.rsaScheme(alg) else { return false }
            return RSASignatureCheck.isValid(
                signature, over: signingInput, modulus: modulus, exponent: exponent, hash: hash, padding: padding)
        case .p256(let key):
            guard alg == "ES256", let value = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else {
                return false
            }
            return key.isValidSignature(value, for: signingInput)
        case .p384(let key):
            guard alg == "ES384", let value = try? P384.Signing.ECDSASignature(rawRepresentation: signature) else {
                return false
            }
            return key.isValidSignature(value, for: signingInput)
        case .p521(let key):
            guard alg == "ES512", let value = try? P521.Signing.ECDSASignature(rawRepresentation: signature) else {
                return false
            }
            return key.isValidSignature(value, for: signingInput)
        case .ed25519(let key):
            return alg == "EdDSA" && key.isValidSignature(signature, for: signingInput)
        }
    }

    /// The digest and padding of an RSA `alg` (RS… is PKCS #1 v1.5, PS… is PSS with a salt as long as
    /// the digest).
    static func rsaScheme(_ alg: String) -> (RSASignatureCheck.Hash, RSASignatureCheck.Padding)? {
        switch alg {
        case "RS256": (.sha256, .pkcs1v15)
        case "RS384": (.sha384, .pkcs1v15)
        case "RS512": (.sha512, .pkcs1v15)
        case "PS256": (.sha256, .pss)
        case "PS384": (.sha384, .pss)
        case "PS512": (.sha512, .pss)
        default: nil
        }
    }
}
