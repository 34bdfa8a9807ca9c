@_spi(OutpostInternal) public import OutpostCore
import OutpostExpressions

/// Records, for server code: lambdas, handlers, hooks and jobs read and write them through this.
///
/// It acts either as the caller of the request (``LambdaCall/data``, ``HandlerCall/data``,
/// ``RecordWrite/data``: the access rules decide as they do for the caller's own requests), or as
/// the server (``server``: every record, no rules), which code must name explicitly. After hooks
/// and jobs have no caller: their `data` acts as the server.
///
/// Writes run the type's before hooks, as a request's would, each in its own transaction; the
/// change feed and after hooks see them.
public struct RecordData: Sendable {
    enum Actor: Sendable {
        case server
        case caller(RuleCaller, CallerIdentity?)
        /// A request's caller, whose roles are looked up when the data is first used.
        case request(AuthenticatedCaller?)
    }

    let actions: RecordActions
    let actor: Actor

    /// The same records, acting as the server: the access rules do not apply.
    public var server: RecordData { RecordData(actions: actions, actor: .server) }

    /// Whether this acts as the server (``server``) rather than as a caller.
    public var actsAsServer: Bool {
        if case .server = actor { return true }
        return false
    }

    /// The caller the rules decide for; `nil` acting as the server.
    private func ruleCaller() async throws -> RuleCaller? {
        switch actor {
        case .server: return nil
        case .caller(let caller, _): return caller
        case .request(let caller): return try await actions.access.caller(caller)
        }
    }

    private var identity: CallerIdentity? {
        switch actor {
        case .server: return nil
        case .caller(_, let identity): return identity
        case .request(let caller): return PluginRoutes.identity(caller)
        }
    }

    /// The record, or `nil` when it does not exist or (acting as a caller) the read rule hides it.
    ///
    /// - Parameters:
    ///   - type: the record type.
    ///   - id: the record's id.
    public func read(_ type: String, id: String) async throws -> StoredRecord? {
        guard let record = try await actions.storage.record(type: type, id: id) else { return nil }
        guard let caller = try await ruleCaller() else { return record }
        let rules = try await actions.access.current()
        let rule = rules.rule(for: type, .read)
        let value = try record.ruleValue(for: rule)
        return rule.condition.decide(in: AccessRules.environment(caller: caller, record: value)) ? record : nil
    }

    /// Up to `limit` records of `type` that `filter` selects, in `sort` order; acting as a caller,
    /// only those its list and read rules grant.
    ///
    /// - Parameters:
    ///   - type: the record type.
    ///   - filter: an expression over `record.*`, as `GET /records/{type}?filter=` takes it; `nil` for every record.
    ///   - sort: `created`, `-created`, `updated`, `-updated`, or fields as `?sort=` takes them (`-views,title`).
    ///   - limit: 1 to 1000.
    /// - Throws: ``ServerError`` 400 for a filter or sort that does not parse.
    public func list(_ type: String, filter: String? = nil, sort: String = "created", limit: Int = 100) async throws
        -> [StoredRecord]
    {
        var query = RecordQuery(type: type, limit: min(max(limit, 1), 1000))
        if let sortOrder = RecordSort(rawValue: sort) {
            query.sort = sortOrder
        } else {
            query.order = try RecordRoutes.order(sort)
        }
        query.filter = try filter.map { try ListFilter(parsing: $0).predicate }
        if let caller = try await ruleCaller() {
            query.access = try RecordRoutes.listPredicate(try await actions.access.current(), type: type, caller: caller)
        } else {
            query.access = .constant(true)
        }
        return Array(try await actions.storage.listRecords(query, from: nil, backwards: false).prefix(query.limit))
    }

    /// Creates a record with `fields` (owned by the caller, or by nobody when acting as the server).
    ///
    /// - Parameters:
    ///   - type: the record type.
    ///   - fields: the record's fields; `id`, `created_at` and `updated_at` are the server's and ignored.
    ///   - isPrivate: readable by its owner only (needs a signed-in caller).
    /// - Throws: ``ServerError``: 403 when the create rule refuses, 422 when a before hook does.
    public func create(_ type: String, fields: [String: JSONValue], isPrivate: Bool = false) async throws -> StoredRecord {
        let acting = try await ruleCaller()
        let owner = acting?.user
        if let caller = acting {
            let rules = try await actions.access.current()
            let wouldBe = ExpressionValue.ruleRecord(
                fields: fields, id: nil, owner: owner, isPrivate: isPrivate, createdAt: nil, updatedAt: nil)
            try RecordRoutes.authorize(
                rules, .create, type: type, caller: caller, record: wouldBe, body: ExpressionValue(.object(fields)))
        }
        var stored = fields
        for key in StoredRecord.serverKeys { stored[key] = nil }
        let hooked = try await actions.before(
            .create, type: type, id: nil, fields: stored, current: nil, caller: acting, identity: identity,
            logger: actions.logger)
        stored = hooked.fields
        let record: StoredRecord
        if hooked.joined.isEmpty {
            record = try await actions.storage.createRecord(type: type, fields: stored, owner: owner, isPrivate: isPrivate)
        } else {
            let fields = stored
            let create = RecordBatchWrite.create(type: type, owner: owner, isPrivate: isPrivate) { fields }
            guard case .created(let created) = try await actions.commit([create] + hooked.joined, logger: actions.logger)
            else { throw ServerError(.internalServerError, code: "create_failed", message: "The record was not created; retry") }
            record = created
        }
        actions.changes?.changesCommitted()
        return record
    }

    /// Applies a JSON Merge Patch (RFC 7396) of `changes` to the record: a `null` removes a field.
    ///
    /// - Parameters:
    ///   - type: the record type.
    ///   - id: the record's id.
    ///   - changes: the fields to set, `null` for those to remove.
    ///   - expectedVersion: write only if the record still has this version (its ETag's number).
    /// - Throws: ``ServerError``: 404 when the record is missing (or hidden from the caller), 412
    ///   when its version is not `expectedVersion`, 403 when the update rule refuses, 422 when a
    ///   before hook does.
    public func patch(_ type: String, id: String, _ changes: [String: JSONValue], expectedVersion: Int? = nil)
        async throws -> StoredRecord
    {
        let caller = try await ruleCaller()
        let rules = caller == nil ? nil : try await actions.access.current()
        if caller != nil, try await read(type, id: id) == nil { throw RecordRoutes.notFound(type, id) }
        let patchValue = JSONValue.object(changes)
        do {
            let record = try await actions.update(
                type: type, id: id, expectedVersion: expectedVersion, caller: caller, identity: identity,
                logger: actions.logger
            ) { current in
                if let caller, let rules {
                    try RecordRoutes.authorize(
                        rules, .update, type: type, caller: caller, record: try current.ruleValue,
                        body: ExpressionValue(patchValue))
                }
                guard case .object(var fields) = MergePatch.apply(patchValue, to: .object(try current.fields)) else {
                    return [:]
                }
                for key in StoredRecord.serverKeys { fields[key] = nil }
                return fields
            }
            actions.changes?.changesCommitted()
            return record
        } catch RecordWriteFailure.notFound {
            throw RecordRoutes.notFound(type, id)
        } catch RecordWriteFailure.versionMismatch(let current) {
            throw RecordRoutes.preconditionFailed(type, id, current: current)
        }
    }

    /// Deletes the record.
    ///
    /// - Parameters:
    ///   - type: the record type.
    ///   - id: the record's id.
    ///   - expectedVersion: delete only if the record still has this version.
    /// - Throws: ``ServerError``: 404 when the record is missing (or hidden from the caller), 412
    ///   when its version is not `expectedVersion`, 403 when the delete rule refuses, 422 when a
    ///   before hook does.
    public func delete(_ type: String, id: String, expectedVersion: Int? = nil) async throws {
        guard let record = try await read(type, id: id) else { throw RecordRoutes.notFound(type, id) }
        let acting = try await ruleCaller()
        if let caller = acting {
            let rules = try await actions.access.current()
            try RecordRoutes.authorize(
                rules, .delete, type: type, caller: caller, record: try record.ruleValue(for: rules.rule(for: type, .delete)))
        }
        if let expectedVersion, expectedVersion != record.version {
            throw RecordRoutes.preconditionFailed(type, id, current: record.version)
        }
        let hooked = try await actions.before(
            .delete, type: type, id: id, fields: [:], current: try record.fields, caller: acting, identity: identity,
            logger: actions.logger)
        do {
            try await actions.delete(record, joined: hooked.joined, logger: actions.logger)
        } catch RecordWriteFailure.notFound {
            throw RecordRoutes.notFound(type, id)
        } catch RecordWriteFailure.versionMismatch(let current) {
            throw RecordRoutes.preconditionFailed(type, id, current: current)
        }
        actions.changes?.changesCommitted()
    }
}
