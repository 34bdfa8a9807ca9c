import Foundation
import HTTPTypes

extension EntityStore {
    /// Sends the writes `build` adds to a batch in one request, applied by the server all together
    /// or not at all (`POST /records/batch` on an Outpost server).
    ///
    /// ```swift
    /// let results = try await store.batch(Note.self) { batch in
    ///     batch.create(Note(title: "Groceries"))
    ///     try batch.patch(list)
    ///     try batch.delete(done)
    /// }
    /// ```
    ///
    /// The request carries an `Idempotency-Key` (`idempotencyKey`, or a new UUID), so the client may
    /// retry it after a lost connection without applying it twice. An empty batch sends nothing.
    ///
    /// - Parameters:
    ///   - type: The entity type of every operation.
    ///   - idempotencyKey: The `Idempotency-Key` to send; a repeat with the same key and the same
    ///     operations gets the first answer again. Default: a new UUID.
    ///   - build: Adds the operations, in the order the server runs them.
    /// - Returns: One result per operation, in order.
    /// - Throws: ``OutpostError/Code/invalidRequest`` when the configuration has no
    ///   ``EntityConfiguration/batchPath`` or the batch holds more than
    ///   ``EntityBatch/maxOperations``; the failing operation's error otherwise, with its position in
    ///   ``OutpostError/details`` (`index`) and nothing applied (``OutpostError/Code/conflict`` when its
    ///   ETag no longer matches).
    public func batch<E: Entity>(
        _ type: E.Type = E.self, idempotencyKey: String? = nil, _ build: (inout EntityBatch<E>) throws -> Void
    ) async throws -> [EntityBatch<E>.Result] {
        var batch = EntityBatch<E>()
        try build(&batch)
        if batch.isEmpty { return [] }
        let prepared = try batchRequest(batch, idempotencyKey: idempotencyKey)
        let response = try await send(prepared.request, operation: "batch", E.self, id: nil as E.ID?)
        return try batchResults(prepared.operations, from: response, request: prepared.request)
    }

    /// One operation as sent, kept to make its result.
    struct SentOperation<E: Entity> {
        var request: Request
        var local: E?
        var id: E.ID?
        var sent: JSONValue
        var transients: [String: any Sendable]
    }

    /// The `POST` of `batch`, and what each operation sent.
    func batchRequest<E: Entity>(_ batch: EntityBatch<E>, idempotencyKey: String?) throws -> (
        request: Request, operations: [SentOperation<E>]
    ) {
        guard let batchPath = configuration.batchPath else {
            throw OutpostError(
                .invalidRequest, "This backend takes no batch of writes",
                suggestion: "Send the writes one by one, or set EntityConfiguration.batchPath", path: E.resourcePath)
        }
        guard batch.count <= EntityBatch<E>.maxOperations else {
            throw OutpostError(
                .invalidRequest,
                "A batch holds at most \(EntityBatch<E>.maxOperations) operations and this one has \(batch.count)",
                suggestion: "Split it into several batches", method: "POST", path: batchPath)
        }
        let type = Self.batchType(E.self)
        var list: [JSONValue] = []
        var sent: [SentOperation<E>] = []
        for operation in batch.operations {
            var member: [String: JSONValue] = ["type": .string(type)]
            switch operation {
            case .create(let value):
                let path = configuration.collectionPath(resource: E.resourcePath)
                let (json, transients) = try encodeKeepingTransients(value, method: "POST", path: path)
                member["method"] = "POST"
                member["body"] = json
                sent.append(.init(request: Request(method: .post, path: path), local: value, sent: json, transients: transients))
            case .replace(let value, let id, let etag):
                let path = configuration.itemPath(resource: E.resourcePath, id: id)
                let (json, transients) = try encodeKeepingTransients(value, method: "PUT", path: path)
                member["method"] = "PUT"
                member["id"] = .string(id.pathSegment)
                member["body"] = json
                member["if_match"] = etag.map(JSONValue.string)
                sent.append(.init(request: Request(method: .put, path: path), local: value, sent: json, transients: transients))
            case .patch(let entity, let id):
                let path = configuration.itemPath(resource: E.resourcePath, id: id)
                let (current, transients) = try encodeKeepingTransients(entity.value, method: "PATCH", path: path)
                member["method"] = "PATCH"
                member["id"] = .string(id.pathSegment)
                member["body"] = MergePatch.diff(from: entity.snapshot ?? .object([:]), to: current)
                member["if_match"] = entity.etag.map(JSONValue.string)
                sent.append(
                    .init(
                        request: Request(method: .patch, path: path), local: entity.value, sent: current, transients: transients))
            case .delete(let id, let etag):
                let path = configuration.itemPath(resource: E.resourcePath, id: id)
                member["method"] = "DELETE"
                member["id"] = .string(id.pathSegment)
                member["if_match"] = etag.map(JSONValue.string)
                sent.append(.init(request: Request.delete(path), id: id, sent: .null, transients: [:]))
            }
            list.append(.object(member))
        }
        var request = Request(method: .post, path: batchPath, body: .json(["operations": .array(list)]))
        request.headers[.idempotencyKey] = idempotencyKey ?? UUID().uuidString
        return (request, sent)
    }

    /// The results of a batch's answer, one per operation sent.
    func batchResults<E: Entity>(_ operations: [SentOperation<E>], from response: ClientResponse, request: Request) throws
        -> [EntityBatch<E>.Result]
    {
        guard case .array(let results)? = try? response.json()["results"], results.count == operations.count else {
            throw OutpostError(
                .malformedResponse, "The answer to a batch of \(operations.count) operations does not hold one result for each",
                suggestion: "Check that the server implements POST /records/batch", status: response.status, method: "POST",
                path: request.path)
        }
        return try zip(operations, results).map { operation, result in
            if operation.request.method == .delete, let id = operation.id { return .deleted(id) }
            guard let local = operation.local, case .object(let record)? = result["record"],
                let status = result["status"]?.intValue
            else {
                throw OutpostError(
                    .malformedResponse, "A result of a batch holds no record", status: response.status, method: "POST",
                    path: request.path)
            }
            var fields = HTTPFields()
            if let etag = result["etag"]?.stringValue { fields[.eTag] = etag }
            let single = ClientResponse(
                response: HTTPResponse(status: .init(code: status), headerFields: fields),
                body: JSONValue.object(record).jsonData())
            let synced = try synced(
                E.self, from: single, request: operation.request, local: local, sent: operation.sent,
                transients: operation.transients)
            switch operation.request.method {
            case .post: return .created(synced)
            case .put: return .replaced(synced)
            default: return .patched(synced)
            }
        }
    }

    /// The record type a batch names for `E`: the last component of its resource path
    /// (`records/people` → `people`).
    static func batchType<E: Entity>(_ type: E.Type) -> String {
        E.resourcePath.split(separator: "/").last.map(String.init) ?? E.resourcePath
    }
}
