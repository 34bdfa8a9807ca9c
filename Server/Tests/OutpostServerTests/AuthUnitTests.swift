import Foundation
import Logging
import OutpostTestSupport
import Testing

@testable import OutpostServer

@Suite("application/x-www-form-urlencoded, bounded", .closesWhatItOpens)
struct URLEncodedFormTests {
    @Test("+ is a space, %XX a byte, UTF-8 decoded; a lone % stays")
    func decoding() throws {
        let fields = try URLEncodedForm.parse(
            "scope=records+profile&state=two%20words&name=%C3%A9t%C3%A9&odd=100%&k=a=b&&=&flag".utf8)
        #expect(fields["scope"] == "records profile")
        #expect(fields["state"] == "two words")
        #expect(fields["name"] == "été")
        #expect(fields["odd"] == "100%")
        #expect(fields["k"] == "a=b")
        #expect(fields["flag"] == "")
        #expect(fields.count == 6)
        #expect(try URLEncodedForm.parse("a%2Bb=c%2Bd".utf8) == ["a+b": "c+d"])
    }

    @Test("more than the limit, or a repeated name, is a 400")
    func bounds() throws {
        let many = (0..<257).map { "p\($0)=1" }.joined(separator: "&")
        let tooMany = try #require(throws: ServerError.self) { _ = try URLEncodedForm.parse(many.utf8) }
        #expect(tooMany.status == .badRequest)
        #expect(tooMany.code == "too_many_parameters")
        #expect(try URLEncodedForm.parse((0..<256).map { "p\($0)=1" }.joined(separator: "&").utf8).count == 256)
        let repeated = try #require(throws: ServerError.self) { _ = try URLEncodedForm.parse("a=1&a=2".utf8) }
        #expect(repeated.code == "duplicate_parameter")
    }

    @Test("a large body with many pairs stops at the limit instead of building them all")
    func largeInput() throws {
        let body = String(repeating: "x=1&", count: 250_000)
        let error = try #require(throws: ServerError.self) { _ = try URLEncodedForm.parse(body.utf8) }
        #expect(error.code == "duplicate_parameter")
        let distinct = (0..<100_000).map { "k\($0)=v" }.joined(separator: "&")
        #expect(throws: ServerError.self) { _ = try URLEncodedForm.parse(distinct.utf8) }
    }
}

@Suite("Scopes and PKCE verifiers", .closesWhatItOpens)
struct ScopeTests {
    @Test("the old records scope means records:read and records:write")
    func legacy() {
        #expect(Scope.expand("records profile") == ["records", "records:read", "records:write", "profile"])
        #expect(Scope.expand("records:read") == ["records:read"])
        #expect(Scope.describe("records:write") == "Create, change and delete your records")
    }

    @Test("a verifier is 43–128 unreserved characters")
    func verifiers() {
        #expect(OAuthRoutes.isValidVerifier(String(repeating: "a", count: 43)))
        #expect(OAuthRoutes.isValidVerifier(String(repeating: "A-._~9", count: 21)))
        #expect(!OAuthRoutes.isValidVerifier(String(repeating: "a", count: 42)))
        #expect(!OAuthRoutes.isValidVerifier(String(repeating: "a", count: 129)))
        #expect(!OAuthRoutes.isValidVerifier(String(repeating: "a", count: 42) + "+"))
    }
}

@Suite("Sign-in rate limits", .closesWhatItOpens)
struct AttemptLimiterTests {
    @Test("an attacker at one address does not lock the owner out at another")
    func ownerNotLockedOut() async throws {
        try await AuthServiceFixture.with(configure: { $0.attemptsPerAccount = 3 }) { storage, auth in
            try await Self.check(storage, auth)
        }
    }

    static func check(_ storage: SQLiteStorage, _ auth: AuthService) async throws {
        var outcomes: [String] = []
        for _ in 0..<5 {
            do {
                _ = try await auth.verifyPassword(username: "ada", password: "guess", address: "203.0.113.9")
                outcomes.append("ok")
            } catch AuthFailure.badCredentials {
                outcomes.append("wrong")
            } catch AuthFailure.rateLimited {
                outcomes.append("wait")
            }
        }
        #expect(outcomes == ["wrong", "wrong", "wrong", "wait", "wait"])
        let owner = try await auth.verifyPassword(username: "ADA", password: "correct horse", address: "198.51.100.7")
        #expect(owner.username == "ada")
        // Refused attempts were not counted: exactly the three failures are stored for the attacker's pair.
        let key = Secrets.hash("signin:ada|203.0.113.9")
        #expect(try await storage.failures(key: key, since: 0).count == 3)
    }
}
