@_spi(OutpostInternal) import OutpostSupport

/// The record hooks and scheduled jobs plugins registered, by record type.
struct RecordHooks: Sendable {
    struct Before: Sendable {
        var type: String
        var operations: Set<RecordOperation>
        var body: BeforeRecordHook
    }

    struct After: Sendable {
        /// Unique among after hooks: the hook's place in the change feed is stored under it.
        var name: String
        var type: String
        var operations: Set<RecordOperation>
        var body: AfterRecordHook
    }

    struct Job: Sendable {
        var name: String
        var schedule: JobSchedule
        var body: JobBody
    }

    /// In registration order; `*` hooks run on every type.
    var before: [Before] = []
    var after: [After] = []
    var jobs: [Job] = []

    /// The before hooks of `operation` on `type`, in registration order.
    func before(_ operation: RecordOperation, on type: String) -> [BeforeRecordHook] {
        before.filter { ($0.type == type || $0.type == "*") && $0.operations.contains(operation) }.map(\.body)
    }

    /// Whether the after hook applies to a change of `operation` on `type`.
    static func applies(_ hook: After, to operation: RecordOperation, on type: String) -> Bool {
        (hook.type == type || hook.type == "*") && hook.operations.contains(operation)
    }

    var isEmpty: Bool { before.isEmpty && after.isEmpty && jobs.isEmpty }
}

extension PluginRegistrar {
    /// Registers a hook that runs before `operations` on records of `type` (`*` for every type),
    /// inside the request that writes: it may change the fields to store, or refuse the write by
    /// throwing ``RecordRefusal`` (answered 422 with its code and message). Hooks run after the
    /// access rules allowed the write, in registration order.
    ///
    /// An update's hook runs on the record as it is when the hook starts; when the record changes
    /// before the write commits, the hook runs again on the new version (unless the client asked
    /// for a version with `If-Match`: then the answer is 412).
    ///
    /// - Parameters:
    ///   - operations: which writes the hook sees (`.create`, `.update`, `.delete`).
    ///   - type: the record type, or `*` for every type.
    ///   - body: the hook; it changes ``RecordWrite/fields`` in place.
    public mutating func before(
        _ operations: RecordOperation..., on type: String, _ body: @escaping BeforeRecordHook
    ) throws {
        try Self.validateHook(type: type, operations: operations)
        hooks.before.append(.init(type: type, operations: Set(operations), body: body))
    }

    /// Registers a hook that runs after `operations` on records of `type` (`*` for every type)
    /// committed, away from the request: at least once per change, in change order, retried with
    /// backoff while it throws, never on two server instances at once, and never lost on a restart
    /// (its place in the change feed is kept in storage under `name`).
    ///
    /// A hook registered for the first time starts with the changes made after it.
    ///
    /// - Parameters:
    ///   - operations: which changes the hook sees (`.create`, `.update`, `.delete`).
    ///   - type: the record type, or `*` for every type.
    ///   - name: a stable name (1–128 letters, digits, `_ . : -`); renaming a hook starts it afresh.
    ///   - body: the hook.
    public mutating func after(
        _ operations: RecordOperation..., on type: String, name: String, _ body: @escaping AfterRecordHook
    ) throws {
        try Self.validateHook(type: type, operations: operations)
        try claim(name, kind: "after hook")
        hooks.after.append(.init(name: name, type: type, operations: Set(operations), body: body))
    }

    /// Registers a job that runs every `interval` (such as `.minutes(5)`), on one server instance at a time: at each
    /// multiple of `interval` since 1970 (UTC), so every instance agrees on when a run is due. A
    /// run missed while no instance was up runs once when one comes back.
    ///
    /// - Parameters:
    ///   - name: a stable name (1–128 letters, digits, `_ . : -`); when the job last ran is kept under it.
    ///   - interval: at least one second.
    ///   - body: the job.
    public mutating func job(_ name: String, every interval: Duration, _ body: @escaping JobBody) throws {
        guard interval >= .seconds(1) else {
            throw ServerError(
                .internalServerError, code: "invalid_job_interval",
                message: "Job '\(name)' runs every \(interval); a job's interval is at least one second")
        }
        try claim(name, kind: "job")
        hooks.jobs.append(.init(name: name, schedule: .interval(interval.inMilliseconds), body: body))
    }

    /// Registers a job that runs at the times a cron expression matches (UTC), on one server
    /// instance at a time. A run missed while no instance was up runs once when one comes back.
    ///
    /// ```swift
    /// try registrar.job("weekly-digest", cron: "30 7 * * MON") { run in ... }
    /// ```
    ///
    /// - Parameters:
    ///   - name: a stable name (1–128 letters, digits, `_ . : -`); when the job last ran is kept under it.
    ///   - cron: five fields, `minute hour day-of-month month day-of-week`, or a macro such as
    ///     `@daily` (``CronSchedule``).
    ///   - body: the job.
    /// - Throws: ``ServerError`` `invalid_cron` when the expression does not parse or never matches.
    public mutating func job(_ name: String, cron: String, _ body: @escaping JobBody) throws {
        let schedule: CronSchedule
        do {
            schedule = try CronSchedule(cron)
        } catch let error as CronSchedule.ParseError {
            throw ServerError(.internalServerError, code: "invalid_cron", message: "Job '\(name)': \(error.description)")
        }
        try claim(name, kind: "job")
        hooks.jobs.append(.init(name: name, schedule: .cron(schedule), body: body))
    }

    static func validateHook(type: String, operations: [RecordOperation]) throws {
        guard type == "*" || RecordRoutes.isValidName(type) else {
            throw ServerError(
                .internalServerError, code: "invalid_hook_type",
                message: "'\(type)' is not a record type: use 1–64 letters, digits, '_' or '-', or '*' for every type")
        }
        guard !operations.isEmpty else {
            throw ServerError(
                .internalServerError, code: "invalid_hook_operations",
                message: "A hook on '\(type)' names no operation: pass .create, .update or .delete")
        }
    }
}
