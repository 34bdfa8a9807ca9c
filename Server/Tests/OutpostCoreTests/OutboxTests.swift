import Foundation
import HTTPTypes
import OutpostTesting
import Synchronization
import Testing

@_spi(OutpostInternal) @testable import OutpostCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The outbox journal's framing, corruption handling, compaction, permissions and bound, and the
/// replay rules, against an in-memory records backend.
@Suite("Outbox")
struct OutboxTests {
    /// A fresh folder for one test's journal.
    static func folder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-unit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    static func open(_ url: URL, client: OutpostClient, maxBytes: Int = 8 << 20) async throws -> Outbox {
        var configuration = Outbox.Configuration(fileURL: url, maxBytes: maxBytes)
        configuration.retry = RetryPolicy(maxAttempts: 2, sleep: { _ in })
        return try await Outbox.open(configuration, client: client)
    }

    static func permissions(_ path: String) -> mode_t {
        var status = stat()
        _ = stat(path, &status)
        return status.st_mode & 0o777
    }

    /// Forwards to a fake backend; requests that `loseReply` picks reach it, but their answer is lost.
    static func lossyTransport(
        _ server: FakeRecordsServer, loseReply: @escaping @Sendable (HTTPRequest) -> Bool
    ) -> ScriptedTransport {
        ScriptedTransport { request, body in
            let answer = server.handle(request, body: body)
            if loseReply(request) { throw OutpostError(.connectionLost, "the reply was lost") }
            return answer
        }
    }

    // MARK: Framing

    @Test("frames round-trip, and a torn, flipped or oversized frame ends the readable part")
    func framing() {
        var file = Data(OutboxFraming.header)
        let payloads = [Data("first".utf8), Data(), Data(repeating: 7, count: 300)]
        for payload in payloads { file.append(OutboxFraming.frame(payload)) }
        let intact = OutboxFraming.scan(file)
        #expect(intact.frames.map(\.payload) == payloads)
        #expect(intact.corruptOffset == nil)

        let lastStart = intact.frames[2].offset
        let torn = OutboxFraming.scan(file.prefix(file.count - 5))
        #expect(torn.frames.count == 2)
        #expect(torn.corruptOffset == lastStart)

        var flipped = file
        flipped[lastStart + OutboxFraming.frameOverhead + 10] ^= 0xFF
        let damaged = OutboxFraming.scan(flipped)
        #expect(damaged.frames.count == 2)
        #expect(damaged.corruptOffset == lastStart)
        #expect(damaged.corruptReason?.contains("checksum") == true)

        var oversized = Data(OutboxFraming.header)
        oversized.append(contentsOf: [0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0])
        #expect(OutboxFraming.scan(oversized).corruptOffset == OutboxFraming.header.count)
        #expect(OutboxFraming.scan(Data("not a journal".utf8)).corruptOffset == 0)
        // The IEEE CRC-32 check value.
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
    }

    // MARK: The journal on disk

    @Test("queued writes survive a reopen, in order, with their idempotency keys; the file is 0600 and holds no credentials")
    func survivesReopen() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("outbox.journal")
        let client = FakeRecordsServer().transport().client()
        let outbox = try await Self.open(url, client: client)
        var request = Request.post("/records/notes", json: ["text": "one"])
        request.headers[.authorization] = "Bearer secret-token-value"
        let first = try await outbox.enqueue(request)
        let second = try await outbox.enqueue(.post("/records/notes", json: ["text": "two"]).idempotencyKey("fixed-key"))
        await outbox.close()

        #expect(Self.permissions(url.path) == 0o600)
        let bytes = try Data(contentsOf: url)
        #expect(bytes.range(of: Data("secret-token-value".utf8)) == nil)

        let reopened = try await Self.open(url, client: client)
        let entries = try await reopened.entries
        #expect(entries.map(\.id) == [first.id, second.id])
        #expect(entries.map(\.idempotencyKey) == [first.idempotencyKey, "fixed-key"])
        #expect(entries[0].value == ["text": "one"])
        #expect(entries[0].headers.isEmpty)
        #expect(reopened.corruption == nil)
        await reopened.close()
    }

    @Test("concurrent enqueues (written together, one fsync per batch) are all durable, each with its own sequence")
    func concurrentEnqueues() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("outbox.journal")
        let client = FakeRecordsServer().transport().client()
        let outbox = try await Self.open(url, client: client)
        let ids = try await withThrowingTaskGroup(of: UUID.self) { group in
            for n in 0..<64 {
                group.addTask { try await outbox.enqueue(.post("/records/notes", json: ["n": .int(n)])).id }
            }
            return try await group.reduce(into: Set<UUID>()) { $0.insert($1) }
        }
        await outbox.close()
        let scan = OutboxFraming.scan(try Data(contentsOf: url))
        #expect(scan.corruptOffset == nil)
        #expect(scan.frames.count == 64)
        let reopened = try await Self.open(url, client: client)
        let entries = try await reopened.entries
        #expect(Set(entries.map(\.id)) == ids)
        #expect(entries.map(\.sequence) == (1...64).map { UInt64($0) })
        await reopened.close()
    }

    @Test("a second open of the same journal is refused while the first holds it")
    func lockedAgainstASecondOpen() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("outbox.journal")
        let client = FakeRecordsServer().transport().client()
        let outbox = try await Self.open(url, client: client)
        await #expect(throws: OutpostError.self) { _ = try await Self.open(url, client: client) }
        await outbox.close()
        let again = try await Self.open(url, client: client)
        await again.close()
    }

    @Test("the journal's lock is held only during each read or write: another holder can take it in between, and is waited for")
    func lockOnlyDuringIO() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("outbox.journal")
        let client = FakeRecordsServer().transport().client()
        let outbox = try await Self.open(url, client: client)
        _ = try await outbox.enqueue(.post("/records/notes", json: ["text": "one"]))

        // As another process would: a descriptor of its own on the lock file.
        let other = openFile(url.path + ".lock", O_RDWR | O_CLOEXEC)
        #expect(other >= 0)
        defer { close(other) }
        #expect(flock(other, LOCK_EX | LOCK_NB) == 0, "the outbox holds no lock between operations")
        let second = Task { try await outbox.enqueue(.post("/records/notes", json: ["text": "two"])) }
        flock(other, LOCK_UN)
        _ = try await second.value
        #expect(flock(other, LOCK_EX | LOCK_NB) == 0, "nor after a write")
        flock(other, LOCK_UN)
        #expect(try await outbox.entries.count == 2)
        #expect(flock(other, LOCK_EX | LOCK_NB) == 0, "nor after a read")
        flock(other, LOCK_UN)
        await outbox.close()
    }

    @Test("what another process appends or compacts is read before the next operation; new writes are numbered after it")
    func sharedWithAnotherProcess() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("outbox.journal")
        let client = FakeRecordsServer().transport().client()
        let outbox = try await Self.open(url, client: client)
        let first = try await outbox.enqueue(.post("/records/notes", json: ["text": "mine"]))

        // Another process appends a write of its own, under the lock.
        let theirs = OutboxEntry(
            id: UUID(), sequence: 7, label: "theirs", method: first.method, path: first.path, query: [], headers: [],
            body: first.body, contentType: first.contentType, idempotencyKey: UUID().uuidString,
            recordKey: "POST theirs", ifMatch: nil, enqueuedAt: Date(), state: .pending)
        let lock = openFile(url.path + ".lock", O_RDWR | O_CLOEXEC)
        defer { close(lock) }
        #expect(flock(lock, LOCK_EX) == 0)
        let journal = try FileHandle(forWritingTo: url)
        try journal.seekToEnd()
        try journal.write(contentsOf: OutboxFraming.frame(try JournalState.encode(.enqueued(theirs))))
        try journal.close()
        flock(lock, LOCK_UN)

        #expect(try await outbox.entries.map(\.id) == [first.id, theirs.id])
        let next = try await outbox.enqueue(.post("/records/notes", json: ["text": "after theirs"]))
        #expect(next.sequence == 8)

        // The other process compacts: only its write is left, in a new file renamed into place.
        #expect(flock(lock, LOCK_EX) == 0)
        var compacted = Data(OutboxFraming.header)
        compacted.append(OutboxFraming.frame(try JournalState.encode(.enqueued(theirs))))
        let temporary = folder.appendingPathComponent(".outbox.journal.tmp")
        try compacted.write(to: temporary)
        #expect(rename(temporary.path, url.path) == 0)
        flock(lock, LOCK_UN)

        #expect(try await outbox.entries.map(\.id) == [theirs.id])
        let last = try await outbox.enqueue(.post("/records/notes", json: ["text": "last"]))
        #expect(last.sequence == 9)
        await outbox.close()
        let reopened = try await Self.open(url, client: client)
        #expect(try await reopened.entries.map(\.id) == [theirs.id, last.id])
        await reopened.close()
    }

    @Test("a corrupt tail is reported, kept in a .corrupt file (0600), and the intact writes stay queued")
    func corruptTail() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("outbox.journal")
        let client = FakeRecordsServer().transport().client()
        let outbox = try await Self.open(url, client: client)
        let kept = try await outbox.enqueue(.post("/records/notes", json: ["text": "kept"]))
        _ = try await outbox.enqueue(.post("/records/notes", json: ["text": "torn"]))
        await outbox.close()

        // Tear the last frame, as a crash in the middle of a write would.
        let whole = try Data(contentsOf: url)
        let lastStart = try #require(OutboxFraming.scan(whole).frames.last?.offset)
        let torn = whole.prefix(lastStart + 11)
        try torn.write(to: url)

        let reopened = try await Self.open(url, client: client)
        let corruption = try #require(reopened.corruption)
        #expect(corruption.offset == lastStart)
        #expect(corruption.byteCount == 11)
        #expect(try Data(contentsOf: corruption.savedAt) == torn.suffix(11))
        #expect(corruption.savedAt.path == url.path + ".corrupt")
        #expect(Self.permissions(corruption.savedAt.path) == 0o600)
        #expect(try await reopened.entries.map(\.id) == [kept.id])
        var events = reopened.events().makeAsyncIterator()
        guard case .corruption(let reported)? = await events.next() else {
            Issue.record("the first event is not the corruption")
            return
        }
        #expect(reported == corruption)
        await reopened.close()

        // The journal was rewritten without the tail: the next open finds nothing wrong.
        let third = try await Self.open(url, client: client)
        #expect(third.corruption == nil)
        #expect(try await third.entries.map(\.id) == [kept.id])
        await third.close()
    }

    @Test("completed writes are compacted away: an emptied journal is its header again")
    func compaction() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("outbox.journal")
        let server = FakeRecordsServer()
        let outbox = try await Self.open(url, client: server.transport().client())
        for n in 0..<20 { try await outbox.enqueue(.post("/records/notes", json: ["n": .int(n)])) }
        let grown = try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int ?? 0
        #expect(grown > 20 * 100)
        let summary = await outbox.replay()
        #expect(summary.completed == 20)
        #expect(try Data(contentsOf: url) == Data(OutboxFraming.header))
        #expect(Self.permissions(url.path) == 0o600)
        await outbox.close()
    }

    @Test("enqueue past maxBytes throws outboxFull; after a replay there is room again")
    func bound() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("outbox.journal")
        let outbox = try await Self.open(url, client: FakeRecordsServer().transport().client(), maxBytes: 2_000)
        var queued = 0
        var full: OutpostError?
        while full == nil, queued < 100 {
            do {
                try await outbox.enqueue(.post("/records/notes", json: ["text": .string(String(repeating: "x", count: 100))]))
                queued += 1
            } catch let error as OutpostError {
                full = error
            }
        }
        #expect(full?.code == .outboxFull)
        #expect(queued > 1 && queued < 100)
        #expect(await outbox.replay().completed == queued)
        try await outbox.enqueue(.post("/records/notes", json: ["text": "room again"]))
        await outbox.close()
    }

    // MARK: Replay rules

    @Test("a POST whose reply was lost is sent again with the key fixed at enqueue time")
    func lostReplyOnPost() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = FakeRecordsServer()
        let answered = Mutex(false)
        let transport = Self.lossyTransport(server) { _ in
            answered.withLock { seen in
                let lose = !seen
                seen = true
                return lose
            }
        }
        let outbox = try await Self.open(folder.appendingPathComponent("j"), client: transport.client())
        let entry = try await outbox.enqueue(.post("/records/notes", json: ["text": "once"]))
        #expect(await outbox.replay().completed == 1)
        #expect(transport.requests.map { $0.header(.idempotencyKey) } == [entry.idempotencyKey, entry.idempotencyKey])
        #expect(try await outbox.entries.isEmpty)
        await outbox.close()
    }

    @Test("two patches queued against one ETag go out in order, the second following the first's new ETag")
    func etagChaining() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = FakeRecordsServer()
        server.seed("notes", [["text": "a"]])
        let transport = server.transport()
        let outbox = try await Self.open(folder.appendingPathComponent("j"), client: transport.client())
        var patch = Request(
            method: .patch, path: "/records/notes/r1", body: .data(Data(#"{"x":1}"#.utf8), contentType: MergePatch.contentType))
        patch.headers[.ifMatch] = "\"1\""
        try await outbox.enqueue(patch)
        patch.body = .data(Data(#"{"y":2}"#.utf8), contentType: MergePatch.contentType)
        try await outbox.enqueue(patch)
        let summary = await outbox.replay()
        #expect(summary.completed == 2)
        #expect(summary.failed == 0)
        #expect(server.record("notes", id: "r1")?["x"] == 1)
        #expect(server.record("notes", id: "r1")?["y"] == 2)
        #expect(transport.requests.map { $0.header(.ifMatch) } == ["\"1\"", "\"2\""])
        await outbox.close()
    }

    @Test("a 412 after a lost reply is done when the record already shows the write; a DELETE's 404 too")
    func lostRepliesOfConditionalWrites() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = FakeRecordsServer()
        server.seed("notes", [["text": "a"], ["text": "b"]])
        let lost = Mutex<Set<String>>([])
        // The first PATCH and the first DELETE reach the server, but their answers are lost.
        let transport = Self.lossyTransport(server) { request in
            guard request.method == .patch || request.method == .delete else { return false }
            return lost.withLock { $0.insert(request.method.rawValue).inserted }
        }
        let outbox = try await Self.open(folder.appendingPathComponent("j"), client: transport.client())
        var patch = Request(
            method: .patch, path: "/records/notes/r1", body: .data(Data(#"{"x":1}"#.utf8), contentType: MergePatch.contentType))
        patch.headers[.ifMatch] = "\"1\""
        try await outbox.enqueue(patch)
        var delete = Request.delete("/records/notes/r2")
        delete.headers[.ifMatch] = "\"1\""
        try await outbox.enqueue(delete)
        var completions: [OutboxCompletion] = []
        let events = outbox.events()
        let summary = await outbox.replay()
        await outbox.close()
        for await event in events { if case .completed(let done) = event { completions.append(done) } }
        #expect(summary.completed == 2)
        #expect(summary.failed == 0)
        #expect(completions.allSatisfy { $0.alreadyApplied })
        #expect(completions.first { $0.entry.method == "PATCH" }?.etag == "\"2\"")
        #expect(server.record("notes", id: "r1")?["x"] == 1)
        #expect(server.record("notes", id: "r2") == nil)
    }

    @Test("a real conflict stops that write with its value and the server's error; its record waits, others go on")
    func conflictStopsOnlyItsRecord() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = FakeRecordsServer()
        server.seed("notes", [["text": "a"], ["text": "b"]])
        server.touch("notes", id: "r1", field: "text", value: "changed elsewhere")
        let outbox = try await Self.open(folder.appendingPathComponent("j"), client: server.transport().client())
        var stale = Request(
            method: .patch, path: "/records/notes/r1", body: .data(Data(#"{"x":1}"#.utf8), contentType: MergePatch.contentType))
        stale.headers[.ifMatch] = "\"1\""
        let conflicting = try await outbox.enqueue(stale)
        let waiting = try await outbox.enqueue(
            Request(
                method: .patch, path: "/records/notes/r1",
                body: .data(Data(#"{"z":3}"#.utf8), contentType: MergePatch.contentType)))
        try await outbox.enqueue(
            Request(
                method: .patch, path: "/records/notes/r2",
                body: .data(Data(#"{"y":2}"#.utf8), contentType: MergePatch.contentType)))
        let events = outbox.events()
        let summary = await outbox.replay()
        #expect(summary.completed == 1)
        #expect(summary.failed == 1)
        #expect(server.record("notes", id: "r2")?["y"] == 2)
        #expect(server.record("notes", id: "r1")?["z"] == nil)
        let entries = try await outbox.entries
        #expect(entries.map(\.id) == [conflicting.id, waiting.id])
        #expect(entries[0].failure?.kind == .conflict)
        #expect(entries[0].failure?.status == 412)
        #expect(entries[0].failure?.serverCode == "precondition_failed")
        #expect(entries[0].value == ["x": 1])
        #expect(entries[1].state == .pending)
        await outbox.close()
        var failures: [OutboxFailure] = []
        for await event in events {
            if case .failed(let entry, let failure) = event, entry.id == conflicting.id { failures.append(failure) }
        }
        #expect(failures.map(\.kind) == [.conflict])
    }

    @Test("transient failures back off with the retry policy and the write waits; cancel removes a pending write")
    func transientThenCancel() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let transport = ScriptedTransport { _, _ in ScriptedTransport.reply(503, json: ["error": ["code": "down"]]) }
        let slept = Mutex<[Duration]>([])
        var configuration = Outbox.Configuration(fileURL: folder.appendingPathComponent("j"))
        configuration.retry = RetryPolicy(
            maxAttempts: 3, baseDelay: .milliseconds(100), sleep: { delay in slept.withLock { $0.append(delay) } })
        let outbox = try await Outbox.open(configuration, client: transport.client())
        let entry = try await outbox.enqueue(.post("/records/notes", json: ["text": "later"]))
        let summary = await outbox.replay()
        #expect(summary.deferred == 1)
        #expect(transport.requests.count == 3)
        #expect(slept.withLock { $0.count } == 2)
        #expect(try await outbox.entries.map(\.state) == [.pending])
        try await outbox.cancel(entry.id)
        #expect(try await outbox.entries.isEmpty)
        await #expect(throws: OutpostError.self) { try await outbox.cancel(entry.id) }
        await outbox.close()
    }

    @Test("run() sends what is queued at start and each write queued later, until cancelled")
    func runLoop() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = FakeRecordsServer()
        let outbox = try await Self.open(folder.appendingPathComponent("j"), client: server.transport().client())
        let early = try await outbox.enqueue(.post("/records/notes", json: ["n": 1]))
        var events = outbox.events().makeAsyncIterator()
        let running = Task { await outbox.run() }
        var done: [UUID] = []
        var late: OutboxEntry?
        while done.count < 2, let event = await events.next() {
            guard case .completed(let completion) = event else { continue }
            done.append(completion.entry.id)
            if late == nil { late = try await outbox.enqueue(.post("/records/notes", json: ["n": 2])) }
        }
        running.cancel()
        await running.value
        #expect(done == [early.id, late?.id])
        #expect(try await outbox.entries.isEmpty)
        await outbox.close()
    }

    @Test("an authentication failure stops the write and the replay")
    func authenticationStopsReplay() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let transport = ScriptedTransport { _, _ in ScriptedTransport.reply(401, json: ["error": ["code": "sign_in_required"]]) }
        var configuration = Outbox.Configuration(fileURL: folder.appendingPathComponent("j"), maxConcurrentWrites: 1)
        configuration.retry = RetryPolicy(maxAttempts: 1, sleep: { _ in })
        let outbox = try await Outbox.open(configuration, client: transport.client())
        for n in 0..<3 { try await outbox.enqueue(.post("/records/notes", json: ["n": .int(n)])) }
        let summary = await outbox.replay()
        #expect(summary.stoppedForAuthentication)
        #expect(transport.requests.count == 1)
        let entries = try await outbox.entries
        #expect(entries.map { $0.failure?.kind } == [.authentication, nil, nil])
        try await outbox.retry(entries[0].id)
        #expect(try await outbox.entries.allSatisfy { $0.state == .pending })
        await outbox.close()
    }
}

/// `open(2)`, named apart from the outbox's `open`.
private func openFile(_ path: String, _ flags: Int32) -> Int32 {
    open(path, flags)
}
