import Foundation
import Synchronization
import Testing

@testable import OutpostServer

/// The bound of lists no index serves: places, a queue in arrival order, a bound per client
/// address, refusals past them, cancellation while waiting, and what `/health` reports.
@Suite("List scans")
struct ListScansTests {
    /// A list that runs until ``release()``: its body waits on a stream.
    final class HeldList: Sendable {
        let stream: AsyncStream<Void>
        let continuation: AsyncStream<Void>.Continuation
        init() { (stream, continuation) = AsyncStream.makeStream() }
        func hold() async { for await _ in stream { return } }
        func release() { continuation.yield() }
    }

    /// What the lists did, in order.
    final class Recorder: Sendable {
        private let state = Mutex<[String]>([])
        func append(_ item: String) { state.withLock { $0.append(item) } }
        var items: [String] { state.withLock { $0 } }
    }

    /// Waits (yielding, never sleeping) until `condition` holds.
    static func until(_ condition: () -> Bool) async {
        while !condition() { await Task.yield() }
    }

    static func isBusy(_ error: any Error) -> Bool {
        (error as? ServerError)?.code == "server_busy"
    }

    @Test("one place: the second and third wait in arrival order, a fourth is refused 503 server_busy; saturation is reported")
    func queueInOrder() async throws {
        let scans = ListScans(running: 1, waiting: 2, perAddress: 2)
        let order = Recorder()
        let lists = (0..<3).map { _ in HeldList() }
        let first = Task {
            try await scans.run(address: "a") {
                order.append("a")
                await lists[0].hold()
            }
        }
        await Self.until { scans.status.running == 1 }
        let second = Task {
            try await scans.run(address: "b") {
                order.append("b")
                await lists[1].hold()
            }
        }
        await Self.until { scans.status.waiting == 1 }
        let third = Task {
            try await scans.run(address: "c") {
                order.append("c")
                await lists[2].hold()
            }
        }
        await Self.until { scans.status.waiting == 2 }
        #expect(scans.status.saturated)
        await #expect(throws: ServerError.self) { try await scans.run(address: "d") {} }
        #expect(scans.status.refused == 1)
        lists[0].release()
        try await first.value
        await Self.until { order.items.count == 2 }
        #expect(scans.status.saturated, "one place taken, the queue half full")
        lists[1].release()
        try await second.value
        await Self.until { order.items.count == 3 }
        #expect(!scans.status.saturated)
        lists[2].release()
        try await third.value
        #expect(order.items == ["a", "b", "c"])
        #expect(scans.status.running == 0 && scans.status.waiting == 0)
    }

    @Test("one client address holds at most its bound of places, running or waiting; others still get theirs")
    func perAddress() async throws {
        let scans = ListScans(running: 1, waiting: 8, perAddress: 2)
        let lists = [HeldList(), HeldList()]
        let running = Task { try await scans.run(address: "a") { await lists[0].hold() } }
        await Self.until { scans.status.running == 1 }
        let waiting = Task { try await scans.run(address: "a") { await lists[1].hold() } }
        await Self.until { scans.status.waiting == 1 }
        do {
            try await scans.run(address: "a") {}
            Issue.record("a third list of one address ran")
        } catch {
            #expect(Self.isBusy(error))
        }
        let other = Task { try await scans.run(address: "b") { 7 } }
        await Self.until { scans.status.waiting == 2 }
        lists[0].release()
        lists[1].release()
        try await running.value
        try await waiting.value
        #expect(try await other.value == 7)
        // Places given back: the address may run again.
        #expect(try await scans.run(address: "a") { 1 } == 1)
    }

    @Test("a list cancelled while it waits leaves the queue, and its place goes to the next")
    func cancelledWhileWaiting() async throws {
        let scans = ListScans(running: 1, waiting: 4, perAddress: 4)
        let held = HeldList()
        let running = Task { try await scans.run(address: "a") { await held.hold() } }
        await Self.until { scans.status.running == 1 }
        let cancelled = Task { try await scans.run(address: "b") { Issue.record("a cancelled list ran") } }
        await Self.until { scans.status.waiting == 1 }
        let next = Task { try await scans.run(address: "b") { "ran" } }
        await Self.until { scans.status.waiting == 2 }
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(scans.status.waiting == 1)
        held.release()
        try await running.value
        #expect(try await next.value == "ran")
        #expect(scans.status.running == 0)
    }

    @Test("a body that throws gives its place back")
    func throwingBody() async throws {
        struct Failure: Error {}
        let scans = ListScans(running: 1, waiting: 0, perAddress: 1)
        await #expect(throws: Failure.self) { try await scans.run(address: "a") { throw Failure() } }
        #expect(try await scans.run(address: "a") { true })
    }
}
