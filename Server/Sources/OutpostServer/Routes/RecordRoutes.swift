import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
@_spi(OutpostInternal) import OutpostCore
import OutpostExpressions
@_spi(OutpostInternal) import OutpostSupport

/// `/records/{type}` and `/records/{type}/{id}`: schemaless JSON records with ETags, conditional
/// writes, JSON Merge Patch, and keyset or page-number lists. See docs/PROTOCOL.md.
struct RecordRoutes: Sendable {
    let storage: any Storage
    let auth: AuthService
    /// The access rules every route here checks (docs/PROTOCOL.md, "Access rules").
    let access: AccessControl
    let cursors: CursorCodec
    let maxBodyBytes: Int
    let maxJSONDepth: Int
    /// Keys per object a body may hold (``ServerConfiguration/maxJSONKeys``).
    var maxJSONKeys = ServerConfiguration.defaultMaxJSONKeys
    /// The before hooks plugins registered, and the change feed to wake after every write.
    let actions: RecordActions
    /// The most records a type may hold for a list no declared index serves (``ServerConfiguration/unindexedListLimit``).
    var unindexedListLimit = 10_000
    /// The most bytes of records a page answers (``ServerConfiguration/maxPageBytes``).
    var maxPageBytes = 4 << 20
    /// The lists no declared index serves, bounded per instance and per client address.
    var listScans = ListScans(running: 1, waiting: 16, perAddress: ListScans.defaultPerAddress)
    var changes: ChangeFeed? { actions.changes }
    static let maxPageSize = 100
    static let defaultPageSize = 20

    func add(to router: Router<OutpostRequestContext>) {
        let router = router.group().add(middleware: AuthenticationMiddleware(auth: auth))
        // A constant path wins over `{type}`: `batch` is the one name that is no record type.
        router.post("/records/batch") { request, context in try await batch(request, context) }
        router.post("/records/{type}") { request, context in try await create(request, context) }
        router.get("/records/{type}") { request, context in
            Self.conditionalList(try await list(request, context), request: request)
        }
        router.get("/records/{type}/{id}") { request, context in try await read(request, context) }
        router.put("/records/{type}/{id}") { request, context in try await replace(request, context) }
        router.patch("/records/{type}/{id}") { request, context in try await patch(request, context) }
        router.delete("/records/{type}/{id}") { request, context in try await remove(request, context) }
    }

    // MARK: Single records

    func create(_ request: Request, _ context: OutpostRequestContext) async throws -> Response {
        let type = try Self.type(context)
        let caller = try context.caller(requiring: Scope.recordsWrite)
        let isPrivate = try Self.isPrivate(request, owner: caller?.userID)
        let key = try Idempotency.key(of: request)
        let body = try await request.collectBody(limit: maxBodyBytes)
        let json = try Request.parseJSON(body, maxDepth: maxJSONDepth, maxKeys: maxJSONKeys, exactNumbers: true)
        // Checked before anything is stored or replayed: a repeat of an idempotent create is
        // checked again, under the rules in force now.
        let rules = try await access.current()
        let ruleCaller = try await access.caller(caller)
        let prepared = try Self.prepareCreate(
            rules, caller: ruleCaller, type: type, fields: try Self.fields(from: json), body: json, owner: caller?.userID,
            isPrivate: isPrivate)
        let hooked = try await actions.before(
            .create, type: type, id: nil, fields: prepared, current: nil, caller: ruleCaller,
            identity: ruleCaller.identity, logger: context.logger)
        let fields = hooked.fields
        let owner = caller?.userID
        // The create, then what its hooks joined to its transaction.
        let writes = [RecordBatchWrite.create(type: type, owner: owner, isPrivate: isPrivate) { fields }] + hooked.joined
        guard let key else {
            let record: StoredRecord
            if hooked.joined.isEmpty {
                record = try await storage.createRecord(type: type, fields: fields, owner: owner, isPrivate: isPrivate)
            } else {
                guard case .created(let created) = try await actions.commit(writes, logger: context.logger) else {
                    throw ServerError(.internalServerError, code: "create_failed", message: "The record was not created; retry")
                }
                record = created
            }
            changes?.changesCommitted()
            return Self.recordResponse(record, status: .created, headers: Self.createdHeaders(record))
        }
        // The record and its response are stored in one transaction: a repeat finds both or neither.
        let scoped = IdempotencyKey(
            caller: Idempotency.caller(caller), key: key, fingerprint: Idempotency.fingerprint(request, body: body))
        @Sendable func respond(_ record: StoredRecord) -> StoredResponse {
            var headers = Self.createdHeaders(record)
            headers[.contentType] = "application/json"
            return Idempotency.stored(status: .created, headers: headers, body: Data(record.wireText.utf8))
        }
        let (claim, created): (IdempotencyClaim, StoredResponse?)
        if hooked.joined.isEmpty {
            (claim, created) = try await storage.createRecord(
                type: type, fields: fields, owner: owner, isPrivate: isPrivate, key: scoped, lifetime: Idempotency.lifetime,
                respond: respond)
        } else {
            (claim, created) = try await storage.writeRecords(writes, key: scoped, lifetime: Idempotency.lifetime) { results in
                guard case .created(let record)? = results.first else {
                    return StoredResponse(status: 500, headers: [], body: Data())
                }
                return respond(record)
            }
        }
        if let created {
            changes?.changesCommitted()
            return Idempotency.response(created, replayed: false)
        }
        if case .replay(let stored) = claim { return Idempotency.response(stored, replayed: true) }
        throw Idempotency.failure(claim)
            ?? ServerError(
                .internalServerError, code: "idempotency_failed", message: "The Idempotency-Key could not be used; retry")
    }

    /// `?visibility=private` (readable by the owner only) or `public` (the default). A private
    /// record needs an owner: without a signed-in user it is 401.
    static func isPrivate(_ request: Request, owner: String?) throws -> Bool {
        switch try request.queryFields()["visibility"] {
        case nil, "public"?: return false
        case "private"?:
            guard owner != nil else {
                throw ServerError(
                    .unauthorized, code: "sign_in_required",
                    message: "A private record belongs to the user who creates it; sign in to create one",
                    headers: [.wwwAuthenticate: "Bearer"])
            }
            return true
        default:
            throw ServerError.badRequest("invalid_visibility", "visibility must be public (the default) or private")
        }
    }

    /// Throws when the rule of `operation` on `type` does not grant `caller` the record: 403
    /// `forbidden_by_rule` naming the rule to a signed-in caller, 401 `sign_in_required` (with
    /// `WWW-Authenticate: Bearer`, naming the rule too) to a caller without a token.
    static func authorize(
        _ rules: AccessRules, _ operation: RuleOperation, type: String, caller: RuleCaller, record: ExpressionValue,
        body: ExpressionValue = .null
    ) throws {
        let rule = rules.rule(for: type, operation)
        let environment = AccessRules.environment(caller: caller, record: record, body: body)
        guard !rule.condition.decide(in: environment) else { return }
        throw refusal(rule, type: type, caller: caller)
    }

    /// The answer to a write `rule` refuses: to a caller without a token, 401 `sign_in_required`
    /// with `WWW-Authenticate: Bearer` (signing in may change the answer); to a signed-in caller,
    /// 403 `forbidden_by_rule`. Both name the rule in `details.rule`. `noun` names what the rule is
    /// about in the message: a record, or a file.
    static func refusal(_ rule: AccessRule, type: String, caller: RuleCaller, noun: String = "record") -> ServerError {
        let name = rule.isDefault ? "\(type).\(rule.operation.rawValue)" : rule.name
        var details: [String: JSONValue] = ["rule": .string(name)]
        if rule.isDefault { details["default"] = .bool(true) }
        guard caller.signedIn else {
            let message =
                rule.isDefault && rule.operation == .create && noun == "record"
                ? "Creating a \(type) record needs a signed-in caller: sign in (send 'Authorization: Bearer <access token>'), "
                    + "or ask the server's operator for a rule that allows anonymous creates (outpost rules set \(type) create true)"
                : "The access rule \(name) does not allow a caller without a token to \(rule.operation.rawValue) this \(noun): "
                    + "sign in (send 'Authorization: Bearer <access token>'), or ask the server's operator for a rule that allows it"
            return ServerError(
                .unauthorized, code: "sign_in_required", message: message, details: .object(details),
                headers: [.wwwAuthenticate: "Bearer"])
        }
        return ServerError(
            .forbidden, code: "forbidden_by_rule",
            message: "The access rule \(name) does not allow this caller to \(rule.operation.rawValue) this \(noun)",
            details: .object(details))
    }

    /// The record, when the read rule lets `caller` see it; `nil` when it is missing or hidden (both
    /// are answered 404, so a hidden record's existence is not revealed).
    func readable(type: String, id: String, caller: RuleCaller, rules: AccessRules) async throws -> StoredRecord? {
        guard let record = try await storage.record(type: type, id: id) else { return nil }
        return try Self.isReadable(record, caller: caller, rules: rules) ? record : nil
    }

    static func createdHeaders(_ record: StoredRecord) -> HTTPFields {
        [.eTag: record.etag, .location: "/records/\(record.type)/\(record.id)"]
    }

    func read(_ request: Request, _ context: OutpostRequestContext) async throws -> Response {
        let (type, id) = try Self.typeAndID(context)
        let caller = try await access.caller(try context.caller(requiring: Scope.recordsRead))
        guard let record = try await readable(type: type, id: id, caller: caller, rules: try await access.current()) else {
            throw Self.notFound(type, id)
        }
        if let notModified = Self.notModified(request, record: record) { return notModified }
        return Self.recordResponse(record, headers: Self.readHeaders(record))
    }

    func replace(_ request: Request, _ context: OutpostRequestContext) async throws -> Response {
        let (type, id) = try Self.typeAndID(context)
        let (rules, caller) = try await checkWritable(context, type: type, id: id)
        let json = try await request.decodeJSON(
            limit: maxBodyBytes, maxDepth: maxJSONDepth, maxKeys: maxJSONKeys, exactNumbers: true)
        let fields = try Self.fields(from: json)
        let expected = try await expectedVersion(request, type: type, id: id)
        // The update rule is checked inside the write's transaction, against the record as it is
        // there: no concurrent change slips between the check and the write.
        let record = try await write(type, id) {
            try await actions.update(
                type: type, id: id, expectedVersion: expected, caller: caller, identity: caller.identity,
                logger: context.logger
            ) { current in
                try Self.prepareReplace(rules, caller: caller, current: current, fields: fields, body: json)
            }
        }
        return Self.recordResponse(record, headers: [.eTag: record.etag])
    }

    func patch(_ request: Request, _ context: OutpostRequestContext) async throws -> Response {
        let (type, id) = try Self.typeAndID(context)
        let (rules, caller) = try await checkWritable(context, type: type, id: id)
        let contentType = request.headers[.contentType]?.split(separator: ";").first.map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        }
        guard contentType == MergePatch.contentType else {
            throw ServerError(
                .unsupportedMediaType, code: "unsupported_patch_type",
                message: "PATCH takes a JSON Merge Patch (RFC 7396): send Content-Type: application/merge-patch+json")
        }
        let patchValue = try await request.decodeJSON(
            limit: maxBodyBytes, maxDepth: maxJSONDepth, maxKeys: maxJSONKeys, exactNumbers: true)
        guard case .object = patchValue else {
            throw ServerError.badRequest(
                "invalid_patch", "A merge patch for a record must be a JSON object of the fields to change (null removes a field)"
            )
        }
        let expected = try await expectedVersion(request, type: type, id: id)
        // Read, apply and write in one storage transaction that holds the record against every
        // other writer, of this instance or another on the same database: no patch is lost.
        let record = try await write(type, id) {
            try await actions.update(
                type: type, id: id, expectedVersion: expected, caller: caller, identity: caller.identity,
                logger: context.logger
            ) { current in
                try Self.preparePatch(rules, caller: caller, current: current, patch: patchValue)
            }
        }
        return Self.recordResponse(record, headers: [.eTag: record.etag])
    }

    func remove(_ request: Request, _ context: OutpostRequestContext) async throws -> Response {
        let (type, id) = try Self.typeAndID(context)
        let (rules, caller) = try await checkWritable(context, type: type, id: id)
        let expected = try await expectedVersion(request, type: type, id: id)
        // The delete rule is checked against a version, and that version is what is deleted: when
        // the record changed in between (and the client did not ask for a version itself), it is
        // read and checked again.
        for _ in 1...Self.deleteAttempts {
            guard let record = try await readable(type: type, id: id, caller: caller, rules: rules) else {
                throw Self.notFound(type, id)
            }
            try Self.prepareDelete(rules, caller: caller, current: record)
            if let expected, expected != record.version { throw Self.preconditionFailed(type, id, current: record.version) }
            let hooked = try await actions.before(
                .delete, type: type, id: id, fields: [:], current: try record.fields, caller: caller,
                identity: caller.identity, logger: context.logger)
            do {
                _ = try await write(type, id) {
                    try await actions.delete(record, joined: hooked.joined, logger: context.logger)
                    return 0
                }
                return Response(status: .noContent)
            } catch let error as ServerError where error.code == "precondition_failed" && expected == nil {
                continue
            }
        }
        throw ServerError(
            .conflict, code: "record_busy", message: "Record \(type)/\(id) kept changing while it was being deleted; try again")
    }

    /// How often a delete reads a record that keeps changing before it gives up (409).
    static let deleteAttempts = 5

    /// The rules and the caller for a change of a record: a token must carry `records:write`, and
    /// a record the caller may not read is answered 404, as missing. The update and delete rules
    /// themselves are checked against the record the write finds.
    func checkWritable(_ context: OutpostRequestContext, type: String, id: String) async throws -> (AccessRules, RuleCaller) {
        let caller = try await access.caller(try context.caller(requiring: Scope.recordsWrite))
        let rules = try await access.current()
        guard try await readable(type: type, id: id, caller: caller, rules: rules) != nil else {
            throw Self.notFound(type, id)
        }
        return (rules, caller)
    }

    /// Runs a conditional write, turning storage failures into 404 and 412.
    func write<T: Sendable>(_ type: String, _ id: String, _ body: () async throws -> T) async throws -> T {
        do {
            let result = try await body()
            changes?.changesCommitted()
            return result
        } catch RecordWriteFailure.notFound {
            throw Self.notFound(type, id)
        } catch RecordWriteFailure.versionMismatch(let current) {
            throw Self.preconditionFailed(type, id, current: current)
        }
    }

    /// The version `If-Match` asks for: `nil` without the header; `*` means "the current one, if any".
    func expectedVersion(_ request: Request, type: String, id: String) async throws -> Int? {
        guard let condition = request.headers[.ifMatch] else { return nil }
        guard let record = try await storage.record(type: type, id: id) else { throw Self.notFound(type, id) }
        guard Self.matches(condition, etag: record.etag, weak: false) else {
            throw Self.preconditionFailed(type, id, current: record.version)
        }
        return record.version
    }

    // MARK: Lists

    func list(_ request: Request, _ context: OutpostRequestContext) async throws -> Response {
        let type = try Self.type(context)
        let caller = try context.caller(requiring: Scope.recordsRead)
        var cursor: String?
        var page: Int?
        var limit: Int?
        var sort = RecordSort.created
        var filters: [(field: String, value: JSONValue)] = []
        var filter: ListFilter?
        var order: [RecordOrderKey]?
        let fields = try request.queryFields()
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            switch name {
            case "cursor": cursor = value.isEmpty ? nil : value
            case "filter": filter = try ListFilter(parsing: value)
            case "page": page = try Self.positive(value, name: "page", max: Int.max / 1000)
            case "limit", "per_page": limit = try Self.positive(value, name: name, max: Self.maxPageSize)
            case "sort":
                if let parsed = RecordSort(rawValue: value) {
                    sort = parsed
                } else {
                    order = try Self.order(value)
                }
            default:
                guard Self.isValidName(name) else {
                    throw ServerError.badRequest(
                        "invalid_filter", "'\(name)' is not a field name a filter can use: letters, digits, '_' and '-'")
                }
                filters.append((name, Self.filterValue(value)))
            }
        }
        if cursor != nil && page != nil {
            throw ServerError.badRequest("conflicting_pagination", "Use cursor (keyset) or page (page numbers), not both")
        }
        var query = RecordQuery(
            type: type, filters: filters, sort: sort, limit: limit ?? Self.defaultPageSize, viewer: caller?.userID)
        query.access = try await listAccess(type: type, caller: caller)
        query.filter = filter?.predicate
        query.order = order
        query.maxBytes = maxPageBytes
        let listName = Self.listName(query, filter: filter)
        return try await boundingScan(query, address: context.clientAddress) {
            guard let page else {
                return try await keysetPage(query, cursor: cursor, request: request, fields: fields, listName: listName)
            }
            return try await numberedPage(query, page: page)
        }
    }

    /// Page `page` of `query` by number, with the total; 400 `page_too_large` past ``maxPageBytes``.
    func numberedPage(_ query: RecordQuery, page: Int) async throws -> Response {
        let (records, total) = try await storage.listRecords(query, page: page)
        if RecordPageText.fittingCount(records, maxBytes: maxPageBytes) < records.count {
            throw ServerError.badRequest(
                "page_too_large",
                "Page \(page) of \(query.limit) records holds more than \(maxPageBytes) bytes, the most a page answers; "
                    + "ask for fewer per_page, or walk the list with cursors (without page), whose pages end at that size "
                    + "and continue with next_cursor",
                details: ["max_bytes": .int(maxPageBytes)])
        }
        return Self.listResponse(
            records,
            [
                ("page", .int(page)), ("per_page", .int(query.limit)), ("total", .int(total)),
                ("total_pages", .int((total + query.limit - 1) / query.limit)),
            ])
    }

    /// What the caller may list: records both the list and the read rules grant, as a condition
    /// the storage puts in the query, so pages, totals and cursors count only those. `nil` when
    /// both rules are the defaults (the storage's own visibility, which is the same condition).
    func listAccess(type: String, caller: AuthenticatedCaller?) async throws -> RecordPredicate? {
        let rules = try await access.current()
        if rules.rule(for: type, .list).isDefault && rules.rule(for: type, .read).isDefault { return nil }
        return try Self.listPredicate(rules, type: type, caller: try await access.caller(caller))
    }

    /// The list and read rules of `type` for `caller`, as one condition a list query carries.
    static func listPredicate(_ rules: AccessRules, type: String, caller ruleCaller: RuleCaller) throws -> RecordPredicate {
        let list = rules.rule(for: type, .list)
        let read = rules.rule(for: type, .read)
        var predicate = RecordPredicate.constant(true)
        for rule in [list, read] {
            do {
                predicate = .conjunction(predicate, try RecordPredicate.compile(rule.condition, caller: ruleCaller))
            } catch {
                throw ServerError(
                    .internalServerError, code: "rule_not_listable",
                    message: "The access rule \(rule.name) cannot select records for a list: \(error.description). "
                        + "The server's operator must rewrite it (outpost rules set)",
                    details: ["rule": .string(rule.name)])
            }
        }
        return predicate
    }

    nonisolated(nonsending) func keysetPage(
        _ query: RecordQuery, cursor: String?, request: Request, fields: [String: String], listName: String
    ) async throws -> Response {
        let payload = try cursor.map { try cursors.decode($0, list: listName) }
        let backwards = payload?.direction == "p"
        let page: RecordPageText
        // The positions of the page's first and last records, for the cursors.
        let first: CursorCodec.Payload?
        let last: CursorCodec.Payload?
        if let order = query.order {
            guard payload == nil || payload?.values?.count == order.count else { throw CursorCodec.invalid }
            let position = payload.map { RecordPosition(values: $0.values ?? []) }
            var rows = try await storage.listRecords(query, from: position, backwards: backwards)
            page = RecordPageText(rows: rows, limit: query.limit, backwards: backwards, maxBytes: query.maxBytes)
            rows = Array(rows.prefix(page.count))
            if backwards { rows.reverse() }
            func at(_ record: StoredRecord?) throws -> CursorCodec.Payload? {
                guard let record else { return nil }
                let values = try RecordOrderValue.values(of: record, keys: order)
                return .init(list: listName, direction: "", time: 0, seq: 0, values: values)
            }
            first = try at(rows.first)
            last = try at(rows.last)
        } else {
            page = try await storage.listRecordText(
                query, from: payload.map { RecordPosition(time: $0.time, seq: $0.seq) }, backwards: backwards)
            func at(_ record: RecordPageText.Entry?) -> CursorCodec.Payload? {
                guard let record else { return nil }
                let time = RecordPageText.time(record, sort: query.sort)
                return .init(list: listName, direction: "", time: time, seq: record.seq)
            }
            first = at(page.first)
            last = at(page.last)
        }
        let hasNext = backwards ? true : page.more
        let hasPrevious = backwards ? page.more : payload != nil
        func makeCursor(_ position: CursorCodec.Payload?, _ direction: String) -> [UInt8]? {
            guard var position else { return nil }
            position.direction = direction
            var text: [UInt8] = []
            cursors.append(position, to: &text)
            return text
        }
        let next = hasNext ? makeCursor(last, "n") : nil
        let previous = hasPrevious ? makeCursor(first, "p") : nil
        // Both links are this request with another cursor: what comes before the cursor, once.
        let linkStart = (next != nil || previous != nil) ? linkPrefix(request, type: query.type, fields: fields) : []
        return Self.listResponse(page) { out in
            // Cursors are base64url and a dot: nothing in them needs escaping in JSON.
            func member(_ name: String, _ cursor: [UInt8]?, link: Bool) {
                out.append(contentsOf: name.utf8)
                guard let cursor else { return out.append(contentsOf: "null".utf8) }
                out.append(UInt8(ascii: "\""))
                if link { out.append(contentsOf: linkStart) }
                out.append(contentsOf: cursor)
                out.append(UInt8(ascii: "\""))
            }
            member(#""next":"#, next, link: true)
            member(#","next_cursor":"#, next, link: false)
            member(#","prev_cursor":"#, previous, link: false)
            member(#","previous":"#, previous, link: true)
        }
    }

    /// One record as JSON, spliced from its stored text.
    static func recordResponse(_ record: StoredRecord, status: HTTPResponse.Status = .ok, headers: HTTPFields) -> Response {
        var fields = headers
        // Appended, not set by name: setting searches and replaces (none of these callers sets one).
        if !fields.contains(.contentType) { fields.append(HTTPField(name: .contentType, value: "application/json")) }
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: record.wireBytes)))
    }

    /// `{"results": [...], ...page info}`, with the records spliced from their stored text and the
    /// page info written in the order given.
    static func listResponse(_ records: [StoredRecord], _ info: [(key: String, value: JSONValue)]) -> Response {
        listResponse(RecordPageText(records: records)) { JSONText.appendMembers(info, to: &$0) }
    }

    /// The page, then the page info's members that `writeInfo` appends (JSON text, without braces),
    /// written once into the body; the ETag digests the records' ids and versions and the info's bytes.
    static func listResponse(_ page: RecordPageText, writeInfo: (inout [UInt8]) -> Void) -> Response {
        var info: [UInt8] = []
        info.reserveCapacity(512)
        writeInfo(&info)
        var fields = listHeaders(etag: listETag(page.keys, info: info[...]))
        fields.append(HTTPField(name: .contentType, value: "application/json"))
        // The body written once, straight into the buffer that goes out.
        var body = ByteBuffer()
        body.reserveCapacity(page.text.count + info.count + 16)
        body.writeStaticString(#"{"results":["#)
        body.writeBytes(page.text)
        body.writeStaticString("],")
        body.writeBytes(info)
        body.writeStaticString("}")
        return Response(status: .ok, headers: fields, body: ResponseBody(byteBuffer: body))
    }

    static func listText(_ records: [StoredRecord], _ info: [(key: String, value: JSONValue)]) -> String {
        var body: [UInt8] = []
        body.append(contentsOf: #"{"results":["#.utf8)
        body.append(contentsOf: RecordPageText(records: records).text)
        body.append(contentsOf: "],".utf8)
        JSONText.appendMembers(info, to: &body)
        body.append(UInt8(ascii: "}"))
        return String(decoding: body, as: UTF8.self)
    }

    /// The same request (its query `fields`) on the list of `type` as an absolute URL under the
    /// server's public URL, up to the value of a last `cursor` parameter: the page links are this
    /// followed by a cursor.
    /// JSON-escaped, to be written inside a string.
    func linkPrefix(_ request: Request, type: String, fields: [String: String]) -> [UInt8] {
        var text: [UInt8] = []
        text.reserveCapacity(192)
        // The public URL as JSON string content; the path and the query are percent-encoded, so
        // nothing in them needs escaping.
        let base = auth.publicBase.url
        if base.utf8.contains(where: JSONText.needsEscape) {
            var quoted: [UInt8] = []
            JSONText.appendQuoted(base, to: &quoted)
            text.append(contentsOf: quoted.dropFirst().dropLast())
        } else {
            text.append(contentsOf: base.utf8)
        }
        let path = request.uri.path
        // Record paths are plain names: used as they are. A path that came percent-encoded
        // (`/records/a%62c`) is written as the list's own path with its decoded type, which is plain.
        if path.utf8.allSatisfy({ PercentEncoding.isUnreserved($0) || $0 == UInt8(ascii: "/") }) {
            text.append(contentsOf: path.utf8)
        } else {
            text.append(contentsOf: "/records/".utf8)
            text.append(contentsOf: type.utf8)
        }
        text.append(UInt8(ascii: "?"))
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) where name != "cursor" {
            URLEncodedForm.append((name, value), to: &text)
            text.append(UInt8(ascii: "&"))
        }
        text.append(contentsOf: "cursor=".utf8)
        return text
    }

    /// What a cursor is bound to: the type, the order, the equality filters and the filter
    /// expression (its canonical source, so spacing does not matter).
    static func listName(_ query: RecordQuery, filter: ListFilter? = nil) -> String {
        let filters = query.filters.map { "\($0.field)=\($0.value.jsonString())" }.sorted().joined(separator: "&")
        let sort = query.order.map { $0.map(\.text).joined(separator: ",") } ?? query.sort.rawValue
        let name = "\(query.type)|\(sort)|\(filters)"
        guard let filter else { return name }
        return name + "|" + filter.condition.description
    }

    /// A filter value: JSON when it is a number, `true`, `false`, `null` or a quoted string; text otherwise.
    static func filterValue(_ text: String) -> JSONValue {
        if let value = try? JSONValue(parsing: Data(text.utf8)) {
            switch value {
            case .array, .object: return .string(text)
            default: return value
            }
        }
        return .string(text)
    }

    // MARK: Checks

    static func type(_ context: OutpostRequestContext) throws -> String {
        guard let type = try context.pathParameter("type"), isValidName(type) else {
            throw ServerError.badRequest(
                "invalid_type", "A record type is 1–64 letters, digits, '_' or '-', e.g. /records/people")
        }
        return type
    }

    static func typeAndID(_ context: OutpostRequestContext) throws -> (String, String) {
        let type = try type(context)
        guard let id = try context.pathParameter("id"), isValidName(id) else {
            throw ServerError.badRequest(
                "invalid_id", "A record id is 1–64 letters, digits, '_' or '-', as the server assigned it")
        }
        return (type, id)
    }

    static func isValidName(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count)
            && text.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F
                    || byte == 0x2D
            }
    }

    static func positive(_ text: String, name: String, max: Int) throws -> Int {
        guard let value = Int(text), value >= 1, value <= max else {
            throw ServerError.badRequest("invalid_\(name)", "\(name) must be a whole number from 1 to \(max)")
        }
        return value
    }

    static func fields(of request: Request, limit: Int, maxDepth: Int) async throws -> [String: JSONValue] {
        try fields(from: try await request.decodeJSON(limit: limit, maxDepth: maxDepth))
    }

    static func fields(from value: JSONValue) throws -> [String: JSONValue] {
        guard case .object(var fields) = value else {
            throw ServerError.badRequest("invalid_record", "A record is a JSON object, e.g. {\"name\": \"Ada\"}")
        }
        for key in StoredRecord.serverKeys { fields[key] = nil }
        return fields
    }

    /// RFC 9110 entity-tag matching for a comma-separated list or `*`.
    static func matches(_ condition: String, etag: String, weak: Bool) -> Bool {
        let tags = condition.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        return tags.contains { tag in
            if tag == "*" { return true }
            if weak {
                return tag.replacingOccurrences(of: "W/", with: "") == etag.replacingOccurrences(of: "W/", with: "")
            }
            return !tag.hasPrefix("W/") && tag == etag
        }
    }

    static func notFound(_ type: String, _ id: String) -> ServerError {
        ServerError.notFound("record_not_found", "No record \(type)/\(id); it may have been deleted")
    }

    static func preconditionFailed(_ type: String, _ id: String, current: Int) -> ServerError {
        ServerError(
            .preconditionFailed, code: "precondition_failed",
            message:
                "Record \(type)/\(id) changed since it was read (now at \"v\(current)\"); read it again and reapply the change",
            details: ["current_etag": .string("\"v\(current)\"")])
    }
}
