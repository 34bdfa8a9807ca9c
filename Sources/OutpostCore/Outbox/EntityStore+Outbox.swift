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
