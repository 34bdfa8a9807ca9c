import Foundation
import Logging
import OutpostServerTesting
import OutpostTestSupport
import Synchronization
import Testing

@testable import OutpostServer

/// After hooks and scheduled jobs on a real database, with two instances on it: each change reaches
/// a hook once and in order, never on two instances at once, through failures and a restart.
@Suite("After hooks and scheduled jobs", .timeLimit(.minutes(2)))
struct BackgroundWorkTests {
    static let backends = ScratchDatabase.backends
    static let fast = BackgroundWorkConfiguration(
        pollInterval: .milliseconds(10), leaseDuration: .seconds(3), retryDelay: .milliseconds(5),
        maxRetryDelay: .milliseconds(20))

    /// What hooks saw, shared with the test.
    final class Log: Sendable {
        let deliveries = Mutex<[(position: Int64, attempt: Int)]>([])
        let inFlight = Mutex((now: 0, most: 0))
        let (stream, continuation) = AsyncStream.makeStream(of: Int64.self)

        func enter() {
            inFlight.withLock {
                $0.now += 1; $0.most = max($0.most, $0.now)
            }
        }
        func leave() { inFlight.withLock { $0.now -= 1 } }

        /// Waits until `count` different changes were delivered.
        func wait(for count: Int) async {
            func done() -> Bool { deliveries.withLock { Set($0.map(\.position)).count >= count } }
            if done() { return }
            for await _ in stream where done() { return }
        }
    }

    static func work(
        _ storage: any Storage, hooks: RecordHooks, configuration: BackgroundWorkConfiguration = fast
    ) throws -> BackgroundWork {
        var logger = Logger(label: "outpost.test.background")
        logger.logLevel = .critical
        let actions = RecordActions(
            storage: storage, access: AccessControl(storage: storage, logger: logger), hooks: hooks, changes: nil,
            logger: logger)
        return BackgroundWork(
            hooks: hooks, changes: try #require(storage as? any ChangeFeedStorage),
            leases: try #require(storage as? any LeaseStorage), actions: actions, configuration: configuration,
            logger: logger)
    }

    static func collector(_ log: Log, name: String = "collector", failFirst: Bool = false) -> RecordHooks {
        var hooks = RecordHooks()
        hooks.after.append(
            .init(name: name, type: "events", operations: Set(RecordOperation.allCases)) { event in
                log.enter()
                defer { log.leave() }
                await Task.yield()
                if failFirst && event.attempt == 0 { throw Failure() }
                log.deliveries.withLock { $0.append((event.position, event.attempt)) }
                log.continuation.yield(event.position)
            })
        return hooks
    }

    struct Failure: Error {}

    /// Places the hook at the start of the feed, as if it had been registered before any change
    /// (a hook registered for the first time starts at the newest change).
    static func placeAtStart(_ storage: any Storage, name: String = "collector") async throws {
        let now = Identifiers.nowMilliseconds()
        let leases = try #require(storage as? any LeaseStorage)
        _ = try await leases.acquireLease("after:" + name, holder: "setup", now: now, expiresAt: now, initialState: "0")
    }

    func withTwoInstances(
        _ backend: ScratchDatabase.Backend, _ body: (any Storage, any Storage) async throws -> Void
    ) async throws {
        await ResourcePlaces.enter()
        let database = try await ScratchDatabase.make(backend)
        do {
            let first = try await database.open()
            let second = try await database.open()
            do {
                try await body(first, second)
            } catch {
                try? await first.close()
                try? await second.close()
                throw error
            }
            try await first.close()
            try await second.close()
        } catch {
            await database.remove()
            throw error
        }
        await database.remove()
    }

    @Test("two instances follow one after hook: every change once, in order, never two runs at once", arguments: backends)
    func onceInOrder(_ backend: ScratchDatabase.Backend) async throws {
        try await withTwoInstances(backend) { first, second in
            let log = Log()
            let hooks = Self.collector(log)
            try await Self.placeAtStart(first)
            let a = Task { try await Self.work(first, hooks: hooks).run() }
            let b = Task { try await Self.work(second, hooks: hooks).run() }
            var written: [Int64] = []
            for index in 0..<20 {
                let storage = index.isMultiple(of: 2) ? first : second
                let record = try await storage.createRecord(type: "events", fields: ["n": .int(index)], owner: nil)
                _ = try await storage.createRecord(type: "other", fields: [:], owner: nil)
                if index == 10 {
                    _ = try await storage.updateRecord(type: "events", id: record.id, expectedVersion: nil) { _ in [:] }
                }
            }
            let expected = try await (first as! any ChangeFeedStorage).changes(type: "events", after: 0, limit: 100)
            written = expected.map(\.position)
            #expect(written.count == 21)
            await log.wait(for: 21)
            a.cancel()
            b.cancel()
            _ = await (a.result, b.result)
            let positions = log.deliveries.withLock { $0.map(\.position) }
            #expect(positions == written)
            #expect(log.inFlight.withLock { $0.most } == 1)
        }
    }

    @Test("a failing after hook runs again with its attempt count; the change order holds", arguments: backends)
    func retried(_ backend: ScratchDatabase.Backend) async throws {
        try await withTwoInstances(backend) { storage, _ in
            let log = Log()
            try await Self.placeAtStart(storage)
            let task = Task { try await Self.work(storage, hooks: Self.collector(log, failFirst: true)).run() }
            for index in 0..<5 { _ = try await storage.createRecord(type: "events", fields: ["n": .int(index)], owner: nil) }
            await log.wait(for: 5)
            task.cancel()
            _ = await task.result
            let deliveries = log.deliveries.withLock { $0 }
            #expect(deliveries.map(\.attempt) == [1, 1, 1, 1, 1])
            #expect(deliveries.map(\.position) == deliveries.map(\.position).sorted())
        }
    }

    @Test("a hook's place survives a restart: changes written while no instance ran reach it once", arguments: backends)
    func restart(_ backend: ScratchDatabase.Backend) async throws {
        try await withTwoInstances(backend) { first, second in
            let log = Log()
            let hooks = Self.collector(log)
            try await Self.placeAtStart(first)
            let before = Task { try await Self.work(first, hooks: hooks).run() }
            for index in 0..<3 { _ = try await first.createRecord(type: "events", fields: ["n": .int(index)], owner: nil) }
            await log.wait(for: 3)
            before.cancel()
            _ = await before.result
            // Written while nothing follows the hook.
            for index in 3..<6 { _ = try await second.createRecord(type: "events", fields: ["n": .int(index)], owner: nil) }
            // Another instance (another holder) goes on from the stored place: the stopped one let
            // its lease go (one that dies keeps it until it expires).
            let after = Task { try await Self.work(second, hooks: hooks).run() }
            await log.wait(for: 6)
            after.cancel()
            _ = await after.result
            let all = try await (first as! any ChangeFeedStorage).changes(type: "events", after: 0, limit: 100)
            // At least once: the change whose place the stopped instance had not stored yet may come twice.
            let positions = log.deliveries.withLock { $0.map(\.position) }
            #expect(Array(Set(positions)).sorted() == all.map(\.position))
            #expect(positions == positions.sorted())
            #expect(positions.count <= all.count + 1)
        }
    }

    @Test("a job runs once per due time on one of two instances; a missed run is made up once", arguments: backends)
    func jobs(_ backend: ScratchDatabase.Backend) async throws {
        try await withTwoInstances(backend) { first, second in
            let interval: Int64 = 1000
            let runs = Mutex<[Int64]>([])
            let (stream, continuation) = AsyncStream.makeStream(of: Int64.self)
            var hooks = RecordHooks()
            hooks.jobs.append(
                .init(name: "tick", schedule: .interval(interval)) { run in
                    runs.withLock { $0.append(run.scheduledAt) }
                    continuation.yield(run.scheduledAt)
                })
            // The job last ran five due times ago: the server was down since.
            let now = Identifiers.nowMilliseconds()
            let slot = now - now % interval
            let leases = try #require(first as? any LeaseStorage)
            _ = try await leases.acquireLease(
                "job:tick", holder: "old", now: now, expiresAt: now, initialState: String(slot - 5 * interval))
            let a = Task { try await Self.work(first, hooks: hooks).run() }
            let b = Task { try await Self.work(second, hooks: hooks).run() }
            var seen: [Int64] = []
            for await time in stream {
                seen.append(time)
                if seen.count == 2 { break }
            }
            a.cancel()
            b.cancel()
            _ = await (a.result, b.result)
            let all = runs.withLock { $0 }
            // The missed runs are one run, for the latest due time; then the next due time, once.
            #expect(all.count == 2)
            #expect(all.first.map { $0 >= slot } == true)
            #expect(all.count == 2 && all[1] == all[0] + interval)
            #expect(all.allSatisfy { $0 % interval == 0 })
        }
    }
}
