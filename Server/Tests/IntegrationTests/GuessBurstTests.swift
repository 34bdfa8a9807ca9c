import Foundation
import OutpostServer
import Testing

/// Password guesses that arrive all at once, as a script sends them: no more than the limit is ever
/// checked, and a burst from one address is refused rather than queued in front of everyone else.
@Suite("Guessing bursts", .closesWhatItOpens, .timeLimit(.minutes(2)))
struct GuessBurstTests {
    /// A password grant for `username` from `address` (the test client stands in for a trusted proxy).
    static func attempt(_ fixture: AuthFixture, _ username: String, _ password: String, from address: String) async throws
        -> TestBrowser.Page
    {
        try await fixture.browser.postForm(
            fixture.base + "/oauth/token",
            [
                "grant_type": "password", "username": username, "password": password, "client_id": fixture.publicClient.id,
            ],
            headers: ["X-Forwarded-For": address])
    }

    @Test("60 wrong passwords at once: at most the account's limit is checked, the rest are 429 with Retry-After")
    func burst() async throws {
        try await withAuthFixture(configure: {
            $0.trustedProxies = TrustedProxies(networks: [IPNetwork("127.0.0.1/32")!])
            $0.auth.attemptsPerAccount = 10
            // Every check may run: the guessing limit alone decides here.
            $0.auth.passwordChecksPerAddress = 64
            $0.auth.passwordChecksWaiting = 64
        }) { fixture in
            let pages = try await withThrowingTaskGroup(of: TestBrowser.Page.self) { group in
                for _ in 0..<60 { group.addTask { try await Self.attempt(fixture, "ada", "guess", from: "198.51.100.7") } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let checked = pages.filter { $0.status == 400 }.count
            let limited = pages.filter { $0.status == 429 }
            #expect(checked == 10, "checked \(checked) guesses; the limit is 10")
            #expect(limited.count == 50)
            #expect(limited.allSatisfy { $0.header("Retry-After") != nil })
            // The owner, from elsewhere, is not locked out.
            #expect(try await Self.attempt(fixture, "ada", AuthFixture.password, from: "198.51.100.8").status == 200)
        }
    }

    @Test("a burst from one address holds at most its share of the password checks; another user signs in during it")
    func fairness() async throws {
        try await withAuthFixture(configure: {
            $0.trustedProxies = TrustedProxies(networks: [IPNetwork("127.0.0.1/32")!])
            $0.auth.attemptsPerAccount = 1000
            $0.auth.attemptsPerAddress = 1000
            $0.auth.passwordChecksPerAddress = 2
        }) { fixture in
            let (burst, other) = try await withThrowingTaskGroup(of: (Int, Int?).self) { group in
                for _ in 0..<40 {
                    group.addTask { (try await Self.attempt(fixture, "ada", "guess", from: "198.51.100.9").status, nil) }
                }
                group.addTask { (0, try await Self.attempt(fixture, "bob", AuthFixture.password, from: "203.0.113.5").status) }
                var burst: [Int] = []
                var other: Int?
                for try await (status, own) in group {
                    if let own { other = own } else { burst.append(status) }
                }
                return (burst, other)
            }
            #expect(other == 200, "the other user's sign-in was refused or failed: \(String(describing: other))")
            let checked = burst.filter { $0 == 400 }.count
            #expect(burst.filter { $0 == 429 }.count + checked == 40)
            #expect(
                checked >= 1 && checked < 40, "a burst of 40 from one address was all checked (\(checked)): nothing bounds it")
        }
    }
}
