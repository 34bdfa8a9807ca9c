import Logging
import ServiceLifecycle

/// Runs the mail work of requests (looking the account up, making a token, sending) one job after
/// another, off the request: a reset request is answered before anything about the account is
/// known, so its answer and its time are the same whether the account exists or not.
///
/// Bounded: at most ``MailConfiguration/queueCapacity`` jobs wait; a job past it is dropped and
/// logged. A service of the server's group: on shutdown it stops taking jobs, runs the ones
/// waiting, then returns.
package final class MailDelivery: Service, Sendable {
    typealias Job = @Sendable () async -> Void
    private let jobs: AsyncStream<Job>
    private let continuation: AsyncStream<Job>.Continuation
    private let logger: Logger

    init(capacity: Int, logger: Logger) {
        (jobs, continuation) = AsyncStream.makeStream(of: Job.self, bufferingPolicy: .bufferingOldest(max(1, capacity)))
        self.logger = logger
    }

    /// Queues `job`; `false` when the queue is full (the job is dropped).
    @discardableResult
    func submit(_ job: @escaping Job) -> Bool {
        if case .enqueued = continuation.yield(job) { return true }
        logger.warning("mail queue full; a message was not sent")
        return false
    }

    package func run() async throws {
        await withGracefulShutdownHandler {
            for await job in jobs {
                await job()
            }
        } onGracefulShutdown: { [continuation] in
            continuation.finish()
        }
    }
}
