import Crypto
import Foundation
import JWTKit
import Testing

@testable import OutpostServer

@Suite("Upstream providers: nonces, Apple's client secret, provider checks")
struct FederationUnitTests {
    @Test("the nonce: raw for OpenID Connect providers, SHA-256 hex for Apple; missing or different refused")
    func nonces() throws {
        try UpstreamTokenVerifier.checkNonce("abc", claim: "abc", kind: .openID)
        let hash = SHA256.hash(data: Data("abc".utf8)).map { String(format: "%02x", $0) }.joined()
        try UpstreamTokenVerifier.checkNonce("abc", claim: hash, kind: .apple)
        #expect(throws: OAuthError.self) { try UpstreamTokenVerifier.checkNonce("abc", claim: hash, kind: .openID) }
        #expect(throws: OAuthError.self) { try UpstreamTokenVerifier.checkNonce("abc", claim: "abc", kind: .apple) }
        #expect(throws: OAuthError.self) { try UpstreamTokenVerifier.checkNonce(nil, claim: "abc", kind: .openID) }
        #expect(throws: OAuthError.self) { try UpstreamTokenVerifier.checkNonce("abc", claim: nil, kind: .openID) }
    }

    @Test("Apple's client secret: ES256 with kid, iss the team, sub the client id, aud appleid.apple.com, at most six months")
    func appleClientSecret() async throws {
        let key = ES256PrivateKey()
        let secret = AppleClientSecret(teamID: "TEAM123456", keyID: "KEY1234567", privateKeyPEM: key.pemRepresentation)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let token = try await secret.make(clientID: "com.example.app", now: now, lifetime: 400 * 86400)
        let header =
            try JSONSerialization.jsonObject(
                with: Data(base64URL: String(token.split(separator: ".")[0]))) as? [String: Any]
        #expect(header?["alg"] as? String == "ES256")
        #expect(header?["kid"] as? String == "KEY1234567")
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: key.publicKey, kid: JWKIdentifier(string: "KEY1234567"))
        let claims = try await keys.unverified(token, as: AppleClientSecret.Claims.self)
        _ = try await keys.verify(token, as: Unchecked.self)
        #expect(claims.iss.value == "TEAM123456")
        #expect(claims.sub.value == "com.example.app")
        #expect(claims.aud.value == ["https://appleid.apple.com"])
        #expect(claims.exp.value.timeIntervalSince(now) == AppleClientSecret.longestLifetime)
        // Signed with another key: the check fails.
        let other = JWTKeyCollection()
        await other.add(ecdsa: ES256PrivateKey().publicKey, kid: JWKIdentifier(string: "KEY1234567"))
        await #expect(throws: JWTError.self) { try await other.verify(token, as: Unchecked.self) }
    }

    @Test("providers: names, https issuers (http to loopback only), client ids and Apple's key are checked")
    func validation() async throws {
        func provider(
            name: String = "google", issuer: String = "https://accounts.google.com", clientIDs: [String] = ["a"],
            apple: (String?, String?, String?) = (nil, nil, nil)
        ) -> UpstreamProvider {
            UpstreamProvider(
                name: name, issuer: issuer, kind: .openID, clientIDs: clientIDs, appleTeamID: apple.0, appleKeyID: apple.1,
                applePrivateKeyPEM: apple.2, createdAt: 0)
        }
        _ = try await provider().validated()
        _ = try await provider(issuer: "http://127.0.0.1:8080/o").validated()
        for bad in [
            provider(name: "bad name"), provider(issuer: "http://accounts.google.com"), provider(issuer: "ftp://x"),
            provider(issuer: "https://x.example/?q=1"), provider(clientIDs: []), provider(clientIDs: [""]),
            provider(apple: ("TEAM", nil, nil)), provider(apple: ("TEAM", "KEY", "not a key")),
        ] {
            await #expect(throws: ServerError.self) { try await bad.validated() }
        }
        _ = try await provider(apple: ("TEAM", "KEY", ES256PrivateKey().pemRepresentation)).validated()
    }

    struct Unchecked: JWTPayload {
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }
}

extension Data {
    fileprivate init(base64URL text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        self = Data(base64Encoded: base64) ?? Data()
    }
}
