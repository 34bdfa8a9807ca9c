import Foundation
import Outpost
import OutpostTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The outbox against the real server: writes queued while it is down land once it is back, lost
/// replies are not applied twice, and a replay killed with SIGKILL and restarted lands every write
/// exactly once.
@Suite("Outbox against the server", .closesWhatItOpens)
struct OutboxIntegrationTests {
    struct Note: Entity, Equatable {
        static let resourcePath = "records/outbox-notes"
        var id: String?
        var text: String
        var tags: [String] = []
    }

    static func journal(in server: LiveServer) -> URL {
        server.folder.appendingPathComponent("outbox-\(UUID().uuidString).journal")
    }

    static func open(_ url: URL, _ client: OutpostClient, concurrency: Int = 4) async throws -> Outbox {
        var configuration = Outbox.Configuration(fileURL: url, maxConcurrentWrites: concurrency)
        configuration.retry = RetryPolicy(maxAttempts: 1)
        return try await Outbox.open(configuration, client: client)
    }

    /// How many records of `type` have `field` = `value`.
    static func count(_ client: OutpostClient, _ type: String, _ field: String, _ value: String) async throws -> Int {
        let page = try await client.send(
            .get(
                "/records/\(type)",
                query: [
                    URLQueryItem(name: "page", value: "1"), URLQueryItem(name: "per_page", value: "1"),
                    URLQueryItem(name: field, value: value),
                ]))
        return try page.json()["total"]?.intValue ?? -1
    }

    @Test("writes queued while the server is down wait, then land once each when it is back")
    func queuedWhileDown() async throws {
        try await withLiveServer { server, client in
            let url = Self.journal(in: server)
            // A port nobody listens on: the server as seen while it is down.
            let down = OutpostClient(configuration: .init(baseURL: URL(string: "http://127.0.0.1:9")!, retry: .none))
            let offline = try await Self.open(url, down)
            for n in 0..<5 { try await offline.enqueue(.post("/records/outbox-down", json: ["n": .int(n)])) }
            let first = await offline.replay()
            #expect(first.deferred == 5)
            #expect(first.completed == 0)
            #expect(try await offline.entries.count == 5)
            await offline.close()
            try await down.shutdown()

            // The app starts again, and the server is reachable.
            let online = try await Self.open(url, client)
            let events = online.events()
            let second = await online.replay()
            #expect(second.completed == 5)
            #expect(try await online.entries.isEmpty)
            await online.close()
            var pendingCounts: [Int] = []
            for await event in events { if case .pending(let count) = event { pendingCounts.append(count) } }
            #expect(pendingCounts.first == 5)
            #expect(pendingCounts.last == 0)
            for n in 0..<5 { #expect(try await Self.count(client, "outbox-down", "n", "\(n)") == 1) }
        }
    }

    @Test("a lost reply is not applied twice: a keyed POST is replayed by the server, a conditional PATCH found applied")
    func lostRepliesAgainstTheServer() async throws {
        try await withLiveServer { server, client in
            let store = client.entities(.outpost)
            var note = try await store.push(Note(text: "draft"))
            let outbox = try await Self.open(Self.journal(in: server), client)
            let create = try await outbox.enqueue(.post("/records/outbox-lost", json: ["tag": "lost-post"]))
            note.text = "final"
            let patch = try #require(try await store.enqueuePatch(&note, in: outbox))
            #expect(patch.ifMatch == note.etag)

            // Both reach the server once before the replay, as if their replies had been lost.
            _ = try await client.send(
                .post("/records/outbox-lost", json: ["tag": "lost-post"]).idempotencyKey(create.idempotencyKey))
            var direct = Request(
                method: .patch, path: patch.path, body: .data(patch.body ?? Data(), contentType: MergePatch.contentType))
            direct.headers[.ifMatch] = patch.ifMatch
            _ = try await client.send(direct)

            let events = outbox.events()
            let summary = await outbox.replay()
            await outbox.close()
            #expect(summary.completed == 2)
            #expect(summary.failed == 0)
            var completions: [OutboxCompletion] = []
            for await event in events { if case .completed(let done) = event { completions.append(done) } }
            #expect(completions.first { $0.entry.id == patch.id }?.alreadyApplied == true)
            #expect(try await Self.count(client, "outbox-lost", "tag", "lost-post") == 1)
            let pulled = try await store.pull(Note.self, id: try #require(note.id))
            #expect(pulled.value.text == "final")
        }
    }

    @Test("entity writes queued offline go out in order; a real conflict is surfaced with the value and the server's error")
    func entitiesAndConflicts() async throws {
        try await withLiveServer { server, client in
            let store = client.entities(.outpost)
            var kept = try await store.push(Note(text: "one"))
            var contested = try await store.push(Note(text: "two"))
            let doomed = try await store.push(Note(text: "three"))
            let outbox = try await Self.open(Self.journal(in: server), client, concurrency: 2)

            kept.text = "one, edited"
            try await store.enqueuePatch(&kept, in: outbox)
            kept.tags = ["second edit"]
            try await store.enqueuePatch(&kept, in: outbox)
            contested.text = "two, mine"
            let losing = try #require(try await store.enqueuePatch(&contested, in: outbox))
            try await store.enqueueDelete(doomed, in: outbox)
            var newNote = Synced(Note(text: "made offline"))
            try await store.enqueuePush(&newNote, in: outbox)
            // Someone else changes `contested` first.
            var theirs = try await store.pull(Note.self, id: try #require(contested.id))
            theirs.text = "two, theirs"
            _ = try await store.patch(theirs)

            let summary = await outbox.replay()
            #expect(summary.completed == 4)
            #expect(summary.failed == 1)
            let left = try await outbox.entries
            #expect(left.map(\.id) == [losing.id])
            let failure = try #require(left.first?.failure)
            #expect(failure.kind == .conflict)
            #expect(failure.status == 412)
            #expect(failure.serverCode == "precondition_failed")
            #expect(left.first?.value == ["text": "two, mine"])
            await outbox.close()

            let keptNow = try await store.pull(Note.self, id: try #require(kept.id)).value
            #expect(keptNow.text == "one, edited")
            #expect(keptNow.tags == ["second edit"])
            #expect(try await store.pull(Note.self, id: try #require(contested.id)).value.text == "two, theirs")
            await #expect(throws: OutpostError.self) { _ = try await store.pull(Note.self, id: try #require(doomed.id)) }
            #expect(try await Self.count(client, "outbox-notes", "text", "made offline") == 1)
        }
    }

    // MARK: kill -9

    /// One `outpost outbox replay` child, whose output is read line by line.
    struct ReplayChild {
        let process: Process
        let exit: ProcessExit
        let lines: AsyncStream<String>

        static func start(_ binary: URL, journal: URL, server: URL, stallAfter: Int?) throws -> ReplayChild {
            let process = Process()
            process.executableURL = binary
            var arguments = [
                "outbox", "replay", "--outbox", journal.path, "--server", server.absoluteString, "--concurrency", "1",
                "--credentials", journal.deletingLastPathComponent().appendingPathComponent("no-credentials.json").path,
            ]
            if let stallAfter { arguments += ["--stall-after-responses", "\(stallAfter)"] }
            process.arguments = arguments
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            let (lines, sink) = AsyncStream.makeStream(of: String.self)
            let exit = ProcessExit(watching: process)
            try process.run()
            let chunks = pipe.fileHandleForReading.chunksOffPool()
            Task {
                var text = ""
                for await data in chunks {
                    text += String(decoding: data, as: UTF8.self)
                    var parts = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
                    text = parts.removeLast()
                    for line in parts { sink.yield(line) }
                }
                sink.finish()
            }
            return ReplayChild(process: process, exit: exit, lines: lines)
        }

        /// Waits for the line that says the child hangs after a response it has not recorded, and kills it.
        func killWhenStalled() async throws -> [String] {
            var seen: [String] = []
            for await line in lines {
                seen.append(line)
                if line.hasPrefix("stalled ") {
                    _ = kill(process.processIdentifier, SIGKILL)
                    #expect(await exit.wait().signalled)
                    return seen
                }
            }
            throw OutboxKillTestFailure(message: "the replay ended without stalling: \(seen)")
        }

        func finish() async -> (lines: [String], status: Int32) {
            var seen: [String] = []
            for await line in lines { seen.append(line) }
            return (seen, await exit.wait().status)
        }
    }

    struct OutboxKillTestFailure: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    /// Runs `outpost ARGUMENTS` to its end, with `input` on its standard input: standard output and the exit status.
    static func cli(_ binary: URL, _ arguments: [String], input: String? = nil) async throws -> (
        output: String, status: Int32
    ) {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        let pipe = Pipe()
        let stdin = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        if input != nil { process.standardInput = stdin }
        let exit = ProcessExit(watching: process)
        try process.run()
        if let input {
            try stdin.fileHandleForWriting.write(contentsOf: Data(input.utf8))
            try stdin.fileHandleForWriting.close()
        }
        let data = await pipe.fileHandleForReading.readAllOffPool()
        return (String(decoding: data, as: UTF8.self), await exit.wait().status)
    }

    @Test(
        "outpost records create --queue, and a create while the server is down, are listed, dropped or replayed once",
        .enabled(if: CrashRecoveryTests.binary != nil))
    func commandLine() async throws {
        let binary = try #require(CrashRecoveryTests.binary)
        try await withLiveServer { server, client in
            let journal = Self.journal(in: server).path
            let credentials = server.folder.appendingPathComponent("no-credentials.json").path
            let common = ["--outbox", journal, "--credentials", credentials]
            let live = ["--server", server.baseURL.absoluteString] + common
            let queued = try await Self.cli(binary, ["records", "create", "cli-notes", #"{"n": 1}"#, "--queue"] + live)
            #expect(queued.status == 0)
            // Nobody listens on port 9: the create is queued instead of failing.
            let down = try await Self.cli(
                binary, ["records", "create", "cli-notes", #"{"n": 2}"#, "--server", "http://127.0.0.1:9"] + common)
            #expect(down.status == 0)
            let third = try await Self.cli(binary, ["records", "create", "cli-notes", #"{"n": 3}"#, "--queue"] + live)
            #expect(try await Self.count(client, "cli-notes", "n", "1") == 0)

            let listed = try await Self.cli(binary, ["outbox", "list"] + live)
            #expect(listed.output.split(separator: "\n").count == 3)
            let dropID = third.output.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(listed.output.contains(dropID))
            #expect(try await Self.cli(binary, ["outbox", "drop", dropID] + live).status == 0)
            let replayed = try await Self.cli(binary, ["outbox", "replay"] + live)
            #expect(replayed.status == 0)
            #expect(try await Self.cli(binary, ["outbox", "list"] + live).output.isEmpty)
            #expect(try await Self.count(client, "cli-notes", "n", "1") == 1)
            #expect(try await Self.count(client, "cli-notes", "n", "2") == 1)
            #expect(try await Self.count(client, "cli-notes", "n", "3") == 0)
        }
    }

    @Test(
        "kill -9 mid-replay (after a response, before it is recorded), restart, replay: every write lands exactly once",
        .enabled(if: CrashRecoveryTests.binary != nil))
    func killMidReplay() async throws {
        let binary = try #require(CrashRecoveryTests.binary)
        try await withLiveServer { server, client in
            let store = client.entities(.outpost)
            var edited = try await store.push(Note(text: "before"))
            let deleted = try await store.push(Note(text: "to delete"))
            let url = Self.journal(in: server)
            let outbox = try await Self.open(url, client)
            // In queue order (the child sends one at a time): p0 p1 p2, patch ×2 on `edited`, delete, p3 p4 p5.
            for n in 0..<3 { try await outbox.enqueue(.post("/records/outbox-kill", json: ["n": .int(n)])) }
            edited.text = "after"
            try await store.enqueuePatch(&edited, in: outbox)
            edited.tags = ["tagged"]
            try await store.enqueuePatch(&edited, in: outbox)
            try await store.enqueueDelete(deleted, in: outbox)
            for n in 3..<6 { try await outbox.enqueue(.post("/records/outbox-kill", json: ["n": .int(n)])) }
            await outbox.close()

            // Each run is killed right after a response it had no time to record: p1's, the first
            // patch's, the delete's. Each next run sends that write again.
            var sentBeforeKills: [[String]] = []
            for stall in [2, 3, 3] {
                let child = try ReplayChild.start(binary, journal: url, server: server.baseURL, stallAfter: stall)
                sentBeforeKills.append(try await child.killWhenStalled())
            }
            // The statuses of the unrecorded answers: p1's create, the first patch, the delete.
            let stalls = sentBeforeKills.map { $0.last?.split(separator: " ").last.map(String.init) }
            #expect(stalls == ["201", "200", "204"])
            let last = try ReplayChild.start(binary, journal: url, server: server.baseURL, stallAfter: nil)
            let (lines, status) = await last.finish()
            #expect(status == 0, "\(lines)")
            #expect(lines.first?.contains("(already applied)") == true, "the delete's lost reply: \(lines)")
            #expect(lines.count == 4)

            for n in 0..<6 { #expect(try await Self.count(client, "outbox-kill", "n", "\(n)") == 1) }
            let total = try await client.send(.get("/records/outbox-kill?page=1&per_page=1")).json()["total"]?.intValue
            #expect(total == 6)
            let final = try await store.pull(Note.self, id: try #require(edited.id)).value
            #expect(final.text == "after")
            #expect(final.tags == ["tagged"])
            await #expect(throws: OutpostError.self) { _ = try await store.pull(Note.self, id: try #require(deleted.id)) }
            let reopened = try await Self.open(url, client)
            #expect(try await reopened.entries.isEmpty)
            await reopened.close()
        }
    }
}
