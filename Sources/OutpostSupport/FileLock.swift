import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An exclusive advisory lock (`flock`) on a file, shared with other processes.
///
/// Each ``acquire(path:timeout:)`` opens the file anew, so two holders in one process exclude each
/// other just as two processes do. When the lock is taken, the wait is a blocking `flock` on a
/// thread of its own, never on the cooperative pool and never polling. A wait that outlives its
/// time limit (or its task) is abandoned: the caller gets the error at once, and should the lock
/// come later, the waiting thread releases it straight away.
@_spi(OutpostInternal) public final class FileLock: Sendable {
    /// The lock file.
    @_spi(OutpostInternal) public let path: String
    private let descriptor: Int32
    private let released = Mutex(false)

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    /// Opens (creating with mode 0600) and locks `path`, waiting at most `timeout`.
    @_spi(OutpostInternal) public static func acquire(path: String, timeout: Duration) async throws(FileLockError) -> FileLock {
        let opened: Result<(descriptor: Int32, locked: Bool), FileLockError>
        do {
            opened = .success(try await BlockingPool.shared.run { try openAndTryLock(path) })
        } catch let error as FileLockError {
            opened = .failure(error)
        } catch {
            opened = .failure(.cancelled(path: path))
        }
        let (descriptor, locked) = try opened.get()
        if locked { return FileLock(path: path, descriptor: descriptor) }
        let wait = LockWait(descriptor: descriptor)
        switch await withTimeLimit(timeout, { await wait.block() }) {
        case .value(0):
            if wait.claim() { return FileLock(path: path, descriptor: descriptor) }
            throw FileLockError.timedOut(path: path)
        case .value(let code):
            wait.abandon()
            throw FileLockError.system(operation: "lock", path: path, errno: code)
        case .timedOut:
            wait.abandon()
            throw FileLockError.timedOut(path: path)
        case .error:
            wait.abandon()
            throw FileLockError.cancelled(path: path)
        }
    }

    /// Unlocks and closes the file; later calls do nothing.
    @_spi(OutpostInternal) public func release() {
        let first = released.withLock { released in
            defer { released = true }
            return !released
        }
        guard first else { return }
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }

    deinit { release() }

    private static func openAndTryLock(_ path: String) throws(FileLockError) -> (descriptor: Int32, locked: Bool) {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw .system(operation: "open", path: path, errno: errno) }
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            if code == EINTR { continue }
            if code == EWOULDBLOCK { return (descriptor, false) }
            close(descriptor)
            throw .system(operation: "lock", path: path, errno: code)
        }
        return (descriptor, true)
    }
}

extension FileLock {
    /// Takes the exclusive `flock` of `descriptor` (an open file) for a short piece of work, waiting
    /// at most `timeout` for another holder; ``unlock(_:)`` lets it go.
    ///
    /// For callers on a thread of their own (a serial dispatch queue), never on the cooperative
    /// pool: a wait polls with growing pauses (1 to 50 ms), which suits locks held for the length
    /// of one write, not for a lifetime.
    @_spi(OutpostInternal) public static func lockBriefly(_ descriptor: Int32, path: String, timeout: Duration)
        throws(FileLockError)
    {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        var pause: UInt32 = 1_000
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            if code == EINTR { continue }
            guard code == EWOULDBLOCK else { throw .system(operation: "lock", path: path, errno: code) }
            guard ContinuousClock.now < deadline else { throw .timedOut(path: path) }
            usleep(pause)
            pause = min(pause * 2, 50_000)
        }
    }

    /// Lets go of a lock taken with ``lockBriefly(_:path:timeout:)``.
    @_spi(OutpostInternal) public static func unlock(_ descriptor: Int32) {
        flock(descriptor, LOCK_UN)
    }
}

/// One blocking wait for a lock, and who owns the descriptor once it ends.
private final class LockWait: Sendable {
    private enum State {
        case waiting
        /// The thread has the lock; the caller has not taken it yet.
        case acquired
        /// The caller took the lock.
        case claimed
        /// The caller gave up; whoever comes last closes the descriptor.
        case abandoned
    }

    private let descriptor: Int32
    private let state = Mutex(State.waiting)

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Blocks a new thread in `flock` and returns 0 once it holds the lock, else the errno.
    func block() async -> Int32 {
        await withCheckedContinuation { continuation in
            Thread { [self] in
                Thread.current.name = "outpost-file-lock"
                var code: Int32 = 0
                while flock(descriptor, LOCK_EX) != 0 {
                    code = errno
                    if code != EINTR { break }
                    code = 0
                }
                if code == 0 {
                    lockArrived()
                } else {
                    close(descriptor)  // no lock: nobody else uses the descriptor after a failure
                }
                continuation.resume(returning: code)
            }.start()
        }
    }

    /// The caller takes the lock; false when it was abandoned meanwhile.
    func claim() -> Bool {
        state.withLock { state in
            guard case .acquired = state else { return false }
            state = .claimed
            return true
        }
    }

    /// The caller no longer wants the lock: release it now if the thread got it, or when it does.
    func abandon() {
        let close = state.withLock { state in
            defer { state = .abandoned }
            if case .acquired = state { return true }
            return false
        }
        if close { closeDescriptor() }
    }

    private func lockArrived() {
        let abandoned = state.withLock { state in
            if case .abandoned = state { return true }
            state = .acquired
            return false
        }
        if abandoned { closeDescriptor() }
    }

    private func closeDescriptor() {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}

/// Why ``FileLock/acquire(path:timeout:)`` failed.
@_spi(OutpostInternal) public enum FileLockError: Error, CustomStringConvertible {
    /// A system call failed.
    case system(operation: String, path: String, errno: Int32)
    /// Another holder kept the lock past the time limit.
    case timedOut(path: String)
    /// The waiting task was cancelled.
    case cancelled(path: String)

    @_spi(OutpostInternal) public var description: String {
        switch self {
        case .system(let operation, let path, let code):
            "could not \(operation) \(path): \(String(cString: strerror(code))) (errno \(code))"
        case .timedOut(let path):
            "another process has held \(path) for too long"
        case .cancelled(let path):
            "the wait for \(path) was cancelled"
        }
    }
}
