import AsyncHTTPClient
import Foundation
import Logging
import Outpost
import OutpostServer
import OutpostServerTesting
import OutpostTestSupport
import Testing

/// The change feed with several servers on one PostgreSQL database. The instances never poll the
/// database for changes (a poll interval of an hour): only PostgreSQL's notifications, or a
/// listener that reconnects, can bring them a change written through another instance.
@Suite("Change feed across PostgreSQL instances", .closesWhatItOpens, .serialized, .timeLimit(.minutes(2)))
struct ChangeFeedInstancesTests {
    static let enabled = ScratchDatabase.postgresBase != nil || ScratchDatabase.postgresRequired

    struct Instance {
        let running: RunningServer
        let client: OutpostClient
        var store: EntityStore { client.entities() }
    }

    /// `count` servers on one fresh PostgreSQL database, each with its own client; all stopped afterwards.
    static func withInstances(_ count: Int, _ body: ([Instance], ScratchDatabase) async throws -> Void) async throws {
        let scratch = try await ScratchDatabase.make(.postgres)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-instances-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var instances: [Instance] = []
        do {
            for index in 0..<count {
                var logger = Logger(label: "outpost.test.instance\(index)")
                logger.logLevel = .critical
                var configuration = ServerConfiguration(
                    host: "127.0.0.1", port: 0, databasePath: folder.appendingPathComponent("unused.sqlite").path,
                    logger: logger)
                configuration.storageFactory = { [logger] in try await scratch.location.open(logger: logger) }
                configuration.changes.pollInterval = .seconds(3600)
                configuration.accessRules = try LiveServer.permissiveRules()
                let running = try await OutpostServer(configuration: configuration).start()
                instances.append(
                    Instance(running: running, client: OutpostClient(configuration: .init(baseURL: running.baseURL))))
            }
            try await body(instances, scratch)
        } catch {
            Issue.record(error)
        }
        for instance in instances {
            try? await instance.client.shutdown()
            await instance.running.stop()
        }
        await scratch.remove()
        try? FileManager.default.removeItem(at: folder)
    }

    @Test(
        "a subscriber on A sees B's create, patch and delete in order; C resumes from Last-Event-ID without loss or repeats",
        .enabled(if: enabled))
    func acrossInstances() async throws {
        try await Self.withInstances(3) { instances, _ in
            let (a, b, c) = (instances[0], instances[1], instances[2])
            // The subscriber is live once it has the first note (written through A itself).
            let marker = try await a.store.push(LiveNote(text: "marker"))
            let subscriber = ChangesIntegrationTests.Subscriber(a.store)
            var iterator = subscriber.changes.makeAsyncIterator()
            #expect(try await subscriber.take(1, from: &iterator).map(\.id) == [marker.id])

            let created = try await b.store.push(LiveNote(text: "one"))
            var patched = created
            patched.value.text = "two"
            patched = try await b.store.patch(patched)
            try await b.store.delete(patched)
            let seen = try await subscriber.take(3, from: &iterator)
            subscriber.task.cancel()
            #expect(seen.map(\.kind) == [.created, .updated, .deleted])
            #expect(seen.allSatisfy { $0.id == created.id })
            #expect(seen.map(\.version) == [1, 2, 2])
            #expect(seen[1].entity?.value.text == "two")
            let resumeAt = try #require(seen.last?.position)

            // While nobody listens, B writes two more; C resumes after the last change A delivered.
            let later = try await b.store.push(LiveNote(text: "later"))
            var laterPatched = later
            laterPatched.value.text = "later, patched"
            _ = try await b.store.patch(laterPatched)
            let http = ChangesIntegrationTests.rawClient()
            do {
                let stream = try await RawEventStream.open(
                    http, c.running.baseURL.absoluteString + "/records/notes/changes",
                    headers: [("Last-Event-ID", resumeAt)])
                #expect(stream.status == 200)
                #expect(try await stream.next()?.id == resumeAt)
                var events: [(id: String?, event: String, note: String?)] = []
                for _ in 0..<2 {
                    let event = try #require(try await stream.nextChange())
                    events.append((event.id, event.event, try JSONValue(parsing: Data(event.data.utf8))["id"]?.stringValue))
                }
                // And a write through A reaches the stream on C.
                let fromA = try await a.store.push(LiveNote(text: "from A"))
                let last = try #require(try await stream.nextChange())
                events.append((last.id, last.event, try JSONValue(parsing: Data(last.data.utf8))["id"]?.stringValue))
                #expect(events.map(\.event) == ["created", "updated", "created"])
                #expect(events.map(\.note) == [later.id, later.id, fromA.id])
                let positions = events.compactMap { $0.id.flatMap { Int64($0) } }
                #expect(positions.count == 3)
                #expect(zip([Int64(resumeAt) ?? 0] + positions, positions).allSatisfy { $0 < $1 })
            } catch {
                Issue.record(error)
            }
            try await http.shutdown()
        }
    }

    @Test(
        "after every instance's listening connection is cut, changes written meanwhile and later still arrive",
        .enabled(if: enabled))
    func listenerReconnects() async throws {
        try await Self.withInstances(2) { instances, scratch in
            let (a, b) = (instances[0], instances[1])
            let marker = try await a.store.push(LiveNote(text: "marker"))
            let subscriber = ChangesIntegrationTests.Subscriber(a.store)
            defer { subscriber.task.cancel() }
            var iterator = subscriber.changes.makeAsyncIterator()
            #expect(try await subscriber.take(1, from: &iterator).map(\.id) == [marker.id])
            // A note from B reaching A shows that A's listener is up.
            let warm = try await b.store.push(LiveNote(text: "warm"))
            #expect(try await subscriber.take(1, from: &iterator).map(\.id) == [warm.id])

            #expect(try await scratch.terminateChangeListeners() >= 1)
            // Written while A listens on no connection (or just after it listens again): A reads it
            // when its listener is back, from the subscriber's own position.
            let during = try await b.store.push(LiveNote(text: "during"))
            #expect(try await subscriber.take(1, from: &iterator).map(\.id) == [during.id])
            // And A's new listening connection hears later commits.
            let after = try await b.store.push(LiveNote(text: "after"))
            #expect(try await subscriber.take(1, from: &iterator).map(\.id) == [after.id])
        }
    }
}
