import Crypto
import CryptoExtras
import Foundation
import JWTKit
@_spi(OutpostInternal) import OutpostCore
@_spi(OutpostInternal) import OutpostSupport

/// The ID-token signing keys in storage: the one in use, the ones still published, rotation.
///
/// Every instance reads the keys from the database, so a rotation made by `outpost keys rotate`
/// (another process) takes effect at once everywhere.
struct SigningKeyRing: Sendable {
    let storage: any OpenIDStorage
    let gracePeriod: Duration

    static let algorithm = "RS256"

    /// The key to sign with: the newest key not retired, made now when there is none.
    func current() async throws -> StoredSigningKey {
        if let key = try await storage.signingKeys().first(where: { $0.retiredAt == nil }) { return key }
        let key = try Self.generate(now: AuthService.now())
        try await storage.saveSigningKey(key)
        return key
    }

    /// The keys the JWKS lists: those in use and those retired within the grace period, newest first.
    func published() async throws -> [StoredSigningKey] {
        _ = try await current()
        let cutoff = AuthService.now() - AuthService.milliseconds(gracePeriod)
        return try await storage.signingKeys().filter { key in key.retiredAt.map { $0 > cutoff } ?? true }
    }

    /// Makes a new key the one in use; the others stay published for the grace period, and keys
    /// retired longer ago than that are deleted.
    func rotate() async throws -> (key: StoredSigningKey, removed: Int) {
        let now = AuthService.now()
        let key = try Self.generate(now: now)
        try await storage.saveSigningKey(key)
        try await storage.retireSigningKeys(except: key.kid, at: now)
        let removed = try await storage.removeSigningKeys(retiredBefore: now - AuthService.milliseconds(gracePeriod))
        return (key, removed)
    }

    /// A new RSA 2048 key, its `kid` the RFC 7638 thumbprint of its public key.
    static func generate(now: Int64) throws -> StoredSigningKey {
        let backing = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let pem = backing.pemRepresentation
        let jwk = try publicJWK(pem: pem, kid: "")
        return StoredSigningKey(
            kid: thumbprint(jwk), algorithm: algorithm, privateKeyPEM: pem, createdAt: now, retiredAt: nil)
    }

    /// The public JWK (RFC 7517) of a stored key: `kty`, `kid`, `use: sig`, `alg`, `n`, `e`.
    static func publicJWK(_ key: StoredSigningKey) throws -> [String: JSONValue] {
        try publicJWK(pem: key.privateKeyPEM, kid: key.kid)
    }

    static func publicJWK(pem: String, kid: String) throws -> [String: JSONValue] {
        let primitives = try Insecure.RSA.PrivateKey(pem: pem).publicKey.getKeyPrimitives()
        return [
            "kty": "RSA", "kid": .string(kid), "use": "sig", "alg": .string(algorithm),
            "n": .string(base64URL(primitives.modulus.drop { $0 == 0 })),
            "e": .string(base64URL(primitives.publicExponent.drop { $0 == 0 })),
        ]
    }

    /// RFC 7638: SHA-256 over `{"e":…,"kty":"RSA","n":…}`, base64url.
    static func thumbprint(_ jwk: [String: JSONValue]) -> String {
        let canonical = #"{"e":"\#(jwk["e"]?.stringValue ?? "")","kty":"RSA","n":"\#(jwk["n"]?.stringValue ?? "")"}"#
        return base64URL(Data(SHA256.hash(data: Data(canonical.utf8))))
    }

    static func base64URL(_ bytes: some Collection<UInt8>) -> String {
        Base64URL.encode(bytes)
    }
}

extension OpenIDStorage {
    /// Replaces the ID-token signing key (`outpost keys rotate`). Tokens signed with the previous key
    /// still verify for `gracePeriod`, as long as it stays in the JWKS; keys retired longer ago are deleted.
    ///
    /// - Returns: The new key and how many old keys were deleted.
    public func rotateSigningKey(gracePeriod: Duration = OpenIDConfiguration().signingKeyGracePeriod) async throws
        -> (key: StoredSigningKey, removed: Int)
    {
        try await SigningKeyRing(storage: self, gracePeriod: gracePeriod).rotate()
    }

    /// The keys the JWKS lists now (the one in use first), made when there is none.
    public func publishedSigningKeys(gracePeriod: Duration = OpenIDConfiguration().signingKeyGracePeriod) async throws
        -> [StoredSigningKey]
    {
        try await SigningKeyRing(storage: self, gracePeriod: gracePeriod).published()
    }
}
