import Synchronization

/// Bounds the lists that no declared index serves (a filter or a sort by fields on a type small
/// enough to allow them: up to ``ServerConfiguration/unindexedListLimit`` rows read per page). Such
/// a list costs up to a CPU for a moment, so at most ``running`` of them run at once, per instance;
/// the others wait in arrival order. At most ``perAddress`` of one client address run or wait, and
/// at most ``waiting`` wait in all: one more is refused at once with 503 `server_busy` and
/// `Retry-After: 1`. Single-record reads, writes and indexed lists never wait here, so a burst of
/// expensive lists cannot slow them beyond the CPU the running scans take.
final class ListScans: Sendable {
    let running: Int
    let waiting: Int
    let perAddress: Int
    /// Lists of one client address that run or wait at once.
    static let defaultPerAddress = 2

    private struct Waiter {
        var id: UInt64
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var running = 0
        var queue: [Waiter] = []
        var byAddress: [String: Int] = [:]
        var nextID: UInt64 = 0
        /// Lists refused since the start, for ``status``.
        var refused = 0
    }

    private let state = Mutex(State())

    init(running: Int, waiting: Int, perAddress: Int) {
        self.running = max(1, running)
        self.waiting = max(0, waiting)
        self.perAddress = max(1, perAddress)
    }

    /// Runs `body` in a place of its own, waiting for one when every place is taken.
    ///
    /// - Throws: 503 `server_busy` at once when `address` holds ``perAddress`` places or the queue is
    ///   full; `CancellationError` when the task is cancelled while it waits.
    func run<T: Sendable>(address: String, _ body: () async throws -> T) async throws -> T {
        try await enter(address)
        defer { leave(address) }
        return try await body()
    }

    private func enter(_ address: String) async throws {
        enum Entry {
            case admitted
            case queued(UInt64)
            case refused
        }
        let entry: Entry = state.withLock { state in
            let mine = state.byAddress[address, default: 0]
            if mine >= perAddress {
                state.refused += 1
                return .refused
            }
            if state.running < running {
                state.running += 1
                state.byAddress[address] = mine + 1
                return .admitted
            }
            guard state.queue.count < waiting else {
                state.refused += 1
                return .refused
            }
            state.byAddress[address] = mine + 1
            state.nextID += 1
            return .queued(state.nextID)
        }
        switch entry {
        case .admitted: return
        case .refused: throw Self.busy
        case .queued(let id):
            do {
                try await withTaskCancellationHandler {
                    try await withCheckedThrowingContinuation { continuation in
                        let cancelled = state.withLock { state in
                            if Task.isCancelled { return true }
                            state.queue.append(Waiter(id: id, continuation: continuation))
                            return false
                        }
                        if cancelled { continuation.resume(throwing: CancellationError()) }
                    }
                } onCancel: {
                    let waiter = state.withLock { state in
                        state.queue.firstIndex { $0.id == id }.map { state.queue.remove(at: $0) }
                    }
                    waiter?.continuation.resume(throwing: CancellationError())
                }
            } catch {
                state.withLock { Self.release(address, in: &$0) }
                throw error
            }
        }
    }

    private func leave(_ address: String) {
        let next: Waiter? = state.withLock { state in
            Self.release(address, in: &state)
            // The place passes to the first waiter, if any; otherwise it is free.
            guard !state.queue.isEmpty else {
                state.running -= 1
                return nil
            }
            return state.queue.removeFirst()
        }
        next?.continuation.resume()
    }

    private static func release(_ address: String, in state: inout State) {
        let mine = state.byAddress[address, default: 1] - 1
        state.byAddress[address] = mine > 0 ? mine : nil
    }

    /// What `GET /health` reports: places in use, lists waiting, lists refused since the start, and
    /// whether the instance is saturated (every place taken and the queue at least half full).
    var status: (running: Int, waiting: Int, refused: Int, saturated: Bool) {
        state.withLock { state in
            (
                state.running, state.queue.count, state.refused,
                state.running >= running && state.queue.count * 2 >= max(1, waiting)
            )
        }
    }

    static let busy = ServerError(
        .serviceUnavailable, code: "server_busy",
        message: "The server runs as many lists without an index as it may; retry in a second, or ask for a list a "
            + "declared index serves (outpost types index TYPE FIELD...)",
        headers: [.retryAfter: "1"])
}
