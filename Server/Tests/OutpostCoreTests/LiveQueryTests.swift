import Foundation
import OutpostTestSupport
import Testing

@testable import OutpostCore

/// `LiveQuery`'s feed: results arriving between two turns of the main actor are applied once, the
/// newest; stopping and deinitialising end the source's task.
@Suite(.timeLimit(.minutes(1))) struct LiveQueryTests {
    /// A query whose source hands its feed to the test and waits until its task is cancelled; the
    /// stream ends when the source's task ends.
    @MainActor
    static func scripted() async -> (LiveQuery<Int>, LiveQueryFeed<Int>, AsyncStream<Void>) {
        let (feeds, feedSink) = AsyncStream.makeStream(of: LiveQueryFeed<Int>.self)
        let (ended, endedSink) = AsyncStream.makeStream(of: Void.self)
        let query = LiveQuery<Int>(source: { feed in
            feedSink.yield(feed)
            // Not a pause: the sleep ends when the query cancels the task.
            try? await Task.sleep(for: .seconds(3600))
            endedSink.finish()
        })
        var iterator = feeds.makeAsyncIterator()
        return (query, await iterator.next()!, ended)
    }

    static func records(_ values: some Sequence<Int>, state: RecordState = .confirmed) -> [LiveRecord<Int>] {
        values.map { LiveRecord(id: "r\($0)", value: $0, state: state) }
    }

    @MainActor
    static func touch(_ query: LiveQuery<Int>) {
        _ = query.records
        _ = query.isLoading
        _ = query.error
    }

    @Test @MainActor func aBurstBetweenTwoTurnsIsAppliedOnceTheNewest() async {
        let (query, feed, _) = await Self.scripted()
        #expect(query.isLoading && query.items.isEmpty)
        feed.submit(Self.records([0]))
        await nextChange { Self.touch(query) }
        #expect(!query.isLoading && query.items == [0])

        // A hundred results within one main-actor turn: one change, showing the last.
        let counter = ChangeCounter { _ = query.records }
        for last in 1...100 { feed.submit(Self.records(0...last, state: last.isMultiple(of: 2) ? .pending : .confirmed)) }
        await nextChange { Self.touch(query) }
        #expect(query.items == Array(0...100))
        #expect(counter.count == 1)
        #expect(query.state(of: "r7") == .pending && query.record(id: "r100")?.value == 100)

        // The next turn's result is the next change, alone.
        feed.submit(Self.records([5]))
        let count = await changes(of: { Self.touch(query) }, until: { query.items == [5] })
        #expect(count == 1)
        #expect(query.state(of: "r7") == nil)
        query.stop()
    }

    @Test @MainActor func anErrorKeepsTheRecordsAndAResultClearsIt() async {
        let (query, feed, _) = await Self.scripted()
        feed.submit(Self.records([1, 2]))
        await nextChange { Self.touch(query) }
        feed.fail(OutpostError(.cannotConnect, "offline"))
        await nextChange { Self.touch(query) }
        #expect((query.error as? OutpostError)?.code == .cannotConnect && query.items == [1, 2])
        feed.submit(Self.records([3]))
        await nextChange { Self.touch(query) }
        #expect(query.error == nil && query.items == [3])
        query.stop()
    }

    @Test @MainActor func stoppingEndsTheSourceAndDropsLaterResults() async {
        let (query, feed, ended) = await Self.scripted()
        feed.submit(Self.records([1]))
        query.stop()
        for await _ in ended {}
        #expect(query.isStopped && !query.isLoading && feed.isStopped)
        // A result submitted before the stop and one after it never reach the query.
        feed.submit(Self.records([2]))
        await MainActor.run {}
        #expect(query.items.isEmpty)
    }

    @Test @MainActor func deinitialisingEndsTheSource() async {
        var query: LiveQuery<Int>?
        let ended: AsyncStream<Void>
        do {
            let scripted = await Self.scripted()
            query = scripted.0
            ended = scripted.2
        }
        weak let released = query
        query = nil
        #expect(released == nil)
        for await _ in ended {}
    }

    @Test func statesComeFromTheOutboxEntries() {
        func entry(_ key: String, failed: Bool) -> OutboxEntry {
            let failure = OutboxFailure(kind: .rejected, error: OutpostError(.httpStatus, "refused", status: 422))
            return OutboxEntry(
                id: UUID(), sequence: 1, label: "patch", method: "PATCH", path: key, query: [], headers: [], body: nil,
                contentType: nil, idempotencyKey: "key", recordKey: key, ifMatch: nil, enqueuedAt: Date(),
                state: failed ? .failed(failure) : .pending)
        }
        let states = EntityQuerySource<Note>.states(of: [
            entry("/records/notes/a", failed: false), entry("/records/notes/b", failed: false),
            entry("/records/notes/b", failed: true),
        ])
        #expect(states["/records/notes/a"] == .pending)
        #expect(states["/records/notes/b"]?.failure?.contains("refused") == true)
        #expect(states["/records/notes/c"] == nil)
    }

    struct Note: Entity {
        static let resourcePath = "records/notes"
        var id: String?
    }
}
