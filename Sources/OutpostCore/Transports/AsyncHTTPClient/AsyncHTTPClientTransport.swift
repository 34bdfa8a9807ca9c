#if os(Linux) || os(Android) || os(Windows) || os(OpenBSD)
    public import AsyncHTTPClient
    public import Foundation
    public import HTTPTypes
    import NIOCore
    import NIOHTTP1
    @_spi(OutpostInternal) import OutpostSupport
    import Synchronization
    import Tracing

    /// A ``ClientTransport`` on AsyncHTTPClient: the default transport off Apple platforms (HTTP/1.1 and
    /// HTTP/2, proxies, decompression, TLS through swift-nio-ssl), or one over an `HTTPClient` the
    /// application already has.
    ///
    /// Create it with ``init(configuration:)`` to own an `HTTPClient` (shut down by ``shutdown()``), or
    /// with ``init(borrowing:)`` to use one that the application manages.
    ///
    /// ``TransportOptions/timeout`` bounds the whole exchange, body included; ``shutdown()`` cancels
    /// the requests in flight and returns without waiting for the server.
    ///
    /// A transport that owns its client and is released without ``shutdown()`` shuts its clients down
    /// in the background (AsyncHTTPClient alone would stop a debug build with a fatal error).
    public final class AsyncHTTPClientTransport: ClientTransport {
        public let client: HTTPClient
        private let owned: Bool
        /// Whether ``shutdown()`` has run (then `deinit` leaves the client alone).
        private let shutDown = Atomic<Bool>(false)
        /// The event loop the requests prefer (see ``send(_:body:options:)``).
        private let eventLoop: any EventLoop
        private let exchanges = InFlightExchanges<(HTTPResponse, Data)>()
        /// Runs the exchanges when they are to run on ``eventLoop`` (see ``init(configuration:exchangesOnEventLoop:)``).
        private let loopExecutor: EventLoopExecutor?
        /// Requests already built, by method and URL (see ``send(_:body:options:)``).
        private let targets = PreparedTargets()
        private let requests = CancellableRequests<HTTPClient.Task<ResponseCollector.Collected>> {
            $0.fail(reason: AsyncHTTPClientTransport.ShutDown())
        }
        /// The connections of response streams that do not end, apart from `client`'s request pool.
        let eventStreams: EventStreamPool

        /// Creates a transport that owns its `HTTPClient`.
        ///
        /// The default configuration turns off AsyncHTTPClient's own retrying of failed connection
        /// attempts, so that a server that is down fails at once with ``OutpostError/Code/cannotConnect``
        /// and the client's ``RetryPolicy`` alone decides what is retried.
        public convenience init(configuration: HTTPClient.Configuration = AsyncHTTPClientTransport.defaultConfiguration) {
            self.init(configuration: configuration, exchangesOnEventLoop: false)
        }

        /// `exchangesOnEventLoop`: each exchange runs on the transport's event loop (a task executor
        /// preference), so that AsyncHTTPClient starts it there without waking the loop from
        /// another thread (for the benchmark's comparison).
        @_spi(OutpostInternal) public init(configuration: HTTPClient.Configuration, exchangesOnEventLoop: Bool) {
            self.client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            self.owned = true
            self.eventStreams = EventStreamPool(configuration: configuration)
            self.eventLoop = client.eventLoopGroup.next()
            self.loopExecutor = exchangesOnEventLoop ? EventLoopExecutor(eventLoop) : nil
        }

        /// AsyncHTTPClient's defaults, but with connection establishment failing fast (see
        /// ``init(configuration:)``), and no tracer of AsyncHTTPClient's own.
        ///
        /// The client makes its spans itself, around each call and each attempt, and writes the
        /// attempt's context into its headers (``PreparedRequest/start()``), whatever the transport.
        /// AsyncHTTPClient's tracer would add a second span per attempt and replace that context;
        /// with the no-op tracer (no bootstrap) it would still cost each request about 30,000
        /// instructions (a span, its attributes, the URL taken apart again).
        public static var defaultConfiguration: HTTPClient.Configuration {
            var configuration = HTTPClient.Configuration()
            configuration.connectionPool.retryConnectionEstablishment = false
            configuration.tracing.tracer = nil
            return configuration
        }

        /// Creates a transport over an `HTTPClient` that the caller owns and shuts down.
        ///
        /// Streams (``ClientTransport/stream(_:body:options:)``: change feeds, file transfers) then run on this client too, each holding one
        /// of its connections while it is open: size its per-host connection limit for them and the
        /// requests together. (A transport that owns its client opens streams on a pool of their own.)
        public init(borrowing client: HTTPClient) {
            self.client = client
            self.owned = false
            self.eventStreams = EventStreamPool(configuration: nil)
            self.eventLoop = client.eventLoopGroup.next()
            self.loopExecutor = nil
        }

        deinit {
            // Dropped without `shutdown()` (a client that was never shut down, a test that threw):
            // AsyncHTTPClient traps in debug builds when an `HTTPClient` is released before its
            // shutdown, and leaks its connections otherwise. The shutdown holds the client until it
            // is done.
            if owned, !shutDown.load(ordering: .relaxed) { _ = client.shutdown() }
        }

        public func send(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> (HTTPResponse, Data) {
            if let loopExecutor {
                return try await withTaskExecutorPreference(loopExecutor) {
                    try await exchange(request, body: body, options: options)
                }
            }
            return try await exchange(request, body: body, options: options)
        }

        private func exchange(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> (HTTPResponse, Data)
        {
            let response: ResponseCollector.Collected
            do {
                let outgoing = try prepared(request, body: body)
                response = try await execute(outgoing, options: options)
            } catch {
                throw Self.classify(error, options: options)
            }
            let data = response.body.map { $0.withUnsafeReadableBytes { Data($0) } } ?? Data()
            return (
                NIOHTTP1Conversions.response(response.head),
                data
            )
        }

        /// The AsyncHTTPClient request for `request`: its target (method and URL, parsed by
        /// AsyncHTTPClient) comes from ``targets`` when the same one was sent before.
        private func prepared(_ request: HTTPRequest, body: Data?) throws -> HTTPClient.Request {
            guard Self.hasAbsoluteURL(request), let scheme = request.scheme, let authority = request.authority,
                let path = request.path
            else {
                throw OutpostError(.invalidRequest, "The request has no absolute URL")
            }
            let key = PreparedTargets.Key(method: request.method, scheme: scheme, authority: authority, path: path)
            return try targets.request(
                for: key, method: NIOHTTP1Conversions.method(request.method), headers: NIOHTTP1Conversions.headers(of: request),
                body: body.map { .bytes($0) }, url: { scheme + "://" + authority + path })
        }

        /// The URL string and NIO headers of `request`.
        static func urlAndHeaders(of request: HTTPRequest) throws -> (String, HTTPHeaders) {
            // The URL string straight from the request's parts: AsyncHTTPClient parses it once, and
            // nothing else does (`request.url` would build a `URL` only for its `absoluteString`).
            guard let url = Self.absoluteURLString(of: request) else {
                throw OutpostError(.invalidRequest, "The request has no absolute URL")
            }
            return (url, NIOHTTP1Conversions.headers(of: request))
        }

        /// Runs `request` in the caller's task, with no task or timer of the SDK's own: AsyncHTTPClient's
        /// deadline (through its delegate API) bounds the whole exchange, head and body; the caller's
        /// cancellation and ``shutdown()`` cancel it through its `HTTPClient.Task`.
        private func execute(_ request: HTTPClient.Request, options: TransportOptions) async throws -> ResponseCollector.Collected
        {
            guard let id = requests.reserve() else {
                throw OutpostError(
                    .cancelled, "The transport was shut down before the request was sent",
                    suggestion: "Send requests before shutting the client down, or make a new client")
            }
            defer { requests.remove(id) }
            let collector = ResponseCollector(
                maxBodySize: min(max(options.maxResponseBytes, 0), Self.largestBody), isHead: request.method == .HEAD)
            // One preferred event loop per transport: the pool reuses an idle connection on it, so the
            // delegate runs on the connection's own loop. (With `.indifferent`, AsyncHTTPClient picks
            // the delegate's loop at random, and hops to it from the connection's at every step.)
            let task = client.execute(
                request: request, delegate: collector, eventLoop: .delegate(on: eventLoop),
                deadline: .now() + .nanoseconds(options.timeout.inNanoseconds))
            requests.attach(task, to: id)
            return try await withTaskCancellationHandler {
                try await task.futureResult.get()
            } onCancel: {
                task.cancel()
            }
        }

        /// The largest body a `ByteBuffer` can hold (a `ByteBuffer`'s limit).
        private static let largestBody = Int(exactly: UInt32.max) ?? Int(Int32.max)

        /// Why ``shutdown()`` failed a request in flight.
        struct ShutDown: Error {}

        /// `scheme://authority/path?query`, as `HTTPRequest.url` would spell it, without building a `URL`;
        /// `nil` where `HTTPRequest.url` is `nil`.
        static func absoluteURLString(of request: HTTPRequest) -> String? {
            guard hasAbsoluteURL(request), let scheme = request.scheme, let authority = request.authority,
                let path = request.path
            else { return nil }
            return scheme + "://" + authority + path
        }

        /// Whether `HTTPRequest.url` would be non-`nil` for a request with a scheme, an authority and a path.
        private static func hasAbsoluteURL(_ request: HTTPRequest) -> Bool {
            !((request.method == .connect && request.extendedConnectProtocol == nil)
                || (request.method == .options && request.path == "*"))
        }

        /// Cancels the requests in flight, then shuts the `HTTPClient` down if this transport owns it.
        ///
        /// Returns within about a second: AsyncHTTPClient's own shutdown waits for connection attempts
        /// still in progress (a server stuck in its backlog holds one until the connect timeout), so it
        /// finishes in the background when it takes longer. Its event loops are the shared singleton
        /// group; nothing else waits for it.
        public func shutdown() async throws {
            shutDown.store(true, ordering: .relaxed)
            requests.cancelAll()
            await exchanges.cancelAll()
            let client = owned ? client : nil
            let streams = eventStreams
            let closing = Task {
                var failure: (any Error)?
                do { try await streams.shutdown() } catch { failure = error }
                try await client?.shutdown()
                if let failure { throw failure }
            }
            try await ShutdownWait.waitBriefly(for: closing, grace: .seconds(1))
        }

        static func classify(_ error: any Error, options: TransportOptions) -> OutpostError {
            if error is ShutDown {
                return OutpostError(
                    .cancelled, "The transport was shut down while the request was in flight", underlying: error)
            }
            if error is ResponseAccumulator.ResponseTooBigError || error is ResponseCollector.TooLarge {
                return .responseTooLarge(options, underlying: error)
            }
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
            if let known = NIOHTTP1Conversions.classify(error, options: options) { return known }
            return .cannotConnect("\(error)", underlying: error)
        }
    }
#endif
