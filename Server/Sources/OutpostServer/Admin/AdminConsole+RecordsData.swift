import Foundation
import Hummingbird
import Logging
@_spi(OutpostInternal) import OutpostCore
import OutpostExpressions

/// What the records screens read and write, apart from their HTML: lists bounded as the list
/// route bounds them, and writes through the record routes' path (``RecordActions``: hooks, the
/// change feed, the indexes the storage keeps), without the type's access rules: the admin acts.
extension AdminConsole {
    /// Records a browse page shows at most.
    static let recordsPerPage = 50
    /// Types the types page shows at most.
    static let typesPerPage = 50

    /// One page of records of a type, and the cursor of the next one.
    struct RecordsPage: Sendable {
        var records: [StoredRecord]
        var next: String?
    }

    /// A page of `type`'s records, oldest first, every record (private ones too) that `filter`
    /// (the list route's `?filter=` language) grants, after the cursor `after`. It takes a place
    /// among the unindexed lists, and is refused on a large type, as a list request is.
    func recordsPage(type: String, filter: String?, after: String?, address: String) async throws -> RecordsPage {
        let parsed = try filter.map { try ListFilter(parsing: $0) }
        var query = RecordQuery(type: type, limit: Self.recordsPerPage)
        query.access = .constant(true)
        query.filter = parsed?.predicate
        query.maxBytes = records.maxPageBytes
        let listName = "admin|" + RecordRoutes.listName(query, filter: parsed)
        let position = try after.map { cursor in
            let payload = try records.cursors.decode(cursor, list: listName)
            return RecordPosition(time: payload.time, seq: payload.seq)
        }
        return try await records.boundingScan(query, address: address) {
            var rows = try await storage.listRecords(query, from: position, backwards: false)
            var more = rows.count > query.limit
            rows = Array(rows.prefix(query.limit))
            let fitting = RecordPageText.fittingCount(rows, maxBytes: query.maxBytes)
            if fitting < rows.count {
                rows = Array(rows.prefix(fitting))
                more = true
            }
            let next = rows.last.flatMap { last in
                more
                    ? records.cursors.encode(
                        CursorCodec.Payload(list: listName, direction: "n", time: last.createdAt, seq: last.seq)) : nil
            }
            return RecordsPage(records: rows, next: next)
        }
    }

    /// The record types to show: those that hold records, after `after`, and those with stored
    /// rules (`*` and `@files` among them) in the same stretch of names.
    func recordTypes(after: String?) async throws -> (types: [String], next: String?) {
        var types: [String] = []
        if let listing = storage as? any RecordTypeStorage {
            types = try await listing.recordTypes(after: after, limit: Self.typesPerPage + 1)
        }
        let more = types.count > Self.typesPerPage
        types = Array(types.prefix(Self.typesPerPage))
        let upper = more ? types.last : nil
        for type in Set(try await storage.rules().map(\.type)) where !types.contains(type) {
            if let after, type <= after { continue }
            if let upper, type >= upper { continue }
            types.append(type)
        }
        return (types.sorted(), upper)
    }

    /// The admin as hooks see the writer.
    func ruleCaller(_ admin: StoredUser) async throws -> RuleCaller {
        RuleCaller(signedIn: true, user: admin.id, roles: try await records.access.roles(of: admin.id))
    }

    /// Replaces the fields of `type/id` with `text`, a JSON object decoded as a request body is
    /// (size, depth, keys, exact numbers), if the record is still at `version`.
    ///
    /// - Throws: 400 for bad JSON (the message says what to fix), 404 when the record is gone,
    ///   409 `record_changed` when it is at another version.
    func replaceRecord(type: String, id: String, version: Int, text: String, admin: StoredUser, logger: Logger)
        async throws -> StoredRecord
    {
        guard text.utf8.count <= records.maxBodyBytes else {
            throw ServerError.badRequest(
                "payload_too_large", "The record's JSON is at most \(records.maxBodyBytes) bytes, as a request body is")
        }
        let json = try Request.parseJSON(
            Data(text.utf8), maxDepth: records.maxJSONDepth, maxKeys: records.maxJSONKeys, exactNumbers: true)
        let fields = try RecordRoutes.fields(from: json)
        let caller = try await ruleCaller(admin)
        do {
            let record = try await records.actions.update(
                type: type, id: id, expectedVersion: version, caller: caller, identity: caller.identity, logger: logger
            ) { _ in fields }
            records.changes?.changesCommitted()
            return record
        } catch RecordWriteFailure.notFound {
            throw RecordRoutes.notFound(type, id)
        } catch RecordWriteFailure.versionMismatch(let current) {
            throw Self.recordChanged(type, id, current: current)
        }
    }

    /// Deletes `type/id` if it is still at `version`, with its delete hooks.
    ///
    /// - Returns: the record as it was.
    /// - Throws: 404 when the record is gone, 409 `record_changed` when it is at another version.
    func deleteRecord(type: String, id: String, version: Int, admin: StoredUser, logger: Logger) async throws
        -> StoredRecord
    {
        guard let record = try await storage.record(type: type, id: id) else { throw RecordRoutes.notFound(type, id) }
        guard record.version == version else { throw Self.recordChanged(type, id, current: record.version) }
        let caller = try await ruleCaller(admin)
        let hooked = try await records.actions.before(
            .delete, type: type, id: id, fields: [:], current: try record.fields, caller: caller, identity: caller.identity,
            logger: logger)
        do {
            try await records.actions.delete(record, joined: hooked.joined, logger: logger)
            records.changes?.changesCommitted()
            return record
        } catch RecordWriteFailure.notFound {
            throw RecordRoutes.notFound(type, id)
        } catch RecordWriteFailure.versionMismatch(let current) {
            throw Self.recordChanged(type, id, current: current)
        }
    }

    static func recordChanged(_ type: String, _ id: String, current: Int) -> ServerError {
        ServerError(
            .conflict, code: "record_changed",
            message: "Record \(type)/\(id) changed while you edited it (it is now at version \(current)); "
                + "nothing was saved. Open it again, then reapply your change")
    }

    /// Sets (or, with an empty expression, removes) the rule of `operation` on `type`, checked as
    /// `outpost rules set` checks it; this instance decides with it at once, others within
    /// ``AccessControl/maxAge``.
    ///
    /// - Returns: what changed, `set` or `cleared`; `nil` when there was no rule to remove.
    func changeRule(type: String, operation: String, expression: String) async throws -> String? {
        let change: String?
        if expression.allSatisfy(\.isWhitespace) {
            guard type == "*" || type == AccessRules.filesType || RecordRoutes.isValidName(type) else {
                throw ServerError.badRequest("invalid_rule", RuleError.invalidType(type).description)
            }
            change = try await storage.removeRule(type: type, operation: operation) ? "cleared" : nil
        } else {
            do {
                try AccessRuleSet.validate(type: type, operation: operation, expression: expression)
            } catch {
                throw ServerError.badRequest("invalid_rule", error.message)
            }
            try await storage.setRule(type: type, operation: operation, expression: expression)
            change = "set"
        }
        records.access.forgetRules()
        return change
    }

    /// Runs the trial the form asks for under the rules in force, as a request would meet them.
    func ruleTrial(type: String, _ input: RuleTrialInput) async throws -> RuleTrial {
        let rules = try await records.access.current()
        let caller = try await trialCaller(input)
        var record: ExpressionValue
        var body = ExpressionValue.null
        var fields: [String: JSONValue]
        if !input.recordID.isEmpty {
            guard let stored = try await storage.record(type: type, id: input.recordID) else {
                throw ServerError.badRequest(
                    "record_not_found", "No record \(type)/\(input.recordID); give the id of a record of this type")
            }
            fields = try stored.fields
            record = try stored.ruleValue
        } else {
            let json = try Request.parseJSON(
                Data(input.json.utf8), maxDepth: records.maxJSONDepth, maxKeys: records.maxJSONKeys, exactNumbers: true)
            guard case .object(let object) = json else {
                throw ServerError.badRequest(
                    "invalid_record", "The record is a JSON object, e.g. {\"owner\": \"USER-ID\", \"title\": \"Hello\"}")
            }
            fields = object
            for key in ["id", "owner", "private", "created_at", "updated_at"] { fields[key] = nil }
            record = .ruleRecord(
                fields: fields, id: object["id"]?.stringValue, owner: object["owner"]?.stringValue,
                isPrivate: object["private"]?.boolValue ?? false, createdAt: nil, updatedAt: nil)
        }
        if input.operation == .create {
            // The record the request would make: the caller owns it.
            record = .ruleRecord(fields: fields, id: nil, owner: caller.user, isPrivate: false, createdAt: nil, updatedAt: nil)
        }
        if input.operation == .create || input.operation == .update { body = ExpressionValue(JSONValue.object(fields)) }
        return RuleTrial(rules, type: type, operation: input.operation, caller: caller, record: record, body: body)
    }

    /// The caller a trial runs as: a user with the roles requests see, a client alone (client
    /// credentials), or nobody.
    func trialCaller(_ input: RuleTrialInput) async throws -> RuleCaller {
        let client = input.client.isEmpty ? nil : input.client
        guard !input.username.isEmpty else {
            guard let client else { return .anonymous }
            return RuleCaller(signedIn: true, client: client, scopes: input.scopes)
        }
        guard let user = try await storage.user(username: input.username) else {
            throw ServerError.badRequest(
                "unknown_user", "No user '\(input.username)'; give a username, or leave it empty for a caller without a token")
        }
        return RuleCaller(
            signedIn: true, user: user.id, client: client, scopes: input.scopes,
            roles: try await records.access.roles(of: user.id))
    }
}
