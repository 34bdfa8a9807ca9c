import Synchronization
import Testing

@_spi(OutpostInternal) @testable import OutpostCore

/// What ``CancellableRequests`` promises the AsyncHTTPClient transport at shutdown, without a network.
@Suite("Cancellable requests")
struct CancellableRequestsTests {
    /// Records which handles were cancelled.
    final class Cancelled: Sendable {
        let handles = Mutex<[String]>([])
        func record(_ handle: String) { handles.withLock { $0.append(handle) } }
    }

    @Test("cancelAll cancels what is in flight, not what finished, and refuses new requests")
    func cancelAll() throws {
        let cancelled = Cancelled()
        let requests = CancellableRequests<String> { cancelled.record($0) }
        let first = try #require(requests.reserve())
        let second = try #require(requests.reserve())
        #expect(first != second)
        #expect(requests.attach("first", to: first))
        #expect(requests.attach("second", to: second))
        requests.remove(first)
        requests.cancelAll()
        #expect(cancelled.handles.withLock { $0 } == ["second"])
        #expect(requests.reserve() == nil)
    }

    @Test("a request started while shutting down is cancelled when it is attached")
    func attachAfterShutdown() throws {
        let cancelled = Cancelled()
        let requests = CancellableRequests<String> { cancelled.record($0) }
        let id = try #require(requests.reserve())
        requests.cancelAll()
        #expect(requests.attach("late", to: id) == false)
        #expect(cancelled.handles.withLock { $0 } == ["late"])
        requests.cancelAll()
        #expect(cancelled.handles.withLock { $0 } == ["late"], "cancelled once")
    }
}
