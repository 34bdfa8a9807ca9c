import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Outpost
import OutpostServer
import OutpostTestSupport
import Testing

struct LiveNote: Entity, Equatable {
    static let resourcePath = "records/notes"
    var id: String?
    var text: String
}

/// `GET /records/{type}/changes` against the real server, through the SDK and as raw HTTP.
@Suite("Live changes", .closesWhatItOpens, .timeLimit(.minutes(2)))
struct ChangesIntegrationTests {
    /// Quick reconnects for tests: 20 ms at first, at most 200 ms apart.
    static let fastRetry = RetryPolicy(maxAttempts: 500, baseDelay: .milliseconds(20), maxDelay: .milliseconds(200))

    /// Collects a change sequence in the background; `stop()` cancels it.
    final class Subscriber: Sendable {
        let changes: AsyncStream<Result<EntityChange<LiveNote>, any Error>>
        let task: Task<Void, Never>

        init(_ store: EntityStore, after: String? = "0", limits: ServerSentEventParser.Limits = .init()) {
            let (changes, sink) = AsyncStream.makeStream(of: Result<EntityChange<LiveNote>, any Error>.self)
            self.changes = changes
            task = Task {
                do {
                    for try await change in store.changes(
                        of: LiveNote.self, after: after, retry: ChangesIntegrationTests.fastRetry, limits: limits)
                    {
                        sink.yield(.success(change))
                    }
                } catch {
                    sink.yield(.failure(error))
                }
                sink.finish()
            }
        }

        /// The next `count` changes (fails the test on an error or an early end).
        func take(_ count: Int, from iterator: inout AsyncStream<Result<EntityChange<LiveNote>, any Error>>.Iterator)
            async throws -> [EntityChange<LiveNote>]
        {
            var taken: [EntityChange<LiveNote>] = []
            while taken.count < count {
                guard let next = await iterator.next() else {
                    Issue.record("the change sequence ended after \(taken.count) of \(count) changes")
                    return taken
                }
                taken.append(try next.get())
            }
            return taken
        }
    }

    static func rawClient(connections: Int = 8) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: connections)
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    @Test("created, updated and deleted arrive in order with their versions; other types stay out")
    func deliveredInOrder() async throws {
        try await withLiveServer { _, client in
            let store = client.entities()
            let subscriber = Subscriber(store)
            defer { subscriber.task.cancel() }
            var note = try await store.push(LiveNote(text: "first"))
            _ = try await store.push(Person(name: "Not a note"))
            note.value.text = "second"
            note = try await store.patch(note)
            try await store.delete(note)
            var iterator = subscriber.changes.makeAsyncIterator()
            let changes = try await subscriber.take(3, from: &iterator)
            #expect(changes.map(\.kind) == [.created, .updated, .deleted])
            #expect(changes.map(\.version) == [1, 2, 2])
            #expect(changes.allSatisfy { $0.id == note.value.id })
            #expect(changes[0].entity?.value.text == "first")
            #expect(changes[1].entity?.value.text == "second")
            #expect(changes[1].entity?.etag == "\"v2\"")
            #expect(changes[2].entity == nil)
            let positions = changes.compactMap { Int($0.position) }
            #expect(positions == positions.sorted() && Set(positions).count == 3)
        }
    }

    @Test("a server restart mid-stream loses no change and repeats none, writes from another process included")
    func reconnectLosesNothing() async throws {
        let first = try await LiveServer.start()
        let database = first.folder.appendingPathComponent("test.sqlite").path
        let port = first.running.port
        let writer = OutpostClient(configuration: .init(baseURL: first.baseURL))
        let reader = OutpostClient(configuration: .init(baseURL: first.baseURL))
        var second: LiveServer?
        do {
            let subscriber = Subscriber(reader.entities())
            defer { subscriber.task.cancel() }
            var iterator = subscriber.changes.makeAsyncIterator()
            var written: [String] = []
            for index in 0..<10 {
                written.append(try #require(try await writer.entities().push(LiveNote(text: "before \(index)")).value.id))
            }
            var received = try await subscriber.take(10, from: &iterator)
            // Stopping ends the stream (graceful shutdown does not wait for it); the SDK starts reconnecting.
            await first.running.stop()
            // Meanwhile another process writes to the same database.
            let other = try await first.openStorage()
            for index in 0..<10 {
                written.append(
                    try await other.createRecord(type: "notes", fields: ["text": .string("offline \(index)")], owner: nil).id)
            }
            try await other.close()
            second = try await LiveServer.start { configuration in
                configuration.port = port
                configuration.databasePath = database
                first.shareDatabase(with: &configuration)
            }
            for index in 0..<10 {
                written.append(try #require(try await writer.entities().push(LiveNote(text: "after \(index)")).value.id))
            }
            received += try await subscriber.take(20, from: &iterator)
            #expect(received.map(\.id) == written)
            #expect(received.allSatisfy { $0.kind == .created })
            #expect(Set(received.map(\.position)).count == 30)
            #expect(received[10].entity?.value.text == "offline 0")
        } catch {
            Issue.record(error)
        }
        try? await writer.shutdown()
        try? await reader.shutdown()
        await second?.stop()
        await first.stop()
    }

    @Test("Last-Event-ID resumes a raw stream after the last event seen; it wins over ?after=")
    func lastEventIDResume() async throws {
        try await withLiveServer { server, client in
            let http = Self.rawClient()
            do {
                let store = client.entities()
                var ids: [String] = []
                for index in 0..<3 { ids.append(try #require(try await store.push(LiveNote(text: "n\(index)")).value.id)) }
                let url = server.baseURL.absoluteString + "/records/notes/changes"
                let stream = try await RawEventStream.open(http, url + "?after=0")
                #expect(stream.status == 200)
                #expect(stream.headers["content-type"] == "text/event-stream")
                let ready = try #require(try await stream.next())
                #expect(ready.event == "ready" && ready.id == "0")
                let firstEvent = try #require(try await stream.next())
                #expect(firstEvent.event == "created")
                let data = try JSONValue(parsing: Data(firstEvent.data.utf8))
                #expect(data["id"]?.stringValue == ids[0])
                #expect(data["change"] == "created" && data["version"] == 1)
                #expect(data["record"]?["text"] == "n0")
                let resumeAt = try #require(firstEvent.id)
                // Disconnected; two more are written meanwhile.
                for index in 3..<5 { ids.append(try #require(try await store.push(LiveNote(text: "n\(index)")).value.id)) }
                let resumed = try await RawEventStream.open(http, url + "?after=0", headers: [("Last-Event-ID", resumeAt)])
                #expect(try await resumed.next()?.id == resumeAt)
                var seen: [String] = []
                while seen.count < 4, let event = try await resumed.next() {
                    seen.append(try JSONValue(parsing: Data(event.data.utf8))["id"]?.stringValue ?? "")
                }
                #expect(seen == Array(ids[1...]))
                let bad = try await RawEventStream.open(http, url, headers: [("Last-Event-ID", "abc")])
                #expect(bad.status == 400)
                #expect(bad.errorBody.contains("invalid_position"))
                // A malformed ?after= is refused even when Last-Event-ID (which wins) is good.
                let badAfter = try await RawEventStream.open(http, url + "?after=", headers: [("Last-Event-ID", resumeAt)])
                #expect(badAfter.status == 400)
                #expect(badAfter.errorBody.contains("invalid_position"))
            } catch {
                Issue.record(error)
            }
            try await http.shutdown()
        }
    }

    @Test("a private record's changes reach its owner only; a token without records:read is refused")
    func privateChanges() async throws {
        try await withAuthFixture { fixture in
            let http = Self.rawClient()
            do {
                let ada = try #require(try await fixture.passwordTokens("ada")["access_token"] as? String)
                let bob = try #require(try await fixture.passwordTokens("bob")["access_token"] as? String)
                let url = fixture.base + "/records/diary/changes"
                let adaStream = try await RawEventStream.open(http, url, headers: [("Authorization", "Bearer \(ada)")])
                let bobStream = try await RawEventStream.open(http, url, headers: [("Authorization", "Bearer \(bob)")])
                let anonymous = try await RawEventStream.open(http, url)
                for stream in [adaStream, bobStream, anonymous] {
                    #expect(stream.status == 200)
                    #expect(try await stream.next()?.event == "ready")
                }
                let secret = try await PrivateRecordsTests.send(
                    fixture.server.baseURL, .post, "/records/diary?visibility=private", token: ada, body: ["text": "secret"])
                let open = try await PrivateRecordsTests.send(
                    fixture.server.baseURL, .post, "/records/diary", token: ada, body: ["text": "open"])
                let secretID = try #require(try secret.json()["id"]?.stringValue)
                let openID = try #require(try open.json()["id"]?.stringValue)
                func recordID(_ event: ServerSentEvent?) throws -> String? {
                    try event.flatMap { try JSONValue(parsing: Data($0.data.utf8))["id"]?.stringValue }
                }
                #expect(try recordID(try await adaStream.nextChange()) == secretID)
                #expect(try recordID(try await adaStream.nextChange()) == openID)
                // Others' first change is the public one: the private one was left out.
                #expect(try recordID(try await bobStream.nextChange()) == openID)
                #expect(try recordID(try await anonymous.nextChange()) == openID)

                let narrow = try await fixture.token([
                    "grant_type": "password", "username": "ada", "password": AuthFixture.password,
                    "client_id": fixture.publicClient.id, "scope": "profile",
                ])
                let profileOnly = try #require(narrow.json["access_token"] as? String)
                let refused = try await RawEventStream.open(http, url, headers: [("Authorization", "Bearer \(profileOnly)")])
                #expect(refused.status == 403)
                #expect(refused.errorBody.contains("insufficient_scope"))
            } catch {
                Issue.record(error)
            }
            try await http.shutdown()
        }
    }

    @Test("a position older than retention is 410 changes_expired; one never handed out is 410 unknown_position")
    func retention() async throws {
        try await withLiveServer { server, client in
            let store = client.entities()
            for index in 0..<3 { _ = try await store.push(LiveNote(text: "old \(index)")) }
            let storage = try #require(try await server.openStorage() as? any ChangeFeedStorage & Storage)
            // Everything written so far is older than a cutoff a minute ahead.
            let cutoff = Int64(Date().timeIntervalSince1970 * 1000) + 60_000
            let removed = try await storage.pruneChanges(writtenBefore: cutoff)
            let bounds = try await storage.changeBounds()
            try await storage.close()
            #expect(removed == 3)
            #expect(bounds.prunedThrough == 3 && bounds.latest == 3)

            var iterator = store.changes(of: LiveNote.self, after: "1", retry: Self.fastRetry).makeAsyncIterator()
            let error = await #expect(throws: OutpostError.self) { _ = try await iterator.next() }
            #expect(error?.status == 410)
            #expect(error?.serverCode == "changes_expired")

            let http = Self.rawClient()
            let url = server.baseURL.absoluteString + "/records/notes/changes"
            let ahead = try await RawEventStream.open(http, url + "?after=99")
            #expect(ahead.status == 410)
            #expect(ahead.errorBody.contains("unknown_position"))
            // From the newest pruned position on, nothing was lost: accepted.
            let current = try await RawEventStream.open(http, url + "?after=3")
            #expect(current.status == 200)
            #expect(try await current.next()?.id == "3")
            try await http.shutdown()
        }
    }

    @Test("past maxSubscribers a subscription is 503 too_many_subscribers; a stream outlives the idle timeout; stop ends it")
    func limitsAndTimeouts() async throws {
        let server = try await LiveServer.start { configuration in
            configuration.changes.maxSubscribers = 2
            configuration.changes.heartbeatInterval = .milliseconds(100)
            configuration.idleTimeout = .milliseconds(300)
        }
        let http = Self.rawClient()
        do {
            let url = server.baseURL.absoluteString + "/records/notes/changes"
            let one = try await RawEventStream.open(http, url)
            let two = try await RawEventStream.open(http, url)
            #expect(try await one.next()?.event == "ready")
            #expect(try await two.next()?.event == "ready")
            let three = try await RawEventStream.open(http, url)
            #expect(three.status == 503)
            #expect(three.errorBody.contains("too_many_subscribers"))
            #expect(three.headers["retry-after"] != nil)

            // Eight heartbeats span more than twice the idle timeout; the connection still delivers.
            #expect(try await one.waitForHeartbeats(8))
            let client = OutpostClient(configuration: .init(baseURL: server.baseURL))
            let note = try await client.entities().push(LiveNote(text: "late"))
            let event = try #require(try await one.nextChange())
            #expect(try JSONValue(parsing: Data(event.data.utf8))["id"]?.stringValue == note.value.id)
            try await client.shutdown()

            // A graceful stop ends open streams instead of waiting for them.
            let stopping = Task { await server.running.stop() }
            #expect(try await two.readToEnd())
            await stopping.value
        } catch {
            Issue.record(error)
        }
        try await http.shutdown()
        await server.stop()
    }

    @Test("maxStreamDuration ends a stream at a heartbeat; the client resumes with Last-Event-ID and misses nothing")
    func streamTimeLimit() async throws {
        let server = try await LiveServer.start { configuration in
            configuration.changes.heartbeatInterval = .milliseconds(100)
            configuration.changes.maxStreamDuration = .milliseconds(300)
        }
        let http = Self.rawClient()
        do {
            let url = server.baseURL.absoluteString + "/records/notes/changes"
            let stream = try await RawEventStream.open(http, url + "?after=0")
            let ready = try #require(try await stream.next())
            #expect(ready.event == "ready")
            // The server ends the stream by itself: reading to the end returns.
            #expect(try await stream.readToEnd())
            #expect(stream.heartbeats >= 1)
            let client = OutpostClient(configuration: .init(baseURL: server.baseURL))
            let note = try await client.entities().push(LiveNote(text: "after the limit"))
            try await client.shutdown()
            // Each resumed stream also ends after 300 ms, which a loaded machine can spend before the
            // change is read: resume again from the same position until it arrives (bounded).
            var event: ServerSentEvent?
            for _ in 0..<20 where event == nil {
                let resumed = try await RawEventStream.open(http, url, headers: [("Last-Event-ID", try #require(ready.id))])
                #expect(try await resumed.next()?.event == "ready")
                event = try await resumed.nextChange()
            }
            let change = try #require(event, "the change written after the limit never arrived")
            #expect(try JSONValue(parsing: Data(change.data.utf8))["id"]?.stringValue == note.value.id)
        } catch {
            Issue.record(error)
        }
        try await http.shutdown()
        await server.stop()
    }

    @Test("three hundred idle subscribers are held and /health still answers")
    func manyIdleSubscribers() async throws {
        try await withLiveServer(configure: { $0.changes.maxStreamsPerAddress = 400 }) { server, client in
            let http = Self.rawClient(connections: 400)
            do {
                let url = server.baseURL.absoluteString + "/records/notes/changes"
                let count = 300
                let (readies, ready) = AsyncStream.makeStream(of: Int.self)
                let received = try await withThrowingTaskGroup(of: String?.self) { group in
                    for _ in 0..<count {
                        group.addTask {
                            let stream = try await RawEventStream.open(http, url)
                            let first = try await stream.next()
                            ready.yield(stream.status == 200 && first?.event == "ready" ? 1 : 0)
                            let event = try await stream.nextChange()
                            return try event.flatMap { try JSONValue(parsing: Data($0.data.utf8))["id"]?.stringValue }
                        }
                    }
                    // Every subscriber is connected and idle.
                    var connected = 0
                    var seen = 0
                    for await flag in readies {
                        connected += flag
                        seen += 1
                        if seen == count { break }
                    }
                    #expect(connected == count)
                    let health = try await client.send(.get("/health"))
                    #expect(health.status == 200)
                    let note = try await client.entities().push(LiveNote(text: "to all"))
                    var ids: [String?] = []
                    for try await id in group { ids.append(id) }
                    return (note.value.id, ids)
                }
                #expect(received.1.count == count)
                #expect(received.1.allSatisfy { $0 == received.0 })
            } catch {
                Issue.record(error)
            }
            try await http.shutdown()
        }
    }

    @Test("a stream with an endless line or an endless event is refused by the client with a clear error")
    func maliciousStreams() async throws {
        for endlessLine in [true, false] {
            let (base, stop) = try await MaliciousEventServer.start(endlessLine: endlessLine)
            let client = OutpostClient(configuration: .init(baseURL: base))
            let limits = ServerSentEventParser.Limits(maxLineBytes: 64 * 1024, maxEventBytes: 64 * 1024)
            var iterator = client.entities().changes(of: LiveNote.self, retry: Self.fastRetry, limits: limits).makeAsyncIterator()
            let error = await #expect(throws: OutpostError.self) { _ = try await iterator.next() }
            #expect(error?.code == .responseTooLarge)
            #expect(
                error?.message.contains(endlessLine ? "line longer than 65536 bytes" : "more than 65536 bytes of data") == true)
            try await client.shutdown()
            await stop()
        }
    }
}

/// Serves `/records/notes/changes` as an event stream that never ends its line (or its event).
enum MaliciousEventServer {
    static func start(endlessLine: Bool) async throws -> (URL, @Sendable () async -> Void) {
        let router = Router()
        router.get("/records/notes/changes") { _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: "text/event-stream"],
                body: ResponseBody { writer in
                    try await writer.write(ByteBuffer(string: "id: 0\nevent: ready\ndata: {}\n\ndata: "))
                    let piece = ByteBuffer(string: String(repeating: endlessLine ? "x" : "data: x\n", count: 1024))
                    // Up to 4 MiB (far beyond the client's limits), or until the client hangs up.
                    for _ in 0..<(4 << 20) / piece.readableBytes {
                        try await writer.write(piece)
                    }
                    try await writer.finish(nil)
                })
        }
        return try await LocalApplication.start(router, label: "malicious-event-server")
    }
}
