import HummingbirdBcrypt
import NIOPosix
import Synchronization

/// Bcrypt checks on their own threads, bounded so that a burst from one source cannot stall
/// everyone's sign-in: at most ``AuthConfiguration/passwordChecksPerAddress`` checks of one client
/// address run or wait at once, and at most ``AuthConfiguration/passwordChecksWaiting`` in all.
/// A check past either bound is not queued: it is refused at once (429 with `Retry-After: 1`),
/// before it is counted as a guess.
final class PasswordChecks: Sendable {
    let pool: NIOThreadPool
    let perAddress: Int
    let capacity: Int
    private let state = Mutex<(total: Int, byAddress: [String: Int])>((0, [:]))

    init(pool: NIOThreadPool, perAddress: Int, capacity: Int) {
        self.pool = pool
        self.perAddress = max(1, perAddress)
        self.capacity = max(1, capacity)
    }

    /// Takes a place for a check from `address`, or `false` when a bound is reached.
    func enter(_ address: String) -> Bool {
        state.withLock { state in
            let mine = state.byAddress[address, default: 0]
            guard state.total < capacity, mine < perAddress else { return false }
            state.total += 1
            state.byAddress[address] = mine + 1
            return true
        }
    }

    func leave(_ address: String) {
        state.withLock { state in
            state.total -= 1
            let mine = state.byAddress[address, default: 1] - 1
            state.byAddress[address] = mine > 0 ? mine : nil
        }
    }

    /// Whether `password` matches `hash`, on the pool, in a place taken by ``enter(_:)``.
    func verify(_ password: String, hash: String) async throws -> Bool {
        try await pool.runIfActive { Bcrypt.verify(password, hash: hash) }
    }

    /// Checks in flight (running or waiting for a thread), for the tests.
    var inFlight: Int { state.withLock { $0.total } }
}
