#if os(Linux) || os(Android) || os(Windows) || os(OpenBSD)  // Package.swift's `nonApple`: where AsyncHTTPClient is linked
    import Foundation
    public import HTTPTypes
    import NIOCore
    import NIOHTTP1
    import Synchronization

    extension NIOHTTPTransport {
        /// Streams both bodies (see ``ClientTransport/stream(_:body:options:)``). The request body is
        /// read one chunk at a time, each once the previous one was written to the socket; the
        /// response body goes to a `StreamedExchange`, and the connection is read from only while
        /// its buffer has room (at most about 1 MiB ahead of the reader).
        ///
        /// Streams use connections of their own (one pool per origin apart from the requests').
        /// A stream without a request body (a download, a change feed) follows redirects as
        /// ``send(_:body:options:)`` does, `Authorization` and cookies dropped when the origin
        /// changes, and goes once more on a new connection when a reused one closed before any of
        /// the response arrived and the request is safe to repeat. A streamed upload does neither:
        /// its body is read once and cannot be sent again, so a 3xx comes back as it is and a
        /// connection lost fails it with ``OutpostError/Code/connectionLost``.
        public func stream(_ request: HTTPRequest, body: ByteStream?, options: TransportOptions) async throws -> (
            HTTPResponse, ByteStream
        ) {
            let (pool, prepared): (NIOConnectionPool, HTTPRequestHead)
            do {
                (pool, prepared) = try prepare(request, bodyLength: body?.length, streams: true)
            } catch {
                throw Self.classify(error, options: options)
            }
            var head = prepared
            if body != nil, body?.length == nil { head.headers.replaceOrAdd(name: "Transfer-Encoding", value: "chunked") }
            let exchange = StreamedExchange(options: options)
            let held = HeldConnection()
            let requestHead = head
            // The exchange runs in a task of its own, which the exchange cancels when it ends early;
            // the exchange's watchdog enforces the timeouts, from the wait for a connection on.
            let work = Task {
                do {
                    let deadline = NIODeadline.now() + .nanoseconds(options.timeout.inNanoseconds)
                    if let body {
                        try await upload(
                            pool, requestHead, body: body, exchange: exchange, held: held, options: options, deadline: deadline)
                    } else {
                        try await download(
                            request, pool, requestHead, exchange: exchange, held: held, options: options, deadline: deadline)
                    }
                } catch {
                    exchange.finish(Self.classify(error, options: options))
                }
            }
            exchange.onCancel {
                work.cancel()
                held.cancel()?.abort(
                    OutpostError.transportCancelled(underlying: CancellationError()), exchange: ObjectIdentifier(exchange))
            }
            return try await exchange.open()
        }

        /// Starts `head`'s exchange on a connection of `pool`: an idle connection the server closed
        /// meanwhile is replaced by another. `nil` when the stream was cancelled first.
        private func start(
            _ pool: NIOConnectionPool, _ head: HTTPRequestHead, sink: NIOResponseSink, streamsBody: Bool,
            exchange: StreamedExchange, held: HeldConnection, options: TransportOptions, deadline: NIODeadline,
            preferNew: Bool
        ) async throws -> NIOConnection? {
            for _ in 0..<3 {
                let connection = try await pool.lease(deadline: deadline, options: options, preferNew: preferNew)
                guard held.set(connection) else {
                    connection.abort(OutpostError.transportCancelled(underlying: CancellationError()))
                    return nil
                }
                let handler = connection.handler
                let started = try await connection.channel.eventLoop.submit {
                    handler.value.start(
                        head: head, body: nil, streamsBody: streamsBody, sink: sink, options: options, deadline: nil)
                }.get()
                if started { return connection }
            }
            throw NIOStaleConnection()
        }

        /// A stream without a request body: its response head is looked at before the exchange
        /// gets it, for redirects, and a reused connection's close before it means another try.
        private func download(
            _ request: HTTPRequest, _ pool: NIOConnectionPool, _ head: HTTPRequestHead, exchange: StreamedExchange,
            held: HeldConnection, options: TransportOptions, deadline: NIODeadline
        ) async throws {
            var (request, pool, head) = (request, pool, head)
            var visited: Set<String> = []
            var retried = false
            while true {
                let gate = group.next().makePromise(of: HTTPResponseHead.self)
                let leased: NIOConnection?
                do {
                    leased = try await start(
                        pool, head, sink: .stream(exchange, head: gate), streamsBody: false, exchange: exchange, held: held,
                        options: options, deadline: deadline, preferNew: retried)
                } catch {
                    gate.fail(error)
                    throw error
                }
                guard let connection = leased else {
                    gate.fail(CancellationError())
                    return
                }
                let response: HTTPResponseHead
                do {
                    response = try await gate.futureResult.get()
                } catch is NIOUnansweredOnReusedConnection
                    where !retried && Request.isRetrySafe(method: request.method, headers: request.headerFields)
                {
                    retried = true
                    continue
                }
                let handler = connection.handler
                let token = ObjectIdentifier(exchange)
                if configuration.maxRedirects > 0,
                    let (next, _) = try redirect(from: request, body: nil, response: response, visited: &visited)
                {
                    connection.channel.eventLoop.execute { handler.value.abandon(token) }
                    request = next
                    (pool, head) = try prepare(request, bodyLength: nil, streams: true)
                    retried = false
                    continue
                }
                connection.channel.eventLoop.execute { handler.value.proceed(token) }
                return
            }
        }

        /// A streamed upload: sent once, its response goes to the exchange as it comes.
        private func upload(
            _ pool: NIOConnectionPool, _ head: HTTPRequestHead, body: ByteStream, exchange: StreamedExchange,
            held: HeldConnection, options: TransportOptions, deadline: NIODeadline
        ) async throws {
            guard
                let connection = try await start(
                    pool, head, sink: .stream(exchange, head: nil), streamsBody: true, exchange: exchange, held: held,
                    options: options, deadline: deadline, preferNew: false)
            else { return }
            let channel = connection.channel
            do {
                var chunks = ByteBufferChunks(base: body, loops: channel.eventLoop).makeAsyncIterator()
                while let chunk = try await chunks.next() {
                    if exchange.isOver { return }
                    // Paced by the socket: the next chunk is read once this one is written.
                    try await channel.writeAndFlush(HTTPClientRequestPart.body(.byteBuffer(chunk))).get()
                }
                try await channel.writeAndFlush(HTTPClientRequestPart.end(nil)).get()
            } catch {
                // A request body cut short leaves the connection unusable.
                connection.abort(Self.classify(error, options: options), exchange: ObjectIdentifier(exchange))
                throw error
            }
        }
    }

    /// The connection a stream runs on, once it has one: what the exchange's cancellation closes.
    private final class HeldConnection: Sendable {
        private let state = Mutex<(connection: NIOConnection?, cancelled: Bool)>((nil, false))

        /// Keeps `connection`; `false` when the stream was already cancelled.
        func set(_ connection: NIOConnection) -> Bool {
            state.withLock { state in
                guard !state.cancelled else { return false }
                state.connection = connection
                return true
            }
        }

        /// Marks the stream cancelled and returns its connection, if any.
        func cancel() -> NIOConnection? {
            state.withLock { state in
                state.cancelled = true
                return state.connection.take()
            }
        }
    }
#endif
