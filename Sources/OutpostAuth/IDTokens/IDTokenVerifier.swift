import Crypto
public import Foundation
@_spi(OutpostInternal) import OutpostCore
@_spi(OutpostInternal) import OutpostSupport

/// Verifies OpenID Connect ID tokens (OpenID Connect Core §3.1.3.7): the signature with the
/// issuer's keys (JWKS, chosen by `kid`, fetched again once when a `kid` is unknown, as after a
/// key rotation), then `iss`, `aud` (and `azp`), `exp` with a leeway, the `nonce` and `at_hash`.
///
/// Only asymmetric algorithms are accepted (RS256 and the other RSA, ECDSA and EdDSA ones); a
/// token with `alg: none` or an HMAC algorithm is refused. Signatures are checked by the platform's
/// crypto: CryptoKit and the Security framework on Apple platforms, swift-crypto elsewhere.
///
/// ```swift
/// let verifier = IDTokenVerifier(issuer: issuer, clientID: "my-app", keySet: { try await fetchJWKS() })
/// let token = try await verifier.verify(idToken, nonce: expectedNonce, accessToken: accessToken)
/// print(token.claims.subject)
/// ```
///
/// An ``Authenticator`` makes its own verifier from its endpoints; use this type directly for
/// ID tokens that arrive another way.
public actor IDTokenVerifier {
    /// The issuer the tokens must name in `iss` (a trailing slash does not matter).
    public nonisolated let issuer: String
    /// This client's id: the tokens must name it in `aud`.
    public nonisolated let clientID: String
    /// Allowed clock difference for `exp` and `iat`.
    public nonisolated let leeway: Duration
    private let now: @Sendable () -> Date
    private let keySet: @Sendable () async throws -> Data
    /// The JWKS's signing keys, in its order, once fetched.
    private var keys: [(kid: String, alg: String, key: JSONWebKey)]?
    /// `kid` → the JWK's `alg` ("" when it has none).
    private var algorithms: [String: String] = [:]

    /// The most keys read from one JWKS; issuers publish a few (the current and the next).
    static let maxKeys = 32

    static let acceptedAlgorithms: Set<String> = [
        "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA",
    ]

    /// - Parameters:
    ///   - issuer: The issuer identifier, as in the discovery metadata.
    ///   - clientID: This client's id.
    ///   - leeway: Allowed clock difference. Default: 60 seconds.
    ///   - now: The current time; a seam for tests.
    ///   - keySet: Fetches the issuer's JWKS document (`jwks_uri`); called on first use and again
    ///     when a token names a `kid` the last one lacked.
    public init(
        issuer: String, clientID: String, leeway: Duration = .seconds(60), now: @escaping @Sendable () -> Date = { Date() },
        keySet: @escaping @Sendable () async throws -> Data
    ) {
        self.issuer = issuer
        self.clientID = clientID
        self.leeway = leeway
        self.now = now
        self.keySet = keySet
    }

    /// Verifies `idToken` and returns it with its claims.
    ///
    /// - Parameters:
    ///   - idToken: The compact JWS, as the token endpoint returned it.
    ///   - nonce: The `nonce` the authorization request sent; the token must carry the same. `nil`
    ///     skips the check (refreshes, flows without a nonce).
    ///   - accessToken: The access token issued with it; when the token has `at_hash`, it must match.
    /// - Throws: ``AuthError`` with ``AuthError/Code/idTokenBadSignature``,
    ///   ``AuthError/Code/idTokenWrongIssuer``, ``AuthError/Code/idTokenWrongAudience``,
    ///   ``AuthError/Code/idTokenExpired``, ``AuthError/Code/idTokenNonceMismatch``,
    ///   ``AuthError/Code/idTokenAccessTokenMismatch``, ``AuthError/Code/idTokenInvalid``, or
    ///   ``AuthError/Code/discoveryFailed`` when the keys cannot be fetched.
    public func verify(_ idToken: String, nonce: String? = nil, accessToken: String? = nil) async throws -> IDToken {
        let header = try Self.header(of: idToken)
        guard let alg = header["alg"]?.stringValue, Self.acceptedAlgorithms.contains(alg) else {
            throw AuthError(
                .idTokenBadSignature,
                "The id_token is signed with '\(header["alg"]?.stringValue ?? "none")'; only RSA, ECDSA and EdDSA signatures are accepted. Refusing it"
            )
        }
        let kid = header["kid"]?.stringValue
        var collection = try await loadedKeys(reload: false)
        if let kid, algorithms[kid] == nil {
            collection = try await loadedKeys(reload: true)  // a rotation since the last fetch
            guard algorithms[kid] != nil else {
                throw AuthError(
                    .idTokenBadSignature,
                    "The id_token is signed with key '\(kid)', which the issuer's JWKS does not list; refusing it. If the server rotated its keys long ago, sign in again"
                )
            }
        }
        if let kid, let keyAlgorithm = algorithms[kid], !keyAlgorithm.isEmpty, keyAlgorithm != alg {
            throw AuthError(
                .idTokenBadSignature, "The id_token says '\(alg)' but its key '\(kid)' is for '\(keyAlgorithm)'; refusing it")
        }
        guard Self.signatureVerifies(idToken, alg: alg, keys: collection.filter { kid == nil || $0.kid == kid }) else {
            throw AuthError(
                .idTokenBadSignature,
                "The id_token's signature does not verify with the issuer's keys; it was altered or not issued by \(issuer). Refusing it"
            )
        }
        let token = try IDToken(unverified: idToken)
        try check(token.claims, nonce: nonce, accessToken: accessToken, alg: alg)
        return token
    }

    /// The checks after the signature, in the order of OpenID Connect Core §3.1.3.7.
    func check(_ claims: IDTokenClaims, nonce: String?, accessToken: String?, alg: String) throws {
        guard Self.normal(claims.issuer) == Self.normal(issuer) else {
            throw AuthError(
                .idTokenWrongIssuer,
                "The id_token was issued by '\(claims.issuer)', not by '\(issuer)'; refusing it. Check the issuer URL this app is configured with"
            )
        }
        guard claims.audience.contains(clientID) else {
            throw AuthError(
                .idTokenWrongAudience,
                "The id_token is meant for \(claims.audience), not for client '\(clientID)'; refusing it. Check the client id"
            )
        }
        if claims.audience.count > 1, claims.authorizedParty != clientID {
            throw AuthError(
                .idTokenWrongAudience, "The id_token has several audiences but its 'azp' is not '\(clientID)'; refusing it")
        }
        let current = now()
        let slack = leeway.inSeconds
        guard current.timeIntervalSince(claims.expiresAt) < slack else {
            throw AuthError(
                .idTokenExpired,
                "The id_token expired at \(claims.expiresAt); sign in again (or check this device's clock)")
        }
        guard claims.issuedAt.timeIntervalSince(current) <= slack else {
            throw AuthError(
                .idTokenInvalid, "The id_token was issued in the future (\(claims.issuedAt)); check this device's clock")
        }
        if let nonce {
            guard let sent = claims.nonce, StateGenerator.equal(sent, nonce) else {
                throw AuthError(
                    .idTokenNonceMismatch,
                    "The id_token's nonce is not the one this sign-in sent; it may be replayed from another sign-in. Refusing it; sign in again"
                )
            }
        }
        if let accessToken, let atHash = claims.accessTokenHash {
            guard let expected = Self.accessTokenHash(accessToken, alg: alg), StateGenerator.equal(expected, atHash) else {
                throw AuthError(
                    .idTokenAccessTokenMismatch,
                    "The id_token's at_hash does not match the access token issued with it; refusing both. Sign in again")
            }
        }
    }

    /// `at_hash`: the left half of the hash of the access token, with the hash of the token's `alg`.
    static func accessTokenHash(_ accessToken: String, alg: String) -> String? {
        let data = Data(accessToken.utf8)
        let digest: [UInt8]
        switch alg.suffix(3) {
        case "256": digest = Array(SHA256.hash(data: data))
        case "384": digest = Array(SHA384.hash(data: data))
        case "512": digest = Array(SHA512.hash(data: data))
        default: return nil  // EdDSA: no at_hash rule
        }
        return Base64URL.encode(digest.prefix(digest.count / 2))
    }

    static func normal(_ issuer: String) -> String {
        var text = issuer
        while text.hasSuffix("/") { text.removeLast() }
        return text
    }

    /// Whether one of `keys` verifies the token's signature (JWS compact serialization, RFC 7515
    /// §7.1: the signature is over the `header.payload` text).
    static func signatureVerifies(_ token: String, alg: String, keys: [(kid: String, alg: String, key: JSONWebKey)])
        -> Bool
    {
        guard let lastDot = token.utf8.lastIndex(of: UInt8(ascii: ".")),
            let signature = Base64URL.decode(token[token.index(after: lastDot)...])
        else { return false }
        let signingInput = Array(token.utf8[..<lastDot])
        return keys.contains { $0.key.verifies(signature, over: signingInput, alg: alg) }
    }

    static func header(of token: String) throws -> [String: JSONValue] {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = Base64URL.decode(parts[0]).map({ Data($0) }), let json = try? JSONValue(parsing: data),
            let object = json.objectValue
        else {
            throw AuthError(.idTokenInvalid, "The id_token is not a JSON Web Token; the server sent something else")
        }
        return object
    }

    /// The keys of the JWKS: fetched on first use, or again when `reload`.
    private func loadedKeys(reload: Bool) async throws -> [(kid: String, alg: String, key: JSONWebKey)] {
        if let keys, !reload { return keys }
        let data: Data
        do {
            data = try await keySet()
        } catch {
            throw AuthError(
                .discoveryFailed, "The issuer's signing keys (JWKS) could not be fetched; check that the server is up",
                underlying: error)
        }
        guard let json = try? JSONValue(parsing: data), let list = json["keys"]?.arrayValue else {
            throw AuthError(.discoveryFailed, "The issuer's JWKS is not a JSON object with a 'keys' array")
        }
        var collection: [(kid: String, alg: String, key: JSONWebKey)] = []
        var algorithms: [String: String] = [:]
        for entry in list.prefix(Self.maxKeys) {
            // A key without a kid, for encryption, or of a type or size not checked here is skipped.
            guard let kid = entry["kid"]?.stringValue, entry["use"]?.stringValue ?? "sig" == "sig",
                let key = JSONWebKey(entry)
            else { continue }
            let alg = entry["alg"]?.stringValue ?? ""
            collection.append((kid, alg, key))
            algorithms[kid] = alg
        }
        self.keys = collection
        self.algorithms = algorithms
        return collection
    }
}
