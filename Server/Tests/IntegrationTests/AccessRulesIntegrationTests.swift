import AsyncHTTPClient
import Foundation
import HTTPTypes
import Outpost
import OutpostServer
import OutpostTestSupport
import Testing

/// Access rules on a live server: the secure defaults, `--rules` at start, and the change feed.
@Suite("Access rules on a live server", .closesWhatItOpens, .timeLimit(.minutes(2)))
struct AccessRulesIntegrationTests {
    /// The defaults only: the test server's permissive rules taken away.
    static func defaults(_ configuration: inout ServerConfiguration) {
        configuration.accessRules = AccessRuleSet()
        configuration.accessRulesMaxAge = .zero
    }

    @Test("a fresh server refuses anonymous writes: 401 sign_in_required with WWW-Authenticate; signed in, they work")
    func anonymousWritesRefused() async throws {
        try await withAuthFixture(configure: Self.defaults) { fixture in
            let base = fixture.server.baseURL
            let anonymous = try await PrivateRecordsTests.send(base, .post, "/records/notes", body: ["text": "hi"])
            #expect(anonymous.status == 401)
            #expect(anonymous.headerFields[.wwwAuthenticate] == "Bearer")
            let error = try anonymous.json()["error"]
            #expect(error?["code"] == "sign_in_required")
            #expect(error?["message"]?.stringValue?.contains("outpost rules set notes create true") == true)
            let ada = try #require(try await fixture.passwordTokens("ada")["access_token"] as? String)
            let created = try await PrivateRecordsTests.send(base, .post, "/records/notes", token: ada, body: ["text": "hi"])
            #expect(created.status == 201)
            let id = try #require(try created.json()["id"]?.stringValue)
            let patch = try await PrivateRecordsTests.send(base, .patch, "/records/notes/\(id)", body: ["text": "x"])
            #expect(patch.status == 403)
            #expect(try patch.json()["error"]?["details"]?["rule"] == "notes.update")
            #expect(try await PrivateRecordsTests.send(base, .get, "/records/notes/\(id)").status == 200)
        }
    }

    @Test("configuration.accessRules (serve --rules) replaces the stored rules at start")
    func rulesAtStart() async throws {
        let rules = try AccessRuleSet(json: Data(#"{"types": {"guestbook": {"create": "request.body.message != null"}}}"#.utf8))
        try await withAuthFixture(configure: { $0.accessRules = rules }) { fixture in
            let base = fixture.server.baseURL
            let signed = try await PrivateRecordsTests.send(base, .post, "/records/guestbook", body: ["message": "hello"])
            #expect(signed.status == 201)
            let empty = try await PrivateRecordsTests.send(base, .post, "/records/guestbook", body: ["text": "no message"])
            #expect(empty.status == 403)
            // The test server's permissive `*` rules were replaced: other types have the defaults.
            #expect(try await PrivateRecordsTests.send(base, .post, "/records/notes", body: ["a": 1]).status == 401)
            let stored = try await fixture.withStorage { try await $0.rules() }
            #expect(stored.map { "\($0.type).\($0.operation)" } == ["guestbook.create"])
        }
    }

    @Test("a subscriber never sees a change the subscribe rule refuses; a changed rule applies to an open stream")
    func changeFeed() async throws {
        try await withAuthFixture(configure: Self.defaults) { fixture in
            let http = ChangesIntegrationTests.rawClient()
            do {
                let base = fixture.server.baseURL
                let ada = try #require(try await fixture.passwordTokens("ada")["access_token"] as? String)
                let url = fixture.base + "/records/diary/changes"
                let adaStream = try await RawEventStream.open(http, url, headers: [("Authorization", "Bearer \(ada)")])
                let anonymous = try await RawEventStream.open(http, url)
                for stream in [adaStream, anonymous] { #expect(try await stream.next()?.event == "ready") }
                func recordID(_ event: ServerSentEvent?) throws -> String? {
                    try event.flatMap { try JSONValue(parsing: Data($0.data.utf8))["id"]?.stringValue }
                }
                func create(_ text: String) async throws -> String {
                    let reply = try await PrivateRecordsTests.send(
                        base, .post, "/records/diary", token: ada, body: ["text": .string(text)])
                    return try #require(try reply.json()["id"]?.stringValue)
                }
                try await fixture.withStorage {
                    try await $0.setRule(type: "diary", operation: "subscribe", expression: "caller.signed_in")
                }
                let hidden = try await create("for signed-in subscribers")
                #expect(try recordID(try await adaStream.nextChange()) == hidden)
                try await Task.sleep(for: .milliseconds(300))  // the anonymous stream has skipped it by now
                _ = try await fixture.withStorage { try await $0.removeRule(type: "diary", operation: "subscribe") }
                let open = try await create("for everyone")
                #expect(try recordID(try await adaStream.nextChange()) == open)
                #expect(try recordID(try await anonymous.nextChange()) == open, "the anonymous stream skipped the first change")
                // A read rule hides changes too.
                try await fixture.withStorage {
                    try await $0.setRule(type: "diary", operation: "read", expression: #"record.text != "secret""#)
                }
                let secret = try await create("secret")
                let shown = try await create("shown")
                #expect(try recordID(try await adaStream.nextChange()) == shown, "\(secret) is hidden from its owner too")
                #expect(try recordID(try await anonymous.nextChange()) == shown)
            } catch {
                Issue.record(error)
            }
            try await http.shutdown()
        }
    }
}
