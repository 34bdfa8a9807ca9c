import AsyncHTTPClient
import Foundation
import OutpostServer
import Testing

/// One caller cannot take every change stream: places are bounded per address (anonymous), per
/// user, and anonymous streams in all, so a signed-in user always finds one.
// The time limit bounds a hang, not the speed: with every suite running at once on two cores, a
// test can wait over a minute for its turn.
@Suite("Change stream places per caller", .closesWhatItOpens, .timeLimit(.minutes(3)))
struct ChangeStreamLimitsTests {
    @Test("an address holds at most its anonymous streams, then 429; a signed-in user still subscribes")
    func perCaller() async throws {
        try await withAuthFixture(configure: {
            $0.changes.maxStreamsPerAddress = 3
            $0.changes.maxStreamsPerUser = 2
        }) { fixture in
            let http = ChangesIntegrationTests.rawClient()
            do {
                let url = fixture.base + "/records/notes/changes"
                var open: [RawEventStream] = []
                for _ in 0..<3 {
                    let stream = try await RawEventStream.open(http, url)
                    #expect(stream.status == 200)
                    #expect(try await stream.next()?.event == "ready")
                    open.append(stream)
                }
                let refused = try await RawEventStream.open(http, url)
                #expect(refused.status == 429)
                #expect(refused.errorBody.contains("too_many_streams"))
                #expect(refused.headers["retry-after"] != nil)

                let ada = try #require(try await fixture.passwordTokens("ada")["access_token"] as? String)
                for expected in [200, 200, 429] {
                    let stream = try await RawEventStream.open(http, url, headers: [("Authorization", "Bearer \(ada)")])
                    #expect(stream.status == expected)
                    if expected == 200 { #expect(try await stream.next()?.event == "ready") }
                }
                let bob = try #require(try await fixture.passwordTokens("bob")["access_token"] as? String)
                let bobStream = try await RawEventStream.open(http, url, headers: [("Authorization", "Bearer \(bob)")])
                #expect(bobStream.status == 200, "another user is not held back by ada's streams")
            } catch {
                Issue.record(error)
            }
            try await http.shutdown()
        }
    }
}
