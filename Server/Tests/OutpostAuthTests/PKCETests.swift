import Foundation
import Testing

@testable import OutpostAuth

@Suite("PKCE and credentials")
struct PKCETests {
    @Test("the RFC 7636 appendix B example")
    func rfcExample() throws {
        let pkce = try PKCE(verifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
        #expect(pkce.challenge == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
        #expect(pkce.method == "S256")
    }

    @Test("generated verifiers are 43 unreserved characters and differ")
    func generated() {
        let first = PKCE()
        let second = PKCE()
        #expect(first.verifier.count == 43)
        #expect(first.verifier != second.verifier)
        #expect((try? PKCE(verifier: first.verifier))?.challenge == first.challenge)
    }

    @Test(
        "bad verifiers are refused",
        arguments: ["short", String(repeating: "a", count: 129), String(repeating: "a", count: 42) + "!"])
    func badVerifier(verifier: String) {
        #expect(throws: AuthError.self) { try PKCE(verifier: verifier) }
    }

    @Test("a credential's description never shows its tokens")
    func redacted() {
        let credential = Credential(
            accessToken: "at-secret-123", refreshToken: "rt-secret-456", expiresAt: Date(timeIntervalSince1970: 0))
        #expect(!credential.description.contains("secret"))
        #expect(credential.expires(within: 60, of: Date(timeIntervalSince1970: -30)))
        #expect(!credential.expires(within: 60, of: Date(timeIntervalSince1970: -120)))
    }

    @Test("the in-memory store saves, loads and removes")
    func store() async {
        let store = InMemoryCredentialStore()
        await store.save(Credential(accessToken: "a"), account: "me")
        #expect(await store.load(account: "me")?.accessToken == "a")
        await store.remove(account: "me")
        #expect(await store.load(account: "me") == nil)
    }
}
