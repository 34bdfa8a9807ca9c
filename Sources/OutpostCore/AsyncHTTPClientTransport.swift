#if canImport(AsyncHTTPClient)
    public import AsyncHTTPClient
    public import Foundation
    public import HTTPTypes
    import NIOCore
    import NIOHTTP1

    /// A ``ClientTransport`` on AsyncHTTPClient: the default transport on Linux.
    ///
    /// Create it with ``init(configuration:)`` to own an `HTTPClient` (shut down by ``shutdown()``), or
    /// with ``init(borrowing:)`` to use one that the application manages.
    ///
    /// ``TransportOptions/timeout`` bounds the whole exchange, body included; ``shutdown()`` cancels
    /// the requests in flight and returns without waiting for the server.
    public final class AsyncHTTPClientTransport: ClientTransport {
        public let client: HTTPClient
        private let owned: Bool
        private let exchanges = InFlightExchanges<(HTTPResponse, Data)>()

        /// Creates a transport that owns its `HTTPClient`.
        ///
        /// The default configuration turns off AsyncHTTPClient's own retrying of failed connection
        /// attempts, so that a server that is down fails at once with ``OutpostError/Code/cannotConnect``
        /// and the client's ``RetryPolicy`` alone decides what is retried.
        public init(configuration: HTTPClient.Configuration = AsyncHTTPClientTransport.defaultConfiguration) {
            self.client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            self.owned = true
        }

        /// AsyncHTTPClient's defaults, but with connection establishment failing fast (see ``init(configuration:)``).
        public static var defaultConfiguration: HTTPClient.Configuration {
            var configuration = HTTPClient.Configuration()
            configuration.connectionPool.retryConnectionEstablishment = false
            return configuration
        }

        /// Creates a transport over an `HTTPClient` that the caller owns and shuts down.
        public init(borrowing client: HTTPClient) {
            self.client = client
            self.owned = false
        }

        public func send(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> (HTTPResponse, Data) {
            let prepared = try Self.clientRequest(request, body: body)
            let client = client
            do {
                return try await exchanges.run(options: options) {
                    // AsyncHTTPClient's timeout ends at the response head; the exchanges' deadline covers the body.
                    let response = try await client.execute(prepared, timeout: .nanoseconds(options.timeout.nanoseconds))
                    let buffer = try await response.body.collect(upTo: options.maxResponseBytes)
                    // A cancelled body ends early rather than failing: never return it as complete.
                    try Task.checkCancellation()
                    let data = Data(buffer.readableBytesView)
                    return (Self.head(of: response), data)
                }
            } catch {
                throw Self.classify(error, options: options)
            }
        }

        /// AsyncHTTPClient's request for `request`.
        static func clientRequest(_ request: HTTPRequest, body: Data?) throws -> HTTPClientRequest {
            // The URL string straight from the request's parts: AsyncHTTPClient parses it once, and
            // nothing else does (`request.url` would build a `URL` only for its `absoluteString`).
            guard let url = Self.absoluteURLString(of: request) else {
                throw OutpostError(.invalidRequest, "The request has no absolute URL")
            }
            var outgoing = HTTPClientRequest(url: url)
            outgoing.method = Self.method(request.method)
            outgoing.headers.reserveCapacity(request.headerFields.count)
            for field in request.headerFields {
                outgoing.headers.add(name: field.name.rawName, value: field.value)
            }
            if let body {
                outgoing.body = .bytes(ByteBuffer(bytes: body))
            }
            return outgoing
        }

        /// The status and header fields of AsyncHTTPClient's response.
        static func head(of response: HTTPClientResponse) -> HTTPResponse {
            var fields = HTTPFields()
            fields.reserveCapacity(response.headers.count)
            for header in response.headers {
                if let name = HTTPField.Name(header.name) { fields.append(HTTPField(name: name, value: header.value)) }
            }
            return HTTPResponse(status: .init(code: Int(response.status.code)), headerFields: fields)
        }

        /// `scheme://authority/path?query`, as `HTTPRequest.url` would spell it, without building a `URL`;
        /// `nil` where `HTTPRequest.url` is `nil`.
        static func absoluteURLString(of request: HTTPRequest) -> String? {
            if (request.method == .connect && request.extendedConnectProtocol == nil)
                || (request.method == .options && request.path == "*")
            {
                return nil
            }
            guard let scheme = request.scheme, let authority = request.authority, let path = request.path else { return nil }
            return scheme + "://" + authority + path
        }

        /// NIO's method, without a string comparison for the common ones.
        static func method(_ method: HTTPRequest.Method) -> HTTPMethod {
            switch method {
            case .get: return .GET
            case .post: return .POST
            case .put: return .PUT
            case .delete: return .DELETE
            case .patch: return .PATCH
            case .head: return .HEAD
            default: return HTTPMethod(rawValue: method.rawValue)
            }
        }

        /// Cancels the requests in flight, then shuts the `HTTPClient` down if this transport owns it.
        ///
        /// Returns within about a second: AsyncHTTPClient's own shutdown waits for connection attempts
        /// still in progress (a server stuck in its backlog holds one until the connect timeout), so it
        /// finishes in the background when it takes longer. Its event loops are the shared singleton
        /// group; nothing else waits for it.
        public func shutdown() async throws {
            await exchanges.cancelAll()
            guard owned else { return }
            let client = client
            let closing = Task { try await client.shutdown() }
            try await ShutdownWait.waitBriefly(for: closing, grace: .seconds(1))
        }

        static func classify(_ error: any Error, options: TransportOptions) -> OutpostError {
            if let error = error as? OutpostError { return error }
            if error is CancellationError { return .transportCancelled(underlying: error) }
            if error is NIOTooManyBytesError { return .responseTooLarge(options, underlying: error) }
            if let error = error as? HTTPClientError {
                switch error {
                case .deadlineExceeded, .readTimeout, .writeTimeout: return .transportTimeout(options, underlying: error)
                case .cancelled: return .transportCancelled(underlying: error)
                case .remoteConnectionClosed: return .connectionLost(underlying: error)
                case .connectTimeout: return .cannotConnect("no connection in time", underlying: error)
                case .invalidURL:
                    return OutpostError(.invalidRequest, "The request has no valid absolute URL", underlying: error)
                default: break
                }
            }
            // The connection was made and the request sent; what came back was not HTTP.
            if error is HTTPParserError { return .malformedResponse(underlying: error) }
            if let error = error as? IOError, [ECONNRESET, EPIPE].contains(error.errnoCode) {
                return .connectionLost(underlying: error)
            }
            if let error = error as? ChannelError, error == .eof || error == .ioOnClosedChannel || error == .outputClosed {
                return .connectionLost(underlying: error)
            }
            return .cannotConnect("\(error)", underlying: error)
        }
    }

    extension Duration {
        package var nanoseconds: Int64 {
            let (seconds, attoseconds) = components
            return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        }
    }
#endif
