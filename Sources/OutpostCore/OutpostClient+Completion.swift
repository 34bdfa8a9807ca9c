/// A handle on work started with a completion handler; ``cancel()`` stops it, and the completion
/// handler then receives ``OutpostError/Code/cancelled``.
public struct OperationHandle: Sendable {
    private let task: Task<Void, Never>

    package init(task: Task<Void, Never>) { self.task = task }

    public func cancel() { task.cancel() }

    public var isCancelled: Bool { task.isCancelled }
}

extension OutpostClient {
    /// Completion-handler form of ``perform(_:)``, for callers that are not async.
    @discardableResult
    public func perform<Operation: ClientOperation>(
        _ operation: Operation, completion: @escaping @Sendable (Result<Operation.Output, OutpostError>) -> Void
    ) -> OperationHandle {
        OperationHandle(
            task: Task {
                do {
                    completion(.success(try await self.perform(operation)))
                } catch {
                    completion(.failure(OutpostError.wrap(error, method: "-", path: operation.name)))
                }
            })
    }

    /// Completion-handler form of ``callLambda(_:arguments:)``.
    @discardableResult
    public func callLambda(
        _ name: String, arguments: LambdaArguments, completion: @escaping @Sendable (Result<JSONValue, OutpostError>) -> Void
    ) -> OperationHandle {
        OperationHandle(
            task: Task {
                do {
                    completion(.success(try await self.callLambda(name, arguments: arguments)))
                } catch {
                    completion(.failure(OutpostError.wrap(error, method: "POST", path: Self.lambdaPath(name))))
                }
            })
    }

    /// Completion-handler form of ``send(_:operationName:)``.
    @discardableResult
    public func send(
        _ request: Request, completion: @escaping @Sendable (Result<ClientResponse, OutpostError>) -> Void
    ) -> OperationHandle {
        OperationHandle(
            task: Task {
                do {
                    completion(.success(try await self.send(request)))
                } catch {
                    completion(.failure(OutpostError.wrap(error, method: request.method.rawValue, path: request.path)))
                }
            })
    }
}
