public import Foundation
public import HTTPTypes
import Synchronization

extension PreparedRequest {
    /// The most bytes of an error response's body kept for the error and the middlewares.
    static var maxStreamErrorBodyBytes: Int { 64 * 1024 }

    /// The longest silence of a change stream before the client reconnects: long enough for the
    /// server's heartbeats, which come every 15 s by default.
    static var changeStreamIdleTimeout: Duration { .seconds(90) }

    /// Sends the request through the middlewares to ``ClientTransport/stream(_:body:options:)``,
    /// the one streaming path of the SDK. `receive` consumes a 2xx body and returns what the
    /// middlewares and the status check see as the body; other bodies are kept up to 64 KiB for
    /// the error, and a non-2xx status becomes an ``OutpostError`` as with ``start()``. No retries:
    /// the caller decides.
    ///
    /// - Parameters:
    ///   - body: makes the request body each time the transport is called (a middleware may call
    ///     it again); `nil` sends the prepared body, if any.
    @_spi(OutpostInternal) public func stream(
        options: TransportOptions, body makeBody: (@Sendable () throws -> ByteStream)? = nil,
        receive: @escaping @Sendable (HTTPResponse, ByteStream) async throws -> Data
    ) async throws -> ClientResponse {
        let method = request.method.rawValue
        let path = Self.pathWithoutQuery(request.path)
        let transport = client.transport
        let terminal: @Sendable (HTTPRequest, Data?) async throws -> ClientResponse = { request, body in
            let head: HTTPResponse
            let stream: ByteStream
            do {
                let outgoing = try makeBody?() ?? body.map { ByteStream.data($0) }
                (head, stream) = try await transport.stream(request, body: outgoing, options: options)
            } catch let error as OutpostError {
                throw error
            } catch {
                throw OutpostError.wrap(error, layer: .transport("\(type(of: transport))"), method: nil, path: nil)
            }
            guard (200..<300).contains(head.status.code) else {
                return ClientResponse(response: head, body: try await stream.prefix(Self.maxStreamErrorBodyBytes))
            }
            return ClientResponse(response: head, body: try await receive(head, stream))
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
            return response
        } catch {
            throw OutpostError.wrap(error, method: method, path: path)
        }
    }

    /// Opens the response as a stream that may never end (a change feed): the head must come within
    /// the request's timeout, then each silence of the body lasts at most 90 s.
    @_spi(OutpostInternal) public func startStream() async throws -> (ClientResponse, ByteStream) {
        let opened = Mutex<ByteStream?>(nil)
        let options = TransportOptions(
            timeout: timeout, maxResponseBytes: client.configuration.maxResponseBytes, idleTimeout: Self.changeStreamIdleTimeout)
        let response = try await stream(options: options) { _, stream in
            opened.withLock { $0 = stream }
            return Data()
        }
        guard let stream = opened.withLock({ $0.take() }) else {
            throw OutpostError(
                .malformedResponse, "A middleware answered a streaming request with a response of its own",
                suggestion: "Let streaming requests through to the transport", method: request.method.rawValue,
                path: Self.pathWithoutQuery(request.path))
        }
        return (response, stream)
    }
}

extension ByteStream {
    /// Reads and drops the rest of the stream.
    func discard() async throws {
        while try await nextChunk() != nil {}
    }

    /// Up to `limit` bytes, dropping the rest.
    func prefix(_ limit: Int) async throws -> Data {
        var data = Data()
        while let chunk = try await nextChunk() {
            if data.count < limit { data.append(chunk.prefix(limit - data.count)) }
        }
        return data
    }
}
