/// An async lock per key: callers with the same key run one at a time, in arrival order; other keys
/// are not held up. Serialises the transactions of a SQLite storage on its one writer connection.
actor KeyedLock {
    private var held: Set<String> = []
    private var waiters: [String: [CheckedContinuation<Void, Never>]] = [:]

    func withLock<T: Sendable>(_ key: String, _ body: @Sendable () async throws -> T) async throws -> T {
        await acquire(key)
        do {
            let value = try await body()
            release(key)
            return value
        } catch {
            release(key)
            throw error
        }
    }

    private func acquire(_ key: String) async {
        guard held.contains(key) else {
            held.insert(key)
            return
        }
        // Runs synchronously on the actor: the waiter is queued before anything else can release.
        await withCheckedContinuation { waiters[key, default: []].append($0) }
    }

    private func release(_ key: String) {
        if var queue = waiters[key], !queue.isEmpty {
            let next = queue.removeFirst()
            waiters[key] = queue.isEmpty ? nil : queue
            next.resume()  // ownership passes straight to the next waiter
        } else {
            held.remove(key)
        }
    }
}
