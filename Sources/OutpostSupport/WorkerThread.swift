import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A thread of its own for work that may block for as long as someone else decides: a write into
/// a bound stream pair blocks until URLSession reads, which may be the whole length of an upload.
/// ``BlockingPool``'s few shared threads are for short jobs; a wait of that kind gets this.
///
/// Jobs run in submission order; ``finish()`` ends the thread once the jobs before it have run.
@_spi(OutpostInternal) public final class WorkerThread: Sendable {
    private struct Queue {
        var jobs: [@Sendable () -> Void] = []
        var finished = false
    }

    private let queue = Mutex(Queue())
    /// One signal per job, and one for ``finish()``.
    private let available = DispatchSemaphore(value: 0)
    /// The thread, once it runs (its name is not a reliable mark on Linux, where a name set early
    /// may be lost).
    private let member = Mutex<pthread_t?>(nil)

    /// Starts the thread, named `name` (at most 15 bytes: Linux keeps no longer thread names).
    @_spi(OutpostInternal) public init(name: String) {
        // Named from inside: on Linux a name given before `start()` does not reach `Thread.current`.
        Thread { [self] in
            member.withLock { $0 = pthread_self() }
            Thread.current.name = name
            serve()
        }.start()
    }

    /// Whether the calling thread is this one.
    @_spi(OutpostInternal) public var isCurrentThread: Bool {
        let current = pthread_self()
        return member.withLock { $0.map { pthread_equal($0, current) != 0 } ?? false }
    }

    /// Runs `body` on the thread and returns its result to the awaiting task, whose thread is free
    /// meanwhile. Not after ``finish()``.
    @_spi(OutpostInternal) public func run<Value: Sendable>(_ body: @escaping @Sendable () -> Value) async -> Value {
        await withCheckedContinuation { continuation in
            submit { continuation.resume(returning: body()) }
        }
    }

    /// Ends the thread after the jobs submitted before.
    @_spi(OutpostInternal) public func finish() {
        queue.withLock { $0.finished = true }
        available.signal()
    }

    private func submit(_ job: @escaping @Sendable () -> Void) {
        queue.withLock { queue in
            precondition(!queue.finished, "WorkerThread: a job after finish()")
            queue.jobs.append(job)
        }
        available.signal()
    }

    private func serve() {
        while true {
            available.wait()
            let (job, finished) = queue.withLock { queue in
                (queue.jobs.isEmpty ? nil : queue.jobs.removeFirst(), queue.finished)
            }
            if let job {
                job()
            } else if finished {
                return
            }
        }
    }
}
