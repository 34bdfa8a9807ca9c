import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A few threads of our own for work that blocks its thread: file reads, writes and `fsync`.
///
/// Swift's cooperative pool has one thread per core; a task that blocks one of them (a slow disk,
/// a network file system) stalls every other task on it. Work submitted here runs on the pool's
/// own threads instead, and the awaiting task is resumed when it is done. The jobs are short; a
/// wait of unbounded length (a file lock) gets a thread of its own (``FileLock``).
@_spi(OutpostInternal) public final class BlockingPool: Sendable {
    /// The pool the client modules share: two threads.
    @_spi(OutpostInternal) public static let shared = BlockingPool(threads: 2, name: "outpost-blocking-io")

    /// The prefix of the pool's thread names (`name-0`, `name-1`, …).
    @_spi(OutpostInternal) public let name: String
    private let jobs = Mutex<[@Sendable () -> Void]>([])
    private let available = DispatchSemaphore(value: 0)
    private let members = Mutex<[pthread_t]>([])

    /// Starts `threads` threads that live as long as the process.
    @_spi(OutpostInternal) public init(threads: Int, name: String) {
        self.name = name
        for index in 0..<max(1, threads) {
            // Named from inside: on Linux a name given before `start()` does not reach `Thread.current`.
            Thread { [self] in
                Thread.current.name = "\(name)-\(index)"
                members.withLock { $0.append(pthread_self()) }
                serve()
            }.start()
        }
    }

    /// Runs `job` on one of the pool's threads, in submission order.
    @_spi(OutpostInternal) public func submit(_ job: @escaping @Sendable () -> Void) {
        jobs.withLock { $0.append(job) }
        available.signal()
    }

    /// Runs `body` on one of the pool's threads and returns its result to the awaiting task.
    @_spi(OutpostInternal) public func run<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value
    {
        let result: Result<Value, any Error> = await withCheckedContinuation { continuation in
            submit { continuation.resume(returning: Result { try body() }) }
        }
        return try result.get()
    }

    /// Whether the calling thread is one of the pool's.
    @_spi(OutpostInternal) public var isCurrentThreadInPool: Bool {
        let current = pthread_self()
        return members.withLock { $0.contains { pthread_equal($0, current) != 0 } }
    }

    private func serve() {
        while true {
            available.wait()
            let job = jobs.withLock { $0.removeFirst() }
            job()
        }
    }
}
