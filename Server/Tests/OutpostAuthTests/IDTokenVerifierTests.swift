import Crypto
import CryptoExtras
import Foundation
@_spi(OutpostInternal) import OutpostCore
@_spi(OutpostInternal) import OutpostSupport
import Synchronization
import Testing

@testable import OutpostAuth

/// Signs ID tokens with real RSA keys, and serves their JWKS, to test the verifier offline.
struct TestIssuer {
    static let issuer = "https://issuer.example"
    static let clientID = "my-app"
    static let now = Date(timeIntervalSince1970: 1_700_000_000)
    /// RSA key generation is slow in debug builds: two keys for the whole suite.
    static let keys = Result {
        (try _RSA.Signing.PrivateKey(keySize: .bits2048), try _RSA.Signing.PrivateKey(keySize: .bits2048))
    }

    struct Claims: Codable, Sendable {
        var iss: String? = TestIssuer.issuer
        var sub: String? = "u_ada"
        var aud: JSONValue? = .string(TestIssuer.clientID)
        var exp: Int? = Int(TestIssuer.now.timeIntervalSince1970) + 600
        var iat: Int? = Int(TestIssuer.now.timeIntervalSince1970)
        var auth_time: Int? = Int(TestIssuer.now.timeIntervalSince1970) - 5
        var nonce: String? = "n-0S6_WzA2Mj"
        var at_hash: String?
        var azp: String?
        var preferred_username: String? = "ada"
    }

    static func jwk(_ key: _RSA.Signing.PrivateKey, kid: String) throws -> JSONValue {
        let primitives = try key.publicKey.getKeyPrimitives()
        return [
            "kty": "RSA", "kid": .string(kid), "use": "sig", "alg": "RS256",
            "n": .string(Base64URL.encode(primitives.modulus)), "e": .string(Base64URL.encode(primitives.publicExponent)),
        ]
    }

    static func jwks(_ entries: [(key: _RSA.Signing.PrivateKey, kid: String)]) throws -> Data {
        JSONValue.object(["keys": .array(try entries.map { try jwk($0.key, kid: $0.kid) })]).jsonData()
    }

    /// A JWS compact serialization of `claims` (RFC 7515 §7.1), signed by `sign` over `header.payload`.
    static func compact(_ claims: Claims, alg: String, kid: String, sign: ([UInt8]) throws -> [UInt8]) throws -> String {
        let header = Base64URL.encode(Data(#"{"alg":"\#(alg)","kid":"\#(kid)","typ":"JWT"}"#.utf8))
        let input = "\(header).\(Base64URL.encode(try JSONEncoder().encode(claims)))"
        return "\(input).\(Base64URL.encode(try sign(Array(input.utf8))))"
    }

    /// An RS256 token (or PS256 when `alg` says so) signed by `key` under `kid`.
    static func sign(_ claims: Claims, key: _RSA.Signing.PrivateKey, kid: String, alg: String = "RS256") async throws
        -> String
    {
        try compact(claims, alg: alg, kid: kid) { input in
            let padding: _RSA.Signing.Padding = alg.hasPrefix("PS") ? .PSS : .insecurePKCS1v1_5
            return Array(try key.signature(for: SHA256.hash(data: input), padding: padding).rawRepresentation)
        }
    }

    static func verifier(keySets: [Data], leeway: Duration = .seconds(60)) -> IDTokenVerifier {
        let calls = Mutex(0)
        return IDTokenVerifier(
            issuer: issuer, clientID: clientID, leeway: leeway, now: { now },
            keySet: {
                let index = calls.withLock {
                    $0 += 1
                    return $0 - 1
                }
                return keySets[min(index, keySets.count - 1)]
            })
    }
}

@Suite("ID token verification (OpenID Connect Core §3.1.3.7)")
struct IDTokenVerifierTests {
    func expectFailure(
        _ code: AuthError.Code, _ claims: TestIssuer.Claims = .init(), nonce: String? = "n-0S6_WzA2Mj",
        accessToken: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let (key, _) = try TestIssuer.keys.get()
        let token = try await TestIssuer.sign(claims, key: key, kid: "k1")
        let verifier = TestIssuer.verifier(keySets: [try TestIssuer.jwks([(key, "k1")])])
        do {
            _ = try await verifier.verify(token, nonce: nonce, accessToken: accessToken)
            Issue.record("expected \(code)", sourceLocation: sourceLocation)
        } catch let error as AuthError {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
            #expect(!error.message.isEmpty, sourceLocation: sourceLocation)
        }
    }

    @Test("a good token verifies and exposes its claims")
    func good() async throws {
        let (key, _) = try TestIssuer.keys.get()
        var claims = TestIssuer.Claims()
        claims.at_hash = IDTokenVerifier.accessTokenHash("opa_access", alg: "RS256")
        let token = try await TestIssuer.sign(claims, key: key, kid: "k1")
        let verifier = TestIssuer.verifier(keySets: [try TestIssuer.jwks([(key, "k1")])])
        let verified = try await verifier.verify(token, nonce: "n-0S6_WzA2Mj", accessToken: "opa_access")
        #expect(verified.rawValue == token)
        #expect(verified.claims.subject == "u_ada")
        #expect(verified.claims.issuer == TestIssuer.issuer)
        #expect(verified.claims.audience == [TestIssuer.clientID])
        #expect(verified.claims.nonce == "n-0S6_WzA2Mj")
        #expect(verified.claims.authTime == TestIssuer.now.addingTimeInterval(-5))
        #expect(verified.claims.expiresAt == TestIssuer.now.addingTimeInterval(600))
        #expect(verified.claims["preferred_username"] == "ada")
        #expect(!verified.description.contains(token))
    }

    @Test("a changed payload with the original signature is a bad signature")
    func tampered() async throws {
        let (key, _) = try TestIssuer.keys.get()
        let token = try await TestIssuer.sign(.init(), key: key, kid: "k1")
        let parts = token.split(separator: ".").map(String.init)
        let payload = Data(try #require(Base64URL.decode(parts[1])))
        var claims = try #require(try JSONValue(parsing: payload).objectValue)
        claims["sub"] = "u_mallory"
        let forged = [parts[0], Base64URL.encode(JSONValue.object(claims).jsonData()), parts[2]].joined(separator: ".")
        let verifier = TestIssuer.verifier(keySets: [try TestIssuer.jwks([(key, "k1")])])
        do {
            _ = try await verifier.verify(forged, nonce: "n-0S6_WzA2Mj")
            Issue.record("a forged token verified")
        } catch let error as AuthError {
            #expect(error.code == .idTokenBadSignature)
        }
        // The untouched token still verifies with the same verifier.
        _ = try await verifier.verify(token, nonce: "n-0S6_WzA2Mj")
    }

    @Test("a token signed by another key under a listed kid is a bad signature")
    func otherKey() async throws {
        let (key, other) = try TestIssuer.keys.get()
        let token = try await TestIssuer.sign(.init(), key: other, kid: "k1")
        let verifier = TestIssuer.verifier(keySets: [try TestIssuer.jwks([(key, "k1")])])
        do {
            _ = try await verifier.verify(token, nonce: "n-0S6_WzA2Mj")
            Issue.record("a token signed with an unlisted key verified")
        } catch let error as AuthError {
            #expect(error.code == .idTokenBadSignature)
        }
    }

    @Test("alg none and HMAC tokens are refused")
    func unsignedAlgorithms() async throws {
        let (key, _) = try TestIssuer.keys.get()
        let verifier = TestIssuer.verifier(keySets: [try TestIssuer.jwks([(key, "k1")])])
        let payload = Base64URL.encode(try JSONEncoder().encode(TestIssuer.Claims()))
        for alg in ["none", "HS256"] {
            let header = Base64URL.encode(Data(#"{"alg":"\#(alg)","kid":"k1","typ":"JWT"}"#.utf8))
            do {
                _ = try await verifier.verify("\(header).\(payload).", nonce: "n-0S6_WzA2Mj")
                Issue.record("alg \(alg) was accepted")
            } catch let error as AuthError {
                #expect(error.code == .idTokenBadSignature)
            }
        }
    }

    @Test("another issuer is refused")
    func wrongIssuer() async throws {
        var claims = TestIssuer.Claims()
        claims.iss = "https://evil.example"
        try await expectFailure(.idTokenWrongIssuer, claims)
    }

    @Test("another audience is refused, and so are several audiences without azp naming this client")
    func wrongAudience() async throws {
        var claims = TestIssuer.Claims()
        claims.aud = "someone-else"
        try await expectFailure(.idTokenWrongAudience, claims)
        claims.aud = [.string(TestIssuer.clientID), "someone-else"]
        try await expectFailure(.idTokenWrongAudience, claims)
        claims.azp = "someone-else"
        try await expectFailure(.idTokenWrongAudience, claims)
    }

    @Test("an expired token is refused beyond the leeway, accepted within it")
    func expired() async throws {
        var claims = TestIssuer.Claims()
        claims.exp = Int(TestIssuer.now.timeIntervalSince1970) - 61
        try await expectFailure(.idTokenExpired, claims)

        claims.exp = Int(TestIssuer.now.timeIntervalSince1970) - 30
        let (key, _) = try TestIssuer.keys.get()
        let token = try await TestIssuer.sign(claims, key: key, kid: "k1")
        let verifier = TestIssuer.verifier(keySets: [try TestIssuer.jwks([(key, "k1")])])
        _ = try await verifier.verify(token, nonce: "n-0S6_WzA2Mj")
    }

    @Test("a different or missing nonce is refused when one was sent")
    func nonceMismatch() async throws {
        try await expectFailure(.idTokenNonceMismatch, nonce: "another-nonce")
        var claims = TestIssuer.Claims()
        claims.nonce = nil
        try await expectFailure(.idTokenNonceMismatch, claims)
    }

    @Test("an at_hash for another access token is refused")
    func atHash() async throws {
        var claims = TestIssuer.Claims()
        claims.at_hash = IDTokenVerifier.accessTokenHash("opa_other", alg: "RS256")
        try await expectFailure(.idTokenAccessTokenMismatch, claims, accessToken: "opa_access")
    }

    @Test("a token lacking sub, or not a JWT, is invalid")
    func invalid() async throws {
        var claims = TestIssuer.Claims()
        claims.sub = nil
        try await expectFailure(.idTokenInvalid, claims)
        let verifier = TestIssuer.verifier(keySets: [Data(#"{"keys": []}"#.utf8)])
        do {
            _ = try await verifier.verify("not-a-jwt")
            Issue.record("garbage verified")
        } catch let error as AuthError {
            #expect(error.code == .idTokenInvalid)
        }
    }

    @Test("an unknown kid fetches the JWKS again once (a rotation); a kid still unknown is refused")
    func unknownKidRefetch() async throws {
        let (old, new) = try TestIssuer.keys.get()
        let before = try TestIssuer.jwks([(old, "k1")])
        let after = try TestIssuer.jwks([(new, "k2"), (old, "k1")])
        let fetches = Mutex(0)
        let verifier = IDTokenVerifier(
            issuer: TestIssuer.issuer, clientID: TestIssuer.clientID, now: { TestIssuer.now },
            keySet: {
                fetches.withLock {
                    $0 += 1
                    return $0 == 1 ? before : after
                }
            })
        _ = try await verifier.verify(try await TestIssuer.sign(.init(), key: old, kid: "k1"), nonce: "n-0S6_WzA2Mj")
        #expect(fetches.withLock { $0 } == 1)
        let rotated = try await verifier.verify(try await TestIssuer.sign(.init(), key: new, kid: "k2"), nonce: "n-0S6_WzA2Mj")
        #expect(rotated.claims.subject == "u_ada")
        #expect(fetches.withLock { $0 } == 2)
        // Known kids need no fetch.
        _ = try await verifier.verify(try await TestIssuer.sign(.init(), key: old, kid: "k1"), nonce: "n-0S6_WzA2Mj")
        #expect(fetches.withLock { $0 } == 2)
        do {
            _ = try await verifier.verify(try await TestIssuer.sign(.init(), key: new, kid: "k3"), nonce: "n-0S6_WzA2Mj")
            Issue.record("an unlisted kid verified")
        } catch let error as AuthError {
            #expect(error.code == .idTokenBadSignature)
            #expect(error.message.contains("k3"))
        }
        #expect(fetches.withLock { $0 } == 3)
    }

    @Test("a credential keeps its ID token through Codable, and its description shows no token")
    func credentialCodable() async throws {
        let (key, _) = try TestIssuer.keys.get()
        let token = try await TestIssuer.sign(.init(), key: key, kid: "k1")
        let credential = Credential(accessToken: "opa_secret", scopes: ["openid"], idToken: try IDToken(unverified: token))
        let decoded = try JSONDecoder().decode(Credential.self, from: try JSONEncoder().encode(credential))
        #expect(decoded == credential)
        #expect(decoded.idToken?.claims.subject == "u_ada")
        #expect(!credential.description.contains(token))
        #expect(!credential.description.contains("opa_secret"))
        // A credential stored before ID tokens existed still decodes.
        let old = try JSONDecoder().decode(
            Credential.self, from: Data(#"{"accessToken":"a","tokenType":"Bearer","scopes":[]}"#.utf8))
        #expect(old.idToken == nil)
    }

    @Test("ES256, EdDSA and PS256 tokens verify with their keys; a key of another type than alg never does")
    func otherAlgorithms() async throws {
        let (rsa, _) = try TestIssuer.keys.get()
        let p256 = P256.Signing.PrivateKey()
        let ed = Curve25519.Signing.PrivateKey()
        let point = p256.publicKey.rawRepresentation
        let primitives = try rsa.publicKey.getKeyPrimitives()
        let jwks = JSONValue.object([
            "keys": [
                try TestIssuer.jwk(rsa, kid: "rsa"),
                [
                    "kty": "EC", "crv": "P-256", "kid": "ec", "use": "sig",
                    "x": .string(Base64URL.encode(point.prefix(32))), "y": .string(Base64URL.encode(point.suffix(32))),
                ],
                ["kty": "OKP", "crv": "Ed25519", "kid": "ed", "x": .string(Base64URL.encode(ed.publicKey.rawRepresentation))],
                [
                    "kty": "RSA", "kid": "ps", "alg": "PS256", "n": .string(Base64URL.encode(primitives.modulus)),
                    "e": .string(Base64URL.encode(primitives.publicExponent)),
                ],
            ]
        ]).jsonData()
        let verifier = TestIssuer.verifier(keySets: [jwks])
        let es256 = try TestIssuer.compact(.init(), alg: "ES256", kid: "ec") {
            Array(try p256.signature(for: $0).rawRepresentation)
        }
        let eddsa = try TestIssuer.compact(.init(), alg: "EdDSA", kid: "ed") { Array(try ed.signature(for: $0)) }
        var psClaims = TestIssuer.Claims()
        psClaims.at_hash = IDTokenVerifier.accessTokenHash("opa_access", alg: "PS256")
        let ps256 = try await TestIssuer.sign(psClaims, key: rsa, kid: "ps", alg: "PS256")
        for token in [es256, eddsa, ps256] {
            let verified = try await verifier.verify(token, nonce: "n-0S6_WzA2Mj", accessToken: "opa_access")
            #expect(verified.claims.subject == "u_ada")
        }
        // The EC signature presented under the RSA key's kid, and an RS256 token under the EC kid.
        let parts = es256.split(separator: ".")
        let mislabeled = try TestIssuer.compact(.init(), alg: "ES256", kid: "rsa") { _ in
            Array(try #require(Base64URL.decode(parts[2])))
        }
        let rsUnderEC = try await TestIssuer.sign(.init(), key: rsa, kid: "ec")
        for token in [mislabeled, rsUnderEC] {
            do {
                _ = try await verifier.verify(token, nonce: "n-0S6_WzA2Mj")
                Issue.record("a token verified with a key of another type")
            } catch let error as AuthError {
                #expect(error.code == .idTokenBadSignature)
            }
        }
    }

    @Test("RSA keys under 2048 bits, and JWKS entries that are not keys, are skipped")
    func weakAndMalformedKeys() throws {
        let small: JSONValue = ["kty": "RSA", "n": .string(Base64URL.encode([UInt8](repeating: 0xC5, count: 128))), "e": "AQAB"]
        #expect(JSONWebKey(small) == nil)
        let (rsa, _) = try TestIssuer.keys.get()
        #expect(JSONWebKey(try TestIssuer.jwk(rsa, kid: "k1")) != nil)
        for entry: JSONValue in [
            ["kty": "RSA", "n": "%%%", "e": "AQAB"], ["kty": "EC", "crv": "P-256", "x": "AAAA", "y": "AAAA"],
            ["kty": "EC", "crv": "secp256k1", "x": "AAAA", "y": "AAAA"], ["kty": "oct", "k": "c2VjcmV0"], "not an object",
            ["kty": "OKP", "crv": "X25519", "x": .string(Base64URL.encode([UInt8](repeating: 9, count: 32)))],
        ] {
            #expect(JSONWebKey(entry) == nil, "\(entry)")
        }
    }

    @Test("the PKCS #1 DER of an RSA key, which Apple's Security reads, matches swift-crypto's encoding")
    func pkcs1DER() throws {
        let (one, two) = try TestIssuer.keys.get()
        for key in [one.publicKey, two.publicKey] {
            let primitives = try key.getKeyPrimitives()
            let built = RSASignatureCheck.pkcs1DER(modulus: Array(primitives.modulus), exponent: Array(primitives.publicExponent))
            #expect(built == Array(key.pkcs1DERRepresentation))
        }
        // Short forms: a high first bit gains a zero byte; leading zeros go.
        #expect(
            RSASignatureCheck.pkcs1DER(modulus: [0x80], exponent: [0, 0, 3]) == [
                0x30, 0x07, 0x02, 0x02, 0x00, 0x80, 0x02, 0x01, 0x03,
            ])
    }
}
