import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
@_spi(OutpostInternal) import OutpostCore

/// `POST /records/batch`: up to ``maxBatchOperations`` creates, replacements, merge patches and
/// deletes, run in order in one storage transaction, all or nothing. See docs/PROTOCOL.md, "Batch writes".
extension RecordRoutes {
    /// The most operations one batch may hold.
    static let maxBatchOperations = 100
    /// How much deeper than a single write's body a batch nests: the document, its `operations`
    /// array and an operation's object hold each record, so a record may nest as deep in a batch as alone.
    static let batchEnvelopeDepth = 3

    /// One operation of a batch, as the request gives it.
    struct BatchOperation: Sendable {
        enum Method: String, Sendable, CaseIterable {
            case post = "POST", put = "PUT", patch = "PATCH", delete = "DELETE"
        }
        var method: Method
        var type: String
        /// `nil` for a create.
        var id: String?
        /// The record's fields (POST, PUT) or the merge patch (PATCH); `nil` for a delete.
        var body: JSONValue?
        /// The operation's `If-Match`.
        var ifMatch: String?
    }

    func batch(_ request: Request, _ context: OutpostRequestContext) async throws -> Response {
        let caller = try context.caller(requiring: Scope.recordsWrite)
        let key = try Idempotency.key(of: request)
        let body = try await request.collectBody(limit: maxBodyBytes)
        let operations = try Self.batchOperations(
            from: try Request.parseJSON(
                body, maxDepth: maxJSONDepth + Self.batchEnvelopeDepth, maxKeys: maxJSONKeys, exactNumbers: true))
        // The rules in force now decide every operation, inside the batch's transaction. A repeat of an
        // idempotent batch that succeeded runs no operation: it gets the first answer.
        let rules = try await access.current()
        let ruleCaller = try await access.caller(caller)
        let scoped = key.map {
            IdempotencyKey(
                caller: Idempotency.caller(caller), key: $0, fingerprint: Idempotency.fingerprint(request, body: body))
        }
        @Sendable func commit(_ writes: [RecordBatchWrite]) async throws -> (
            claim: IdempotencyClaim, response: StoredResponse?
        ) {
            try await storage.writeRecords(writes, key: scoped, lifetime: Idempotency.lifetime) { results in
                Idempotency.stored(
                    status: .ok, headers: [.contentType: "application/json"],
                    body: Data(Self.batchResponseText(Array(results.prefix(operations.count)))))
            }
        }
        let outcome: (claim: IdempotencyClaim, response: StoredResponse?)
        do {
            if hasBeforeHooks(operations) {
                outcome = try await withHookedWrites(
                    operations, rules: rules, caller: ruleCaller, owner: caller?.userID, logger: context.logger, commit: commit)
            } else {
                let writes = try operations.enumerated().map { index, operation in
                    try Self.indexed(index) {
                        try Self.recordWrite(operation, rules: rules, caller: ruleCaller, owner: caller?.userID)
                    }
                }
                outcome = try await commit(writes)
            }
        } catch let failure as RecordBatchFailure {
            throw Self.batchError(failure, operations: operations)
        }
        if let written = outcome.response {
            changes?.changesCommitted()
            return Idempotency.response(written, replayed: false)
        }
        if case .replay(let stored) = outcome.claim { return Idempotency.response(stored, replayed: true) }
        throw Idempotency.failure(outcome.claim)
            ?? ServerError(
                .internalServerError, code: "idempotency_failed", message: "The Idempotency-Key could not be used; retry")
    }

    /// The storage's write for one operation: the rules are checked and the fields computed by the
    /// same preparation as the single-record routes, inside the batch's transaction, against the
    /// record as the operations before this one left it.
    static func recordWrite(_ operation: BatchOperation, rules: AccessRules, caller: RuleCaller, owner: String?) throws
        -> RecordBatchWrite
    {
        let type = operation.type
        let body = operation.body ?? .null
        let ifMatch = operation.ifMatch
        switch operation.method {
        case .post:
            let fields = try Self.fields(from: body)
            return .create(type: type, owner: owner, isPrivate: false) {
                try Self.prepareCreate(
                    rules, caller: caller, type: type, fields: fields, body: body, owner: owner, isPrivate: false)
            }
        case .put:
            let fields = try Self.fields(from: body)
            return .update(type: type, id: operation.id ?? "") { current in
                try Self.checkBatchTarget(current, ifMatch: ifMatch, rules: rules, caller: caller)
                return try Self.prepareReplace(rules, caller: caller, current: current, fields: fields, body: body)
            }
        case .patch:
            return .update(type: type, id: operation.id ?? "") { current in
                try Self.checkBatchTarget(current, ifMatch: ifMatch, rules: rules, caller: caller)
                return try Self.preparePatch(rules, caller: caller, current: current, patch: body)
            }
        case .delete:
            // As `DELETE /records/{type}/{id}`: the rule is checked before the version.
            return .delete(type: type, id: operation.id ?? "") { current in
                guard try Self.isReadable(current, caller: caller, rules: rules) else {
                    throw Self.notFound(current.type, current.id)
                }
                try Self.prepareDelete(rules, caller: caller, current: current)
                try Self.checkIfMatch(ifMatch, current: current)
            }
        }
    }

    /// A record a replacement or a patch finds: one the caller may not read is missing (404), and
    /// `If-Match` must name its version (412), as on the single-record routes.
    static func checkBatchTarget(_ current: StoredRecord, ifMatch: String?, rules: AccessRules, caller: RuleCaller) throws {
        guard try isReadable(current, caller: caller, rules: rules) else { throw notFound(current.type, current.id) }
        try checkIfMatch(ifMatch, current: current)
    }

    static func checkIfMatch(_ condition: String?, current: StoredRecord) throws {
        guard let condition, !matches(condition, etag: current.etag, weak: false) else { return }
        throw preconditionFailed(current.type, current.id, current: current.version)
    }

    /// The error a failed batch answers: the failing operation's own, with its index in `details`;
    /// 409 `batch_conflict` when its record is missing or at another version because an earlier
    /// operation of the same batch wrote it.
    static func batchError(_ failure: RecordBatchFailure, operations: [BatchOperation]) -> any Error {
        let index = failure.index
        guard index < operations.count else {
            // A write a hook joined to the batch's transaction.
            return ServerError(
                .internalServerError, code: "hook_failed",
                message: "A server hook's own write failed, so the batch did not happen. Try again later")
        }
        let operation = operations[index]
        var error: ServerError
        switch failure.error {
        case RecordWriteFailure.notFound: error = notFound(operation.type, operation.id ?? "")
        case RecordWriteFailure.versionMismatch(let current):
            error = preconditionFailed(operation.type, operation.id ?? "", current: current)
        case let thrown as ServerError: error = thrown
        default: return failure.error
        }
        if error.status == .notFound || error.status == .preconditionFailed, let id = operation.id,
            let earlier = operations[..<index].lastIndex(where: { $0.method != .post && $0.type == operation.type && $0.id == id }
            )
        {
            error = ServerError(
                .conflict, code: "batch_conflict",
                message: "Operation \(index) (\(operation.method.rawValue) \(operation.type)/\(id)) conflicts with operation "
                    + "\(earlier), which writes the same record first: operations run in order, each seeing the ones before; "
                    + "drop one of them or give the later one the version the earlier one leaves",
                details: ["conflicts_with": .int(earlier)])
        }
        return withIndex(error, index)
    }

    /// Runs `body`, adding `index` to the details of the ``ServerError`` it throws.
    static func indexed<T>(_ index: Int, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as ServerError {
            throw withIndex(error, index)
        }
    }

    /// `error` with `{"index": index}` in its details (beside what they hold).
    static func withIndex(_ error: ServerError, _ index: Int) -> ServerError {
        var error = error
        switch error.details {
        case .object(var members)?:
            members["index"] = .int(index)
            error.details = .object(members)
        case nil: error.details = ["index": .int(index)]
        case let other?: error.details = ["index": .int(index), "details": other]
        }
        return error
    }

    // MARK: The request

    /// The operations of `{"operations": [...]}`, checked: 400 naming what is wrong (and which
    /// operation, in `details.index`).
    static func batchOperations(from json: JSONValue) throws -> [BatchOperation] {
        guard case .object(let members) = json, case .array(let list)? = members["operations"], members.count == 1 else {
            throw ServerError.badRequest(
                "invalid_batch",
                "A batch is a JSON object with one member, operations: an array of 1–\(maxBatchOperations) operations, "
                    + #"e.g. {"operations": [{"method": "POST", "type": "notes", "body": {"title": "Hi"}}]}"#)
        }
        guard list.count <= maxBatchOperations else {
            throw ServerError.badRequest(
                "too_many_operations",
                "A batch holds at most \(maxBatchOperations) operations and this one has \(list.count); split it into several batches",
                details: ["max_operations": .int(maxBatchOperations), "count": .int(list.count)])
        }
        guard !list.isEmpty else {
            throw ServerError.badRequest("invalid_batch", "A batch needs at least one operation in operations")
        }
        return try list.enumerated().map { index, value in try indexed(index) { try batchOperation(value, index: index) } }
    }

    static func batchOperation(_ value: JSONValue, index: Int) throws -> BatchOperation {
        func invalid(_ message: String) -> ServerError {
            ServerError.badRequest("invalid_batch_operation", "Operation \(index): \(message)")
        }
        guard case .object(let members) = value else {
            throw invalid(#"an operation is a JSON object, e.g. {"method": "DELETE", "type": "notes", "id": "abc"}"#)
        }
        let known: Set<String> = ["method", "type", "id", "body", "if_match"]
        if let unknown = members.keys.sorted().first(where: { !known.contains($0) }) {
            throw invalid("'\(unknown.prefix(64))' is not a member of an operation: use method, type, id, body and if_match")
        }
        guard case .string(let name)? = members["method"], let method = BatchOperation.Method(rawValue: name) else {
            throw invalid("method must be one of POST, PUT, PATCH or DELETE")
        }
        guard case .string(let type)? = members["type"], isValidName(type) else {
            throw invalid("type must be a record type: 1–64 letters, digits, '_' or '-', e.g. notes")
        }
        var id: String?
        switch (method, members["id"]) {
        case (.post, nil): break
        case (.post, _?): throw invalid("a POST creates a record and the server assigns its id: leave id out")
        case (_, .string(let text)?) where isValidName(text): id = text
        default: throw invalid("\(method.rawValue) needs the id of the record: 1–64 letters, digits, '_' or '-'")
        }
        let body = members["body"]
        switch (method, body) {
        case (.delete, nil): break
        case (.delete, _?): throw invalid("a DELETE takes no body: leave body out")
        case (.patch, .object?): break
        case (.patch, _):
            throw invalid("a PATCH needs body: a JSON Merge Patch object of the fields to change (null removes one)")
        case (_, .object?): break
        default: throw invalid("\(method.rawValue) needs body: the record's fields as a JSON object, e.g. {\"title\": \"Hi\"}")
        }
        var ifMatch: String?
        switch members["if_match"] {
        case nil: break
        case .string(let text)? where (1...256).contains(text.unicodeScalars.count):
            guard method != .post else {
                throw invalid("a POST creates a record, which has no version to match: leave if_match out")
            }
            ifMatch = text
        default: throw invalid(#"if_match must be an entity tag the record was read with, e.g. "\"v3\"", or "*""#)
        }
        return BatchOperation(method: method, type: type, id: id, body: body, ifMatch: ifMatch)
    }

    // MARK: The response

    /// `{"results": [{"status": 201, "record": {...}, "etag": "\"v1\""}, ..., {"status": 204}]}`,
    /// the records spliced from their stored text.
    static func batchResponseText(_ results: [RecordBatchResult]) -> [UInt8] {
        var text: [UInt8] = []
        text.reserveCapacity(results.count * 256)
        text.append(contentsOf: #"{"results":["#.utf8)
        for (position, result) in results.enumerated() {
            if position > 0 { text.append(UInt8(ascii: ",")) }
            switch result {
            case .created(let record), .updated(let record):
                let status = if case .created = result { 201 } else { 200 }
                text.append(contentsOf: #"{"status":\#(status),"record":"#.utf8)
                record.appendWireBytes(to: &text)
                text.append(contentsOf: #","etag":"#.utf8)
                JSONText.appendQuoted(record.etag, to: &text)
                text.append(UInt8(ascii: "}"))
            case .deleted:
                text.append(contentsOf: #"{"status":204}"#.utf8)
            }
        }
        text.append(contentsOf: "]}".utf8)
        return text
    }
}
