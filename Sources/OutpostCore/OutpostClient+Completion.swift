/// A handle on work started with a completion handler; ``cancel()`` stops it, and the completion
/// handler then receives ``OutpostError/Code/cancelled``.
public struct OperationHandle: Sendable {
    private let task: Task<Void, Never>

    @_spi(OutpostInternal) public init(task: Task<Void, Never>) { self.task = task }

    public func cancel() { task.cancel() }

    public var isCancelled: Bool { task.isCancelled }

    /// Runs `body` in a new task and hands `completion` its result, or its error as `mapError` makes
    /// it, exactly once: the one body of every completion-handler form in the client modules.
    @_spi(OutpostInternal) public static func start<Output: Sendable, Failure: Error>(
        _ completion: @escaping @Sendable (Result<Output, Failure>) -> Void,
        mapError: @escaping @Sendable (any Error) -> Failure,
        _ body: @escaping @Sendable () async throws -> Output
    ) -> OperationHandle {
        OperationHandle(
            task: Task {
                do {
                    completion(.success(try await body()))
                } catch {
                    completion(.failure(mapError(error)))
                }
            })
    }
}

extension OutpostClient {
    /// Completion-handler form of ``perform(_:)``, for callers that are not async.
    @discardableResult
    public func perform<Operation: ClientOperation>(
        _ operation: Operation, completion: @escaping @Sendable (Result<Operation.Output, OutpostError>) -> Void
    ) -> OperationHandle {
        OperationHandle.start(completion, mapError: { OutpostError.wrap($0, method: "-", path: operation.name) }) {
            try await self.perform(operation)
        }
    }

    /// Completion-handler form of ``callLambda(_:arguments:)``.
    @discardableResult
    public func callLambda(
        _ name: String, arguments: LambdaArguments, completion: @escaping @Sendable (Result<JSONValue, OutpostError>) -> Void
    ) -> OperationHandle {
        OperationHandle.start(completion, mapError: { OutpostError.wrap($0, method: "POST", path: Self.lambdaPath(name)) }) {
            try await self.callLambda(name, arguments: arguments)
        }
    }

    /// Completion-handler form of ``send(_:operationName:)``.
    @discardableResult
    public func send(
        _ request: Request, completion: @escaping @Sendable (Result<ClientResponse, OutpostError>) -> Void
    ) -> OperationHandle {
        OperationHandle.start(
            completion, mapError: { OutpostError.wrap($0, method: request.method.rawValue, path: request.path) }
        ) { try await self.send(request) }
    }
}
