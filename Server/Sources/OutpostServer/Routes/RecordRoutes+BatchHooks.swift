import Logging
@_spi(OutpostInternal) import OutpostCore

/// A batch some of whose operations have before hooks. Hooks are async and may take their time,
/// so they do not run inside the batch's transaction: every operation is prepared first, in order,
/// against the records as the operations before it leave them (rules, hooks, fields to store), and
/// the transaction then writes what was prepared, provided each record is still at the version the
/// preparation saw. When another writer changed one meanwhile, everything is prepared again.
extension RecordRoutes {
    /// A record a prepared write expected changed before the batch's transaction reached it.
    struct PreparedRecordChanged: Error {}

    /// How often a batch whose records keep changing under its hooks is prepared before it is 409.
    static let hookedBatchAttempts = 5

    /// Whether any operation of the batch has a before hook.
    func hasBeforeHooks(_ operations: [BatchOperation]) -> Bool {
        operations.contains { !actions.hooks.before(Self.hookOperation($0.method), on: $0.type).isEmpty }
    }

    static func hookOperation(_ method: BatchOperation.Method) -> RecordOperation {
        switch method {
        case .post: .create
        case .put, .patch: .update
        case .delete: .delete
        }
    }

    /// Runs `commit` with writes prepared outside the transaction, preparing them again when a
    /// record changed under them.
    func withHookedWrites<T>(
        _ operations: [BatchOperation], rules: AccessRules, caller: RuleCaller, owner: String?, logger: Logger,
        commit: ([RecordBatchWrite]) async throws -> T
    ) async throws -> T {
        for _ in 1...Self.hookedBatchAttempts {
            let writes = try await preparedWrites(operations, rules: rules, caller: caller, owner: owner, logger: logger)
            do {
                return try await commit(writes)
            } catch let failure as RecordBatchFailure where failure.error is PreparedRecordChanged {
                continue
            }
        }
        throw ServerError(
            .conflict, code: "record_busy",
            message: "The batch's records kept changing while its server hooks ran; send the batch again")
    }

    /// Every operation prepared in order: the rules checked and the hooks run against the records as
    /// the operations before it leave them.
    ///
    /// - Throws: ``RecordBatchFailure`` naming the operation that failed.
    func preparedWrites(
        _ operations: [BatchOperation], rules: AccessRules, caller: RuleCaller, owner: String?, logger: Logger
    ) async throws -> [RecordBatchWrite] {
        // Records the operations so far wrote (`nil`: deleted), by type and id.
        var written: [String: StoredRecord?] = [:]
        var writes: [RecordBatchWrite] = []
        // What hooks joined to the batch's transaction, after its own operations (whose results
        // the answer lists, in order).
        var joined: [RecordBatchWrite] = []
        for (index, operation) in operations.enumerated() {
            do {
                writes.append(
                    try await prepared(
                        operation, written: &written, joined: &joined, rules: rules, caller: caller, owner: owner,
                        logger: logger))
            } catch {
                throw RecordBatchFailure(index: index, error: error)
            }
        }
        return writes + joined
    }

    private func prepared(
        _ operation: BatchOperation, written: inout [String: StoredRecord?], joined: inout [RecordBatchWrite],
        rules: AccessRules, caller: RuleCaller, owner: String?, logger: Logger
    ) async throws -> RecordBatchWrite {
        let type = operation.type
        let body = operation.body ?? .null
        let kind = Self.hookOperation(operation.method)
        if operation.method == .post {
            let hooked = try await actions.before(
                .create, type: type, id: nil,
                fields: try Self.prepareCreate(
                    rules, caller: caller, type: type, fields: try Self.fields(from: body), body: body, owner: owner,
                    isPrivate: false),
                current: nil, caller: caller, identity: caller.identity, logger: logger)
            joined += hooked.joined
            let fields = hooked.fields
            return .create(type: type, owner: owner, isPrivate: false) { fields }
        }
        let id = operation.id ?? ""
        let key = type + "/" + id
        let found: StoredRecord? = if let earlier = written[key] { earlier } else { try await storage.record(type: type, id: id) }
        guard let current = found else { throw RecordWriteFailure.notFound }
        let version = current.version
        if operation.method == .delete {
            guard try Self.isReadable(current, caller: caller, rules: rules) else { throw Self.notFound(type, id) }
            try Self.prepareDelete(rules, caller: caller, current: current)
            try Self.checkIfMatch(operation.ifMatch, current: current)
            joined +=
                try await actions.before(
                    .delete, type: type, id: id, fields: [:], current: try current.fields, caller: caller,
                    identity: caller.identity, logger: logger
                ).joined
            written[key] = .some(nil)
            return .delete(type: type, id: id) { now in
                guard now.version == version else { throw PreparedRecordChanged() }
            }
        }
        try Self.checkBatchTarget(current, ifMatch: operation.ifMatch, rules: rules, caller: caller)
        let prepared =
            operation.method == .put
            ? try Self.prepareReplace(rules, caller: caller, current: current, fields: try Self.fields(from: body), body: body)
            : try Self.preparePatch(rules, caller: caller, current: current, patch: body)
        let hooked = try await actions.before(
            kind, type: type, id: id, fields: prepared, current: try current.fields, caller: caller,
            identity: caller.identity, logger: logger)
        joined += hooked.joined
        let fields = hooked.fields
        var after = current
        after.body = try RecordBodyText.text(fields)
        after.version += 1
        written[key] = after
        return .update(type: type, id: id) { now in
            guard now.version == version else { throw PreparedRecordChanged() }
            return fields
        }
    }
}
