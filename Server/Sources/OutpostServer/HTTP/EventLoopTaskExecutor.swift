import NIOCore
import NIOPosix

/// A Swift task executor that runs jobs on one NIO event loop.
///
/// The server runs each HTTP connection's task with this executor preferred
/// (`withTaskExecutorPreference`), so a request is read, handled and answered on the thread
/// that owns its socket, instead of crossing to a Swift concurrency thread and back for every
/// request. A storage query on a connection of the same event loop (PostgreSQL: one pool per
/// loop, ``PostgresStorage``) then writes, waits and resumes without waking another thread.
/// Work that must not hold the loop already runs elsewhere: SQLite on its connections' own
/// threads, Bcrypt on its own pool.
final class EventLoopTaskExecutor: TaskExecutor, @unchecked Sendable {
    // `@unchecked`: the only stored property is an immutable reference to a thread-safe event loop.
    let eventLoop: any EventLoop

    private init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }

    /// The executor of `eventLoop`: one per loop of NIO's shared group, made once; a new one for
    /// a loop of any other group.
    static func of(_ eventLoop: any EventLoop) -> EventLoopTaskExecutor {
        shared.first { $0.eventLoop === eventLoop } ?? EventLoopTaskExecutor(eventLoop)
    }

    /// The executors of the loops of `MultiThreadedEventLoopGroup.singleton`, which the server and
    /// the PostgreSQL pools use.
    static let shared: [EventLoopTaskExecutor] = MultiThreadedEventLoopGroup.singleton.makeIterator().map {
        EventLoopTaskExecutor($0)
    }

    /// Runs `body` with `eventLoop`'s executor preferred: its work, and what it awaits that runs on
    /// no actor of its own, continues on that loop.
    static func run<Value>(on eventLoop: any EventLoop, _ body: () async throws -> Value) async rethrows -> Value {
        try await withTaskExecutorPreference(of(eventLoop), operation: body)
    }
}
