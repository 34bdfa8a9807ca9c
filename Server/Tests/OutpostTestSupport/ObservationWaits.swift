import Observation

/// Waits, on the main actor, for the next change of what `read` reads of `@Observable` models:
/// one change however many properties a single update sets, as a SwiftUI view sees it.
@MainActor
public func nextChange(of read: () -> Void) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        withObservationTracking(read) { continuation.resume() }
    }
}

/// Waits, on the main actor, until `done` holds, waking at each change of what `read` reads, and
/// returns how many changes it woke for (0 when `done` held at once). Each wake re-reads before
/// waiting again, as a view re-renders: changes applied in one main-actor job count once.
@MainActor
public func changes(of read: () -> Void, until done: () -> Bool) async -> Int {
    var count = 0
    while !done() {
        await nextChange(of: read)
        count += 1
    }
    return count
}

/// Counts every change of what `read` reads, re-registering at each one as it happens (not a turn
/// later, as a view would): each update applied counts, however updates are batched into jobs.
/// Read only one property per update in `read`, or an update that sets several counts several times.
@MainActor
public final class ChangeCounter {
    public private(set) var count = 0
    private let read: @MainActor () -> Void

    public init(_ read: @escaping @MainActor () -> Void) {
        self.read = read
        track()
    }

    private func track() {
        withObservationTracking(read) { [weak self] in
            MainActor.assumeIsolated {
                self?.count += 1
                self?.track()
            }
        }
    }
}
