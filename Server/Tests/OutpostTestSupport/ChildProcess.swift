package import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// How a child process ended.
package struct ChildExit: Sendable, Equatable {
    /// The exit status, or the number of the signal that ended it.
    package var status: Int32
    /// Whether a signal ended it (`kill -9`), rather than `exit`.
    package var signalled: Bool

    package init(status: Int32, signalled: Bool) {
        self.status = status
        self.signalled = signalled
    }
}

/// A child process's end, awaited without holding a thread.
///
/// `Process.waitUntilExit()` and a blocking read of a child's pipe hold their thread until the
/// child is done. Tests run on Swift's cooperative pool, which has one thread per core (two on
/// CI): two such waits stopped every task of the test process, the in-process server a child was
/// talking to included, until time limits fired and a test died with its client still open. Made
/// before `run()`, this sets the process's termination handler and lets any number of tasks await
/// the end.
package final class ProcessExit: Sendable {
    private let state = Mutex<(exit: ChildExit?, waiters: [CheckedContinuation<ChildExit, Never>])>((nil, []))
    /// The watched process (for its id once it runs); only read after `run()`.
    private let process: Process

    /// Watches `process`, which must not have been started yet (it takes its `terminationHandler`).
    package init(watching process: Process) {
        self.process = process
        process.terminationHandler = { [self] ended in
            finish(ChildExit(status: ended.terminationStatus, signalled: ended.terminationReason == .uncaughtSignal))
        }
    }

    /// Whether the process has ended.
    package var hasExited: Bool { state.withLock { $0.exit != nil } }

    /// Waits until the process has ended.
    ///
    /// Foundation's termination handler alone is not enough on Linux: now and then it never runs
    /// (the child stays a zombie nobody reaped: seen after a `kill -9` while other children were
    /// started and stopped), and the wait would last forever. So while waiting, this also looks
    /// every 50 ms whether the child has ended, without reaping it (`waitid` with `WNOWAIT`,
    /// leaving that to Foundation): nothing else reports such an end.
    @discardableResult
    package func wait() async -> ChildExit {
        #if canImport(Glibc)
            let pid = process.processIdentifier
            let watcher = Task { [self] in
                while !Task.isCancelled && !hasExited {
                    if let ended = Self.peekExit(pid) {
                        finish(ended)
                        return
                    }
                    try? await Task.sleep(for: .milliseconds(50))
                }
            }
            defer { watcher.cancel() }
        #endif
        return await withCheckedContinuation { continuation in
            let known = state.withLock { state -> ChildExit? in
                if let exit = state.exit { return exit }
                state.waiters.append(continuation)
                return nil
            }
            if let known { continuation.resume(returning: known) }
        }
    }

    #if canImport(Glibc)
        /// How child `pid` ended, if it has, leaving it to be reaped by Foundation.
        package static func peekExit(_ pid: Int32) -> ChildExit? {
            guard pid > 0 else { return nil }
            var info = siginfo_t()
            guard waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 else { return nil }
            let reported = info._sifields._sigchld
            guard reported.si_pid == pid else { return nil }  // still running
            return ChildExit(status: reported.si_status, signalled: info.si_code != CLD_EXITED)
        }
    #endif

    /// Records the end once (the first report wins) and resumes every waiter.
    private func finish(_ exit: ChildExit) {
        let waiters = state.withLock { state -> [CheckedContinuation<ChildExit, Never>] in
            if state.exit == nil { state.exit = exit }
            defer { state.waiters = [] }
            return state.waiters
        }
        let first = state.withLock { $0.exit } ?? exit
        for waiter in waiters { waiter.resume(returning: first) }
    }
}

extension FileHandle {
    /// Reads to the end of the file or pipe on a thread of its own, so that the awaiting task holds
    /// none of the cooperative pool's threads while the writer takes its time.
    package func readAllOffPool() async -> Data {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { [self] in
                continuation.resume(returning: (try? readToEnd()) ?? Data())
            }
        }
    }
}

extension FileHandle {
    /// The chunks read from this pipe until its end, read on a thread of its own.
    ///
    /// Not `readabilityHandler`: its dispatch source watches the descriptor in libdispatch's epoll
    /// set, and a handle released (and its descriptor closed) before the source saw the end leaves
    /// libdispatch with a stale registration; once the number is reused, its manager thread can
    /// crash (`_dispatch_event_loop_drain`, swift-corelibs-foundation#3276; seen here with
    /// many `outpost serve` children). The reading thread holds the handle until the end instead.
    package func chunksOffPool() -> AsyncStream<Data> {
        let (chunks, sink) = AsyncStream.makeStream(of: Data.self)
        Thread.detachNewThread { [self] in
            while true {
                let data = availableData
                if data.isEmpty { break }
                sink.yield(data)
            }
            sink.finish()
        }
        return chunks
    }
}
