/// A custom operation: how to build its request, what to make of the response, and what to do when
/// it fails — in the spirit of ODKit's `ODOperation`.
///
/// ```swift
/// struct TimeInZone: ClientOperation {
///     var zone: String
///     func makeRequest() throws -> Request { .post("/handlers/time", json: ["zone": .string(zone)]) }
///     func handleResponse(_ response: ClientResponse, client: OutpostClient) throws -> String {
///         try response.json()["time"]?.stringValue ?? ""
///     }
/// }
/// let time = try await client.perform(TimeInZone(zone: "Asia/Tokyo"))
/// ```
public protocol ClientOperation: Sendable {
    associatedtype Output: Sendable

    /// A name for logs and middlewares. Defaults to the type's name.
    var name: String { get }

    /// Builds the request.
    func makeRequest() throws -> Request

    /// Turns a successful (2xx) response into the output.
    func handleResponse(_ response: ClientResponse, client: OutpostClient) throws -> Output

    /// Handles a failure: rethrow it (the default), throw another error, or recover with an output.
    func handleError(_ error: OutpostError, client: OutpostClient) throws -> Output
}

extension ClientOperation {
    public var name: String { String(describing: Self.self) }

    public func handleError(_ error: OutpostError, client: OutpostClient) throws -> Output {
        throw error
    }
}

extension ClientOperation where Output: Decodable {
    /// Decodes the body as `Output` with the client's decoder.
    public func handleResponse(_ response: ClientResponse, client: OutpostClient) throws -> Output {
        let request = try makeRequest()
        return try client.decode(Output.self, from: response, method: request.method.rawValue, path: request.path)
    }
}

extension OutpostClient {
    /// Runs one operation.
    public func perform<Operation: ClientOperation>(_ operation: Operation) async throws -> Operation.Output {
        var method: String?
        var path: String?
        do {
            let request = try operation.makeRequest()
            (method, path) = (request.method.rawValue, request.path)
            let response = try await send(request, operationName: operation.name)
            return try operation.handleResponse(response, client: self)
        } catch let error as OutpostError {
            return try operation.handleError(error, client: self)
        } catch {
            let failure = OutpostError.wrap(error, layer: .handler(operation.name), method: method, path: path)
            return try operation.handleError(failure, client: self)
        }
    }

    /// Runs many operations with at most `maxConcurrent` in flight, and returns their results in the
    /// order given. Cancelling the calling task cancels the operations in flight and skips the rest,
    /// whose results are ``OutpostError/Code/cancelled``.
    public func performAll<Operation: ClientOperation>(
        _ operations: [Operation], maxConcurrent: Int = 4
    ) async -> [Result<Operation.Output, OutpostError>] {
        var results = [Result<Operation.Output, OutpostError>?](repeating: nil, count: operations.count)
        await withTaskGroup(of: (Int, Result<Operation.Output, OutpostError>).self) { group in
            var next = 0
            func addNext() {
                guard next < operations.count else { return }
                let index = next
                let operation = operations[index]
                next += 1
                group.addTask {
                    do {
                        return (index, .success(try await self.perform(operation)))
                    } catch {
                        return (index, .failure(OutpostError.wrap(error, method: "-", path: operation.name)))
                    }
                }
            }
            for _ in 0..<max(1, maxConcurrent) { addNext() }
            while let (index, result) = await group.next() {
                results[index] = result
                if !Task.isCancelled { addNext() }
            }
        }
        return results.enumerated().map { index, result in
            result ?? .failure(OutpostError(.cancelled, "Operation '\(operations[index].name)' was cancelled before it started"))
        }
    }
}
