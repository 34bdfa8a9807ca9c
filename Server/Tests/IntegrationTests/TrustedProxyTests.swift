import Foundation
import OutpostServer
import Testing

/// The sign-in limiter behind a reverse proxy (`--trusted-proxy`): the test client stands in for
/// the proxy on 127.0.0.1 and writes `X-Forwarded-For` itself (the nginx CI script runs a real one).
@Suite("Trusted proxies on a live server", .closesWhatItOpens, .timeLimit(.minutes(2)))
struct TrustedProxyTests {
    static func limits(_ configuration: inout ServerConfiguration) {
        configuration.auth.attemptsPerAccount = 3
        configuration.auth.attemptsPerAddress = 5
    }

    static func attempt(_ fixture: AuthFixture, _ password: String, forwardedFor: String?) async throws -> Int {
        try await fixture.browser.postForm(
            fixture.base + "/oauth/token",
            [
                "grant_type": "password", "username": "ada", "password": password, "client_id": fixture.publicClient.id,
            ],
            headers: forwardedFor.map { ["X-Forwarded-For": $0] } ?? [:]
        ).status
    }

    @Test("from a trusted proxy, clients are limited apart, and the owner is not locked out by another address")
    func trusted() async throws {
        try await withAuthFixture(configure: {
            Self.limits(&$0)
            $0.trustedProxies = TrustedProxies(networks: [IPNetwork("127.0.0.1/32")!])
        }) { fixture in
            var statuses: [Int] = []
            for _ in 0..<4 { statuses.append(try await Self.attempt(fixture, "guess", forwardedFor: "198.51.100.1")) }
            #expect(statuses == [400, 400, 400, 429])
            // The same account from another client behind the proxy: not locked.
            #expect(try await Self.attempt(fixture, AuthFixture.password, forwardedFor: "198.51.100.2") == 200)
            // What a client writes left of the address the proxy appended does not move it.
            #expect(try await Self.attempt(fixture, "guess", forwardedFor: "198.51.100.2, 198.51.100.1") == 429)
            // A header that does not parse: the proxy's own address, which has no failures yet.
            #expect(try await Self.attempt(fixture, AuthFixture.password, forwardedFor: "not an address") == 200)
        }
    }

    @Test("from an untrusted peer, a forged X-Forwarded-For changes nothing")
    func untrusted() async throws {
        try await withAuthFixture(configure: {
            Self.limits(&$0)
            $0.trustedProxies = TrustedProxies(networks: [IPNetwork("10.0.0.0/8")!, IPNetwork("::1/128")!])
        }) { fixture in
            var statuses: [Int] = []
            for index in 0..<4 {
                statuses.append(try await Self.attempt(fixture, "guess", forwardedFor: "198.51.100.\(index + 10)"))
            }
            #expect(statuses == [400, 400, 400, 429])
            #expect(try await Self.attempt(fixture, AuthFixture.password, forwardedFor: "203.0.113.99") == 429)
        }
    }
}
