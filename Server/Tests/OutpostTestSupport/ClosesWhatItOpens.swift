@_spi(OutpostInternal) import OutpostSupport
import Synchronization
package import Testing

/// Fails a test that leaves open a database connection, a PostgreSQL pool or a running server it
/// opened, and bounds how many tests hold such things at once: each holds threads (four per SQLite
/// storage, five per live server), and a test process that holds them by the hundred runs out of
/// them (CI's test process once crashed with over a thousand idle pool threads).
///
/// Put on a suite, it applies to each of its tests (each case of a parameterized one): the test
/// runs with a tally of its own bound to its task (``OpenResources/current``, inherited by its
/// child tasks and its `Task {}` work), which must be back at zero once it has finished. A test
/// that opens a server or a storage through the test helpers first waits for one of
/// ``ResourcePlaces/count`` places (``ResourcePlaces/enter()``), held until the test ends; tests
/// that open nothing never wait.
package struct ClosesWhatItOpens: SuiteTrait, TestTrait, TestScoping {
    package init() {}

    package var isRecursive: Bool { true }

    package func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        let tally = OpenResources()
        let place = ResourcePlaces.Holder()
        defer { place.leave() }
        try await OpenResources.$current.withValue(tally) {
            try await ResourcePlaces.$current.withValue(place) {
                try await function()
            }
        }
        #expect(
            tally.open == 0,
            "\(test.name) left \(tally.open) connection(s), pool(s) or server(s) open: close every storage, stop every server it starts"
        )
    }
}

extension Trait where Self == ClosesWhatItOpens {
    /// Checks that each test closes every storage and stops every server it opens, and bounds how
    /// many tests hold them at once.
    package static var closesWhatItOpens: Self { ClosesWhatItOpens() }
}

/// The places of tests that hold servers or storages: at most ``count`` such tests run at once.
package enum ResourcePlaces {
    /// How many tests may hold servers or storages at once, in the whole process.
    package static let count = 24

    /// How long a test waits for a place before it goes ahead without one: the places bound the
    /// threads in normal runs, and can never hold a test back for good. A minute: on a host three
    /// times slower, tests held their places past 10 s, the waiting ones went ahead without one,
    /// and the PostgreSQL test run reached its 1,000 connections (416 at most with a minute).
    package static let patience = Duration.seconds(60)

    /// The current test's place, bound by ``ClosesWhatItOpens``.
    @TaskLocal package static var current: Holder?

    fileprivate static let places = Places(count: count)

    /// Waits for a place for the current test, unless it has one already (or runs without
    /// ``ClosesWhatItOpens``). Called by the helpers that start servers and open storages.
    package static func enter() async {
        guard let holder = current, holder.claim() else { return }
        if await places.take(within: patience) { holder.took() }
    }

    /// Whether the current test holds a place, given back when it ends.
    package final class Holder: Sendable {
        private let claimed = Atomic(false)
        private let holds = Atomic(false)

        package init() {}

        /// `true` the first time: the caller asks for the place.
        fileprivate func claim() -> Bool {
            !claimed.exchange(true, ordering: .acquiringAndReleasing)
        }

        fileprivate func took() { holds.store(true, ordering: .releasing) }

        /// Gives the place back, if the test got one.
        package func leave() {
            if holds.exchange(false, ordering: .acquiringAndReleasing) { ResourcePlaces.places.give() }
        }
    }
}

/// A fixed number of places, handed out in the order they were asked for.
private final class Places: Sendable {
    private struct State {
        var free: Int
        var waiting: [(id: Int, continuation: CheckedContinuation<Bool, Never>)] = []
        var nextID = 0
    }

    private let state: Mutex<State>

    init(count: Int) { state = Mutex(State(free: count)) }

    /// `true` once a place is taken; `false` when none came free within `patience`.
    func take(within patience: Duration) async -> Bool {
        await withCheckedContinuation { continuation in
            let id: Int? = state.withLock { state in
                if state.free > 0 {
                    state.free -= 1
                    return nil
                }
                state.nextID += 1
                state.waiting.append((state.nextID, continuation))
                return state.nextID
            }
            guard let id else { return continuation.resume(returning: true) }
            Task {
                try? await Task.sleep(for: patience)
                let expired = self.state.withLock { state in
                    state.waiting.firstIndex { $0.id == id }.map { state.waiting.remove(at: $0).continuation }
                }
                expired?.resume(returning: false)
            }
        }
    }

    /// Hands the place to the longest waiter, or frees it.
    func give() {
        let next = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            if state.waiting.isEmpty {
                state.free += 1
                return nil
            }
            return state.waiting.removeFirst().continuation
        }
        next?.resume(returning: true)
    }
}
