#if canImport(AsyncHTTPClient)
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
        /// Streams use connections of their own (one pool per origin apart from the requests'), and
        /// do not follow redirects.
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
                    var attempts = 0
                    var connection: NIOConnection
                    // An idle connection the server closed meanwhile is replaced by another.
                    repeat {
                        connection = try await pool.lease(deadline: deadline, options: options)
                        guard held.set(connection) else {
                            connection.abort(OutpostError.transportCancelled(underlying: CancellationError()))
                            return
                        }
                        let handler = connection.handler
                        let started = try await connection.channel.eventLoop.submit {
                            handler.value.start(
                                head: requestHead, body: nil, streamsBody: body != nil, sink: .stream(exchange),
                                options: options, deadline: nil)
                        }.get()
                        if started { break }
                        attempts += 1
                    } while attempts < 3
                    guard attempts < 3 else { throw NIOStaleConnection() }
                    let channel = connection.channel
                    guard let body else { return }
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
