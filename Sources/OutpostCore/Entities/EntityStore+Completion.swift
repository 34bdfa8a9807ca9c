/// Completion-handler forms of the ``EntityStore`` operations, for callers that are not async.
///
/// Each starts a task and returns its ``OperationHandle``; the completion handler runs once, on that
/// task, with the result or the ``OutpostError`` (``OutpostError/Code/cancelled`` after
/// ``OperationHandle/cancel()``).
extension EntityStore {
    /// Completion-handler form of `push(_:)` with an entity.
    @discardableResult
    public func push<E: Entity>(
        _ entity: E, completion: @escaping @Sendable (Result<Synced<E>, OutpostError>) -> Void
    ) -> OperationHandle {
        run(E.self, "push", completion) { try await push(entity) }
    }

    /// Completion-handler form of `push(_:)` with a synced entity.
    @discardableResult
    public func push<E: Entity>(
        _ entity: Synced<E>, completion: @escaping @Sendable (Result<Synced<E>, OutpostError>) -> Void
    ) -> OperationHandle {
        run(E.self, "push", completion) { try await push(entity) }
    }

    /// Completion-handler form of ``pull(_:id:)``.
    @discardableResult
    public func pull<E: Entity>(
        _ type: E.Type, id: E.ID, completion: @escaping @Sendable (Result<Synced<E>, OutpostError>) -> Void
    ) -> OperationHandle {
        run(E.self, "pull", completion) { try await pull(type, id: id) }
    }

    /// Completion-handler form of ``pull(_:)``.
    @discardableResult
    public func pull<E: Entity>(
        _ entity: Synced<E>, completion: @escaping @Sendable (Result<Synced<E>, OutpostError>) -> Void
    ) -> OperationHandle {
        run(E.self, "pull", completion) { try await pull(entity) }
    }

    /// Completion-handler form of ``patch(_:)``.
    @discardableResult
    public func patch<E: Entity>(
        _ entity: Synced<E>, completion: @escaping @Sendable (Result<Synced<E>, OutpostError>) -> Void
    ) -> OperationHandle {
        run(E.self, "patch", completion) { try await patch(entity) }
    }

    /// Completion-handler form of ``delete(_:)``.
    @discardableResult
    public func delete<E: Entity>(
        _ entity: Synced<E>, completion: @escaping @Sendable (Result<Void, OutpostError>) -> Void
    ) -> OperationHandle {
        run(E.self, "delete", completion) { try await delete(entity) }
    }

    /// Completion-handler form of ``delete(_:id:ifMatch:)``.
    @discardableResult
    public func delete<E: Entity>(
        _ type: E.Type, id: E.ID, ifMatch etag: String? = nil,
        completion: @escaping @Sendable (Result<Void, OutpostError>) -> Void
    ) -> OperationHandle {
        run(E.self, "delete", completion) { try await delete(type, id: id, ifMatch: etag) }
    }

    /// Completion-handler form of ``page(_:)``.
    @discardableResult
    public func page<Item>(
        _ request: ListRequest<Item>, completion: @escaping @Sendable (Result<Page<Item>, OutpostError>) -> Void
    ) -> OperationHandle {
        run(Item.self, "page", completion) { try await page(request) }
    }

    /// Completion-handler form of ``page(after:of:)``: `nil` after the last page.
    @discardableResult
    public func page<Item>(
        after previous: Page<Item>, of request: ListRequest<Item>,
        completion: @escaping @Sendable (Result<Page<Item>?, OutpostError>) -> Void
    ) -> OperationHandle {
        run(Item.self, "page", completion) { try await page(after: previous, of: request) }
    }

    private func run<Output: Sendable>(
        _ type: Any.Type, _ operation: String, _ completion: @escaping @Sendable (Result<Output, OutpostError>) -> Void,
        _ body: @escaping @Sendable () async throws -> Output
    ) -> OperationHandle {
        OperationHandle.start(completion, mapError: { OutpostError.wrap($0, method: "-", path: "\(operation) \(type)") }, body)
    }
}
