import Foundation
import Logging
@_spi(OutpostInternal) import OutpostSupport
import ServiceLifecycle

/// Runs plugins' after hooks and scheduled jobs, each under its own lease in storage, so one
/// instance at a time does each piece of work however many share the database.
struct BackgroundWork: Service {
    let hooks: RecordHooks
    let changes: any ChangeFeedStorage
    let leases: any LeaseStorage
    let actions: RecordActions
    let configuration: BackgroundWorkConfiguration
    let logger: Logger
    /// This instance, as lease holder.
    let holder = "instance-" + Identifiers.random()

    /// The work was given up because another instance took the lease over.
    struct LeaseLost: Error {}

    func run() async throws {
        await withDiscardingTaskGroup { group in
            for hook in hooks.after {
                group.addTask {
                    await self.keepRunning("after:" + hook.name) { try await self.follow(hook) }
                }
            }
            for job in hooks.jobs {
                group.addTask {
                    await self.keepRunning("job:" + job.name) { try await self.schedule(job) }
                }
            }
            try? await gracefulShutdown()
            group.cancelAll()
        }
    }

    /// Runs `body` until the task is cancelled, starting it again after a storage error; then lets
    /// the lease `name` go, so another instance goes on at once instead of when it expires.
    private func keepRunning(_ name: String, _ body: @Sendable () async throws -> Void) async {
        while !Task.isCancelled {
            do {
                try await body()
            } catch is CancellationError {
                break
            } catch is LeaseLost {
                logger.info("background work lost its lease to another instance", metadata: ["work": "\(name)"])
            } catch {
                logger.warning("background work failed; trying again", metadata: ["work": "\(name)", "error": "\(error)"])
                try? await Task.sleep(for: configuration.retryDelay)
            }
        }
        // In a task of its own, which this task's cancellation does not reach.
        await Task { [leases, holder] in try? await leases.releaseLease(name, holder: holder) }.value
    }

    private var now: Int64 { Identifiers.nowMilliseconds() }
    private var leaseMilliseconds: Int64 { configuration.leaseDuration.inMilliseconds }

    // MARK: After hooks

    /// Follows the change feed from the hook's stored position, running the hook on every change it
    /// applies to and storing the position after each; returns when the lease is lost.
    private func follow(_ hook: RecordHooks.After) async throws {
        let name = "after:" + hook.name
        let start = try await changes.changeBounds().latest
        while !Task.isCancelled {
            guard
                let state = try await leases.acquireLease(
                    name, holder: holder, now: now, expiresAt: now + leaseMilliseconds, initialState: String(start))
            else {
                try await Task.sleep(for: configuration.pollInterval)
                continue
            }
            var position = Int64(state) ?? start
            let bounds = try await changes.changeBounds()
            if bounds.prunedThrough > position {
                logger.error(
                    "after hook fell behind the change feed's retention; changes were not seen",
                    metadata: ["hook": "\(hook.name)", "from": "\(position + 1)", "through": "\(bounds.prunedThrough)"])
                position = bounds.prunedThrough
            }
            let batch = try await changes.changes(type: hook.type == "*" ? nil : hook.type, after: position, limit: 100)
            if batch.isEmpty {
                try await Task.sleep(for: configuration.pollInterval)
                continue
            }
            for change in batch {
                if let operation = RecordOperation(change.kind), RecordHooks.applies(hook, to: operation, on: change.record.type)
                {
                    try await deliver(change, operation: operation, to: hook, lease: name)
                }
                guard
                    try await leases.updateLease(
                        name, holder: holder, state: String(change.position), expiresAt: now + leaseMilliseconds)
                else { throw LeaseLost() }
            }
        }
    }

    /// Runs the hook on one change until it succeeds, waiting longer after each failure.
    private func deliver(_ change: RecordChange, operation: RecordOperation, to hook: RecordHooks.After, lease: String)
        async throws
    {
        var attempt = 0
        var delay = configuration.retryDelay
        var hookLogger = logger
        hookLogger[metadataKey: "hook"] = "\(hook.name)"
        while true {
            let event = RecordEvent(
                operation: operation, record: change.record, position: change.position, attempt: attempt,
                logger: hookLogger, data: actions.data(caller: nil, identity: nil))
            do {
                try await holding(lease, state: String(change.position - 1)) { try await hook.body(event) }
                return
            } catch let error where !(error is LeaseLost) && !(error is CancellationError) {
                hookLogger.warning(
                    "after hook failed; it runs again",
                    metadata: [
                        "record": "\(change.record.type)/\(change.record.id)", "position": "\(change.position)",
                        "attempt": "\(attempt + 1)", "retry_in": "\(delay)", "error": "\(error)",
                    ])
            }
            try await Task.sleep(for: delay)
            attempt += 1
            delay = min(delay * 2, configuration.maxRetryDelay)
        }
    }

    /// Runs `body` while renewing the lease every third of its length; cancels `body` and throws
    /// ``LeaseLost`` when the lease is lost.
    private func holding(_ lease: String, state: String, _ body: @escaping @Sendable () async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await body() }
            group.addTask {
                while true {
                    try await Task.sleep(for: configuration.leaseDuration / 3)
                    guard
                        try await leases.updateLease(
                            lease, holder: holder, state: state, expiresAt: now + leaseMilliseconds)
                    else { throw LeaseLost() }
                }
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    // MARK: Jobs

    /// Runs the job at its latest due time that no instance ran yet: runs missed while no instance
    /// was up are made up by one.
    private func schedule(_ job: RecordHooks.Job) async throws {
        let name = "job:" + job.name
        var jobLogger = logger
        jobLogger[metadataKey: "job"] = "\(job.name)"
        while !Task.isCancelled {
            let time = now
            // A job seen for the first time counts as having run now: it first runs when next due.
            if let state = try await leases.acquireLease(
                name, holder: holder, now: time, expiresAt: time + leaseMilliseconds, initialState: String(time)),
                let last = Int64(state), let due = job.schedule.latest(atOrBefore: time), due > last
            {
                let run = JobRun(
                    name: job.name, scheduledAt: due, logger: jobLogger, data: actions.data(caller: nil, identity: nil))
                do {
                    try await holding(name, state: state) { try await job.body(run) }
                } catch let error where !(error is LeaseLost) && !(error is CancellationError) {
                    jobLogger.error("scheduled job failed; it runs again when next due", metadata: ["error": "\(error)"])
                }
                guard try await leases.updateLease(name, holder: holder, state: String(due), expiresAt: now) else {
                    throw LeaseLost()
                }
            } else {
                try await leases.releaseLease(name, holder: holder)
            }
            let next = job.schedule.next(after: now) ?? (now + leaseMilliseconds)
            let wait = min(next - now, leaseMilliseconds)
            try await Task.sleep(for: .milliseconds(max(wait, 1)))
        }
    }
}

extension RecordOperation {
    init?(_ kind: RecordChange.Kind) {
        switch kind {
        case .created: self = .create
        case .updated: self = .update
        case .deleted: self = .delete
        }
    }
}
