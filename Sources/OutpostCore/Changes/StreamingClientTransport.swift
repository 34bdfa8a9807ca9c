public import Foundation
public import HTTPTypes

/// A ``ClientTransport`` that can also hand over a response body as it arrives, for responses that
/// do not end (Server-Sent Events) or do not fit in memory.
///
/// Both built-in transports conform: `AsyncHTTPClientTransport` with AsyncHTTPClient's streamed
/// body, ``URLSessionTransport`` with `URLSession.bytes(for:)` on Apple platforms.
public protocol StreamingClientTransport: ClientTransport {
    /// Sends `request` and returns as soon as the response head arrives, with the body still to
    /// read. ``TransportOptions/timeout`` bounds the wait for the head only; ``TransportOptions/maxResponseBytes``
    /// does not apply (the reader bounds what it keeps). Failures are reported as by
    /// ``ClientTransport/send(_:body:options:)``, also while the body is read.
    func streamResponse(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> (
        HTTPResponse, ResponseByteStream
    )
}

/// A response body as it arrives, in chunks. Iterate it once; stop iterating (or cancel the task)
/// to close the connection.
public struct ResponseByteStream: AsyncSequence, Sendable {
    public typealias Element = Data
    public typealias Failure = any Error

    private let makeIterator: @Sendable () -> any AsyncIteratorProtocol<Data, any Error>
    private let classify: @Sendable (any Error) -> any Error

    /// Wraps a sequence of chunks; errors it throws go through `classify` first (a transport turns
    /// them into ``OutpostError``s there).
    public init<Base: AsyncSequence & Sendable>(
        _ base: Base, classify: @escaping @Sendable (any Error) -> any Error = { $0 }
    ) where Base.Element == Data, Base.Failure == any Error {
        self.makeIterator = { base.makeAsyncIterator() }
        self.classify = classify
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: makeIterator(), classify: classify)
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: any AsyncIteratorProtocol<Data, any Error>
        let classify: @Sendable (any Error) -> any Error

        public mutating func next() async throws -> Data? {
            do {
                return try await base.next()
            } catch {
                throw classify(error)
            }
        }
    }
}

/// Gathers single bytes (`URLSession.AsyncBytes`) into chunks that end at a line feed or at 16 KiB,
/// so that a reader of lines gets each line as soon as it is complete.
struct LineChunks<Base: AsyncSequence>: AsyncSequence where Base.Element == UInt8 {
    typealias Element = Data
    typealias Failure = any Error
    let base: Base
    static var maxChunk: Int { 16 * 1024 }

    func makeAsyncIterator() -> Iterator { Iterator(base: base.makeAsyncIterator()) }

    struct Iterator: AsyncIteratorProtocol {
        var base: Base.AsyncIterator

        mutating func next() async throws -> Data? {
            var chunk = Data()
            while let byte = try await base.next() {
                chunk.append(byte)
                if byte == 0x0A || chunk.count >= LineChunks.maxChunk { return chunk }
            }
            return chunk.isEmpty ? nil : chunk
        }
    }
}

extension PreparedRequest {
    /// The most bytes of an error response's body kept for the error and the middlewares.
    static var maxStreamErrorBodyBytes: Int { 64 * 1024 }

    /// Sends the request through the middlewares and opens its response as a stream: the
    /// middlewares see the head (and, for a non-2xx status, the body, up to 64 KiB), and a non-2xx
    /// status becomes an ``OutpostError`` as with ``start()``. No retries: the caller decides.
    ///
    /// - Throws: ``OutpostError/Code/invalidRequest`` when the client's transport cannot stream.
    package func startStream() async throws -> (ClientResponse, ResponseByteStream) {
        let method = request.method.rawValue
        let path = Self.pathWithoutQuery(request.path)
        guard let transport = client.transport as? any StreamingClientTransport else {
            throw OutpostError(
                .invalidRequest, "The transport \(type(of: client.transport)) cannot stream a response",
                suggestion:
                    "Use AsyncHTTPClientTransport or URLSessionTransport, or make the transport a StreamingClientTransport",
                method: method, path: path)
        }
        let opened = OpenedStream()
        let options = TransportOptions(timeout: timeout, maxResponseBytes: client.configuration.maxResponseBytes)
        let terminal: @Sendable (HTTPRequest, Data?) async throws -> ClientResponse = { request, body in
            let head: HTTPResponse
            let stream: ResponseByteStream
            do {
                (head, stream) = try await transport.streamResponse(request, body: body, options: options)
            } catch let error as OutpostError {
                throw error
            } catch {
                throw OutpostError.wrap(error, layer: .transport("\(type(of: transport))"), method: nil, path: nil)
            }
            if (200..<300).contains(head.status.code) {
                opened.set(stream)
                return ClientResponse(response: head, body: Data())
            }
            var data = Data()
            for try await chunk in stream {
                data.append(chunk)
                if data.count > Self.maxStreamErrorBodyBytes { break }
            }
            return ClientResponse(response: head, body: data)
        }
        do {
            try Task.checkCancellation()
            let response: ClientResponse
            if client.middlewares.isEmpty {
                response = try await terminal(request, body)
            } else {
                let context = MiddlewareContext(
                    logger: client.configuration.logger, operationName: operationName, baseURL: client.configuration.baseURL)
                response = try await Self.chain(
                    client.middlewares[...], request: request, body: body, context: context, terminal: terminal)
            }
            try client.checkStatus(response, method: method, path: path)
            guard let stream = opened.take() else {
                throw OutpostError(
                    .malformedResponse, "A middleware answered a streaming request with a response of its own",
                    suggestion: "Let streaming requests through to the transport", method: method, path: path)
            }
            return (response, stream)
        } catch {
            throw OutpostError.wrap(error, method: method, path: path)
        }
    }
}
