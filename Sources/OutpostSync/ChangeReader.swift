import Foundation
import HTTPTypes
@_spi(OutpostInternal) import OutpostCore
import Synchronization

/// One event of `GET /records/{type}/changes`.
struct FeedChange: Sendable {
    /// `created`, `updated`, `deleted` (or `left`, which an unfiltered stream never sends).
    var kind: String
    var id: String
    var version: Int
    /// The record after the change; `nil` for a deletion.
    var record: [String: JSONValue]?
    var position: Int64
}

/// Reads the change feed without keeping a stream open: the feed is Server-Sent Events only, so a
/// catch-up opens `GET /records/{type}/changes` without a position to learn the newest position
/// (its `ready` event), then, when that is past the store's, opens it again with `?after=` and
/// reads until an event (or a heartbeat's `id:`) reaches that position, and closes it.
///
/// Changes this caller may not see (another user's private records) send nothing, so the stream
/// may fall silent before reaching the newest position: reading then stops after ``quiet`` of
/// silence, and the store keeps the position of the last event it got (the next catch-up skips
/// the unseen changes again, at no cost but the wait).
struct ChangeReader: Sendable {
    let client: OutpostClient
    let type: String
    /// The most bytes of one event's line or data.
    static let limits = ServerSentEventParser.Limits(maxLineBytes: 8 << 20, maxEventBytes: 8 << 20)
    /// The most changes applied in one transaction while catching up.
    static let batchSize = 1_000
    /// How long a silent stream is read before the reader concludes it has all it may see.
    var quiet: Duration = .milliseconds(500)

    private var path: String { "/records/\(Request.pathSegment(type))/changes" }

    /// The newest position of the feed (for every type), from the `ready` event of a fresh stream.
    func latestPosition() async throws -> Int64 {
        let stream = try await open(after: nil)
        var parser = ServerSentEventParser(limits: Self.limits)
        while let chunk = try await stream.nextChunk() {
            for event in try parser.parse(chunk) where event.event == "ready" {
                if let id = event.id, let position = Int64(id) { return position }
            }
        }
        throw SyncError("The change feed of \(type) ended before its ready event; check the server's address")
    }

    /// The changes after `position` up to `latest`, in order, handing each batch (the events of one
    /// chunk of the stream) to `apply` with the position it reaches.
    func read(
        after position: Int64, through latest: Int64,
        apply: @escaping @Sendable ([FeedChange], Int64) async throws -> Void
    ) async throws {
        guard latest > position else { return }
        let stream = try await open(after: position)
        let lastActivity = LastActivity()
        let quiet = self.quiet
        // Changes are applied in batches of up to `batchSize` (one transaction each), not per chunk.
        let buffer = ChangeBuffer()
        let flush: @Sendable () async throws -> Void = {
            let (changes, reached) = buffer.state.withLock { buffer in
                defer { buffer = ([], nil) }
                return (buffer.changes, buffer.reached)
            }
            guard let reached else { return }
            lastActivity.hold()
            defer { lastActivity.release() }
            try await apply(changes, reached)
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                var parser = ServerSentEventParser(limits: Self.limits)
                while let chunk = try await stream.nextChunk() {
                    lastActivity.touch()
                    var batch: [FeedChange] = []
                    for event in try parser.parse(chunk) where event.event != "ready" {
                        batch.append(try Self.change(from: event))
                    }
                    let reached = parser.lastEventID.flatMap { Int64($0) } ?? position
                    let (full, done) = buffer.state.withLock { buffer in
                        buffer.changes += batch
                        if reached > position { buffer.reached = reached }
                        return (buffer.changes.count >= Self.batchSize, reached >= latest)
                    }
                    if full || done { try await flush() }
                    if done { return }
                }
            }
            group.addTask {
                while true {
                    let since = lastActivity.elapsed
                    if since >= quiet { return }
                    try await Task.sleep(for: quiet - since)
                }
            }
            _ = try await group.next()
            group.cancelAll()
        }
        // What the stream delivered before it fell silent.
        try await flush()
    }

    /// Follows the feed after `position` until the stream ends or fails: calls `ready` once the
    /// server has answered (its `ready` event), and hands each chunk's changes to `apply` with the
    /// position they reach. Returns when the server ends the stream.
    func follow(
        after position: Int64, ready: @Sendable () -> Void,
        apply: @Sendable ([FeedChange], Int64) async throws -> Void
    ) async throws {
        let stream = try await open(after: position)
        var parser = ServerSentEventParser(limits: Self.limits)
        var reached = position
        while let chunk = try await stream.nextChunk() {
            var batch: [FeedChange] = []
            for event in try parser.parse(chunk) {
                if event.event == "ready" {
                    ready()
                } else {
                    batch.append(try Self.change(from: event))
                }
            }
            let now = parser.lastEventID.flatMap { Int64($0) } ?? reached
            if !batch.isEmpty || now > reached {
                try await apply(batch, now)
                reached = now
            }
        }
    }

    private func open(after position: Int64?) async throws -> ByteStream {
        var request = Request.get(path, query: position.map { [URLQueryItem(name: "after", value: String($0))] } ?? [])
        request.headers[.accept] = "text/event-stream"
        return try await client.prepare(request, operationName: "sync changes \(type)").startStream().1
    }

    /// The event's data: `{"id", "change", "version", "record"}`.
    static func change(from event: ServerSentEvent) throws -> FeedChange {
        guard let position = event.id.flatMap({ Int64($0) }),
            let data = try? JSONValue(parsing: Data(event.data.utf8)),
            let id = data["id"]?.stringValue, let version = data["version"]?.intValue
        else {
            throw SyncError("The change feed sent an event that is not a change (\(event.event)); check the server's version")
        }
        return FeedChange(kind: event.event, id: id, version: version, record: data["record"]?.objectValue, position: position)
    }
}

/// Changes read and not yet applied, and the position they reach.
final class ChangeBuffer: Sendable {
    let state = Mutex<(changes: [FeedChange], reached: Int64?)>(([], nil))
}

/// When the change stream last delivered bytes, shared by its reader and the task that stops a
/// silent stream; while changes are being applied the stream does not count as silent.
final class LastActivity: Sendable {
    private let state = Mutex((time: ContinuousClock.now, holds: 0))

    func touch() { state.withLock { $0.time = .now } }

    func hold() { state.withLock { $0.holds += 1 } }

    func release() {
        state.withLock {
            $0.holds -= 1
            $0.time = .now
        }
    }

    var elapsed: Duration {
        state.withLock { $0.holds > 0 ? .zero : ContinuousClock.now - $0.time }
    }
}
