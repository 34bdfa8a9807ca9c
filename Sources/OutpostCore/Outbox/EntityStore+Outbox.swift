import HTTPTypes

extension EntityStore {
    /// Queues a push in `outbox` instead of sending it: a `POST` to the collection for a new entity,
    /// a `PUT` (with `If-Match` when an ETag is known) for one that has an id. The write is on disk
    /// when this returns; ``Outbox/replay()`` sends it, and ``OutboxEvent/completed(_:)`` carries
    /// the server's copy (for a new entity, its id).
    ///
    /// After queueing a `PUT`, `entity`'s snapshot is its queued value, so a later
    /// ``enqueuePatch(_:in:)`` sends only what changed since.
    @discardableResult
    public func enqueuePush<E: Entity>(_ entity: inout Synced<E>, in outbox: Outbox) async throws -> OutboxEntry {
        guard let id = entity.value.id else {
            let path = configuration.collectionPath(resource: E.resourcePath)
            let json = try encode(entity.value, method: "POST", path: path)
            return try await outbox.enqueue(
                Request(method: .post, path: path, body: .json(wrap(json, for: E.self))), label: "push new \(E.self)")
        }
        let path = configuration.itemPath(resource: E.resourcePath, id: id)
        let json = try encode(entity.value, method: "PUT", path: path)
        var request = Request(method: .put, path: path, body: .json(wrap(json, for: E.self)))
        if let etag = entity.etag { request.headers[.ifMatch] = etag }
        let entry = try await outbox.enqueue(request, recordKey: path, label: "push \(E.self) \(id.pathSegment)")
        entity.snapshot = json
        return entry
    }

    /// Queues the changes made since the last pull, push or queued write of `entity` (the patch
    /// ``patch(_:)`` would send, with `If-Match` when an ETag is known). Returns `nil`, queueing
    /// nothing, when nothing changed. Afterwards `entity`'s snapshot is its current value, so a
    /// second change queues only itself; both go out in order, the second's `If-Match` following
    /// the ETag the first one produces.
    ///
    /// - Throws: ``OutpostError/Code/missingIdentity`` when the entity has no id yet (queue a push;
    ///   its completion carries the id).
    @discardableResult
    public func enqueuePatch<E: Entity>(_ entity: inout Synced<E>, in outbox: Outbox) async throws -> OutboxEntry? {
        let id = try identity(of: entity.value, operation: "patch")
        if configuration.patchStyle == .putWholeObject { return try await enqueuePush(&entity, in: outbox) }
        let path = configuration.itemPath(resource: E.resourcePath, id: id)
        let current = try encode(entity.value, method: "PATCH", path: path)
        let patch = changes(from: entity.snapshot ?? .object([:]), to: current)
        if MergePatch.isEmpty(patch) { return nil }
        let request = patchRequest(patch, for: E.self, path: path, etag: entity.etag)
        let entry = try await outbox.enqueue(request, recordKey: path, label: "patch \(E.self) \(id.pathSegment)")
        entity.snapshot = current
        return entry
    }

    /// Queues a delete of `entity` (`DELETE`, with `If-Match` when an ETag is known). A replay that
    /// finds the record gone counts it as done.
    @discardableResult
    public func enqueueDelete<E: Entity>(_ entity: Synced<E>, in outbox: Outbox) async throws -> OutboxEntry {
        let id = try identity(of: entity.value, operation: "delete")
        let path = configuration.itemPath(resource: E.resourcePath, id: id)
        var request = Request.delete(path)
        if let etag = entity.etag { request.headers[.ifMatch] = etag }
        return try await outbox.enqueue(request, recordKey: path, label: "delete \(E.self) \(id.pathSegment)")
    }
}

extension EntityStore {
    /// The `PATCH` that ``patch(_:)`` sends and ``enqueuePatch(_:in:)`` queues: the patch in the
    /// configured style, with `If-Match` when an ETag is known.
    func patchRequest<E: Entity>(_ patch: JSONValue, for type: E.Type, path: String, etag: String?) -> Request {
        var request = Request(
            method: .patch, path: path,
            body: .data(
                wrap(patch, for: E.self).jsonData(),
                contentType: configuration.patchStyle == .partialUpdate ? "application/json" : MergePatch.contentType))
        if let etag { request.headers[.ifMatch] = etag }
        return request
    }
}

extension EntityStore {
    /// Queues the writes `build` adds as one batch in `outbox`: one entry, sent as one request
    /// (`POST /records/batch` on an Outpost server) with the `Idempotency-Key` fixed now, so that
    /// however many times a lost reply makes the outbox send it, the server applies it once, all
    /// together or not at all. The entry is on disk when this returns.
    ///
    /// ``OutboxEvent/completed(_:)`` carries the answer; ``batchResults(_:from:)`` reads the
    /// entities from it. A refused batch (a 412 of one of its operations, say) waits in the outbox
    /// as a whole, with the failing operation's position in its failure's details (`index`).
    ///
    /// A batch is independent of single writes queued for the same records: the outbox may send it
    /// before them when it sends several writes at once (``Outbox/Configuration/maxConcurrentWrites``).
    ///
    /// - Parameters:
    ///   - type: The entity type of every operation.
    ///   - outbox: The outbox to queue the batch in.
    ///   - build: Adds the operations, in the order the server runs them.
    /// - Returns: The queued entry.
    /// - Throws: ``OutpostError/Code/invalidRequest`` when the batch is empty or too large, or the
    ///   configuration has no ``EntityConfiguration/batchPath``; what ``Outbox/enqueue(_:recordKey:label:)`` throws.
    @discardableResult
    public func enqueueBatch<E: Entity>(
        _ type: E.Type = E.self, in outbox: Outbox, _ build: (inout EntityBatch<E>) throws -> Void
    ) async throws -> OutboxEntry {
        var batch = EntityBatch<E>()
        try build(&batch)
        guard !batch.isEmpty else {
            throw OutpostError(
                .invalidRequest, "An empty batch of \(E.self) writes cannot be queued",
                suggestion: "Add at least one operation to the batch", path: E.resourcePath)
        }
        let (request, _) = try batchRequest(batch, idempotencyKey: nil)
        return try await outbox.enqueue(request, label: "batch of \(batch.count) \(E.self) writes")
    }

    /// The entities in the answer to a batch queued with ``enqueueBatch(_:in:_:)``, one per
    /// operation in order: the server's copy, with its ETag, for a create, replacement or patch;
    /// `nil` for a delete.
    ///
    /// - Parameters:
    ///   - type: The entity type of the batch.
    ///   - completion: The completion of the batch's entry.
    /// - Throws: ``OutpostError/Code/malformedResponse`` when the answer holds no results,
    ///   ``OutpostError/Code/decodingFailed`` when a record does not decode as `E`.
    public func batchResults<E: Entity>(_ type: E.Type = E.self, from completion: OutboxCompletion) throws -> [Synced<E>?] {
        let path = completion.entry.path
        let response = ClientResponse(response: HTTPResponse(status: .init(code: completion.status)), body: completion.body)
        guard case .array(let results)? = try? response.json()["results"] else {
            throw OutpostError(
                .malformedResponse, "The answer to a queued batch holds no results", status: completion.status,
                method: "POST", path: path)
        }
        let decoder = client.configuration.decoder
        return try results.map { result in
            guard let record = result["record"] else { return nil }
            let value = try Self.decode(
                E.self, from: ClientResponse(response: response.response, body: record.jsonData()), decoder: decoder,
                method: "POST", path: path)
            return Synced(value, snapshot: try encode(value, method: "POST", path: path), etag: result["etag"]?.stringValue)
        }
    }
}
