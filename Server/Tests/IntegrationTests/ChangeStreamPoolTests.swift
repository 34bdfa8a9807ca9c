import AsyncHTTPClient
import Foundation
import Outpost
import OutpostTestSupport
import Testing

/// Open change streams hold one connection each for as long as they last: they must not take the
/// connections a client's other requests need.
@Suite("Change streams and the connection pool", .closesWhatItOpens, .timeLimit(.minutes(2)))
struct ChangeStreamPoolTests {
    @Test("a client with more open change streams than its per-host connection limit still sends requests")
    func streamsDoNotStarveRequests() async throws {
        try await withLiveServer { server, _ in
            // Two connections per host for requests, and four streams: on one shared pool the
            // streams would take both, and the push below would wait for a connection until it
            // failed (AsyncHTTPClient's getConnectionFromPoolTimeout).
            var pool = AsyncHTTPClientTransport.defaultConfiguration
            pool.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 2
            let client = OutpostClient(
                configuration: .init(baseURL: server.baseURL, timeout: .seconds(20), retry: .none),
                ownedTransport: AsyncHTTPClientTransport(configuration: pool))
            let store = client.entities()
            let first = try await store.push(LiveNote(text: "first"))
            let streams = 4
            let (arrivals, sink) = AsyncStream.makeStream(of: (stream: Int, id: String?).self)
            var subscribers: [Task<Void, Never>] = []
            for index in 0..<streams {
                subscribers.append(
                    Task {
                        do {
                            for try await change in store.changes(
                                of: LiveNote.self, after: "0", retry: ChangesIntegrationTests.fastRetry)
                            {
                                sink.yield((index, change.id))
                            }
                        } catch {
                            sink.yield((index, nil))
                        }
                    })
            }
            var iterator = arrivals.makeAsyncIterator()
            // Each stream delivered the first change: all four are open at once.
            var live: Set<Int> = []
            while live.count < streams, let arrival = await iterator.next() {
                #expect(arrival.id == first.id, "stream \(arrival.stream) failed or delivered another change")
                live.insert(arrival.stream)
            }
            #expect(live.count == streams)
            // Requests still get connections while the streams stay open.
            let second = try await store.push(LiveNote(text: "second"))
            #expect(try await store.pull(LiveNote.self, id: try #require(second.value.id)).value.text == "second")
            var delivered: Set<Int> = []
            while delivered.count < streams, let arrival = await iterator.next() {
                #expect(arrival.id == second.id)
                delivered.insert(arrival.stream)
            }
            #expect(delivered.count == streams)
            for subscriber in subscribers { subscriber.cancel() }
            for subscriber in subscribers { await subscriber.value }
            try await client.shutdown()
        }
    }
}
