import AsyncHTTPClient
import Foundation
import Outpost
import OutpostServer
import Testing

/// A change stream lives as long as the token it was opened with: once that token is revoked or
/// expires, no more changes go out (a signed-in stream carries its owner's private records) and the
/// stream ends, so a client reconnects and is asked to sign in again.
// The time limit bounds a hang, not the speed: with every suite running at once on two cores, a
// test can wait over a minute for its turn.
@Suite("Change streams and their tokens", .closesWhatItOpens, .timeLimit(.minutes(3)))
struct ChangeStreamTokenTests {
    @Test("a revoked token's stream delivers nothing written after the revocation and ends")
    func revoked() async throws {
        try await withAuthFixture(configure: { $0.changes.heartbeatInterval = .milliseconds(200) }) { fixture in
            let http = ChangesIntegrationTests.rawClient()
            do {
                let streamToken = try #require(try await fixture.passwordTokens("ada")["access_token"] as? String)
                let writeToken = try #require(try await fixture.passwordTokens("ada")["access_token"] as? String)
                let url = fixture.base + "/records/diary/changes"
                let stream = try await RawEventStream.open(http, url, headers: [("Authorization", "Bearer \(streamToken)")])
                #expect(stream.status == 200)
                #expect(try await stream.next()?.event == "ready")
                func create(_ text: String) async throws -> String {
                    let reply = try await PrivateRecordsTests.send(
                        fixture.server.baseURL, .post, "/records/diary?visibility=private", token: writeToken,
                        body: ["text": .string(text)])
                    return try #require(try reply.json()["id"]?.stringValue)
                }
                let before = try await create("before")
                let first = try await stream.nextChange()
                #expect(first?.data.contains(before) == true, "the owner's private record arrives while the token holds")

                let revoked = try await fixture.browser.postForm(
                    fixture.base + "/oauth/revoke", ["token": streamToken, "client_id": fixture.publicClient.id])
                #expect(revoked.status == 200)
                let after = try await create("after the revocation")
                // Read to the end: the stream must close by itself, and never carry the later record.
                while let event = try await stream.next() {
                    #expect(!event.data.contains(after), "a change written after the revocation went out")
                }
                // Reconnecting with the revoked token is refused.
                let again = try await RawEventStream.open(http, url, headers: [("Authorization", "Bearer \(streamToken)")])
                #expect(again.status == 401)
            } catch {
                Issue.record(error)
            }
            try await http.shutdown()
        }
    }

    @Test("an expired token's stream ends at the next heartbeat")
    func expired() async throws {
        try await withAuthFixture(configure: {
            $0.changes.heartbeatInterval = .milliseconds(200)
            $0.auth.accessTokenLifetime = .seconds(1)
        }) { fixture in
            let http = ChangesIntegrationTests.rawClient()
            do {
                let token = try #require(try await fixture.passwordTokens("ada")["access_token"] as? String)
                let stream = try await RawEventStream.open(
                    http, fixture.base + "/records/diary/changes", headers: [("Authorization", "Bearer \(token)")])
                #expect(stream.status == 200)
                #expect(try await stream.next()?.event == "ready")
                // Heartbeats go on while the token holds; then the server closes the stream.
                #expect(try await stream.waitForHeartbeats(1))
                #expect(try await stream.readToEnd())
            } catch {
                Issue.record(error)
            }
            try await http.shutdown()
        }
    }

    @Test("an anonymous stream is not ended by token checks")
    func anonymous() async throws {
        try await withAuthFixture(configure: {
            $0.changes.heartbeatInterval = .milliseconds(100)
            $0.changes.maxStreamDuration = .milliseconds(600)
        }) { fixture in
            let http = ChangesIntegrationTests.rawClient()
            do {
                let stream = try await RawEventStream.open(http, fixture.base + "/records/diary/changes")
                #expect(try await stream.next()?.event == "ready")
                #expect(try await stream.readToEnd())
                // It lived to its time limit: at least a few heartbeats went out first.
                #expect(stream.heartbeats >= 3)
            } catch {
                Issue.record(error)
            }
            try await http.shutdown()
        }
    }
}
