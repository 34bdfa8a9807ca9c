#if os(Linux) || os(Android) || os(Windows) || os(OpenBSD)
    import AsyncHTTPClient
    import Foundation
    public import HTTPTypes
    public import NIOCore
    @_spi(OutpostInternal) import OutpostSupport

    extension AsyncHTTPClientTransport {
        /// Streams both bodies (see ``ClientTransport/stream(_:body:options:)``): the request body is
        /// read chunk by chunk as AsyncHTTPClient writes it; the response body is read from the
        /// connection only while the buffer of the exchange has room, so memory stays bounded
        /// whatever the size of the body and the speed of the reader.
        public func stream(_ request: HTTPRequest, body: ByteStream?, options: TransportOptions) async throws -> (
            HTTPResponse, ByteStream
        ) {
            // Streams (file transfers, change feeds) hold their connection for as long as they last:
            // they run on a pool of their own, so that they never leave requests without one.
            let client = eventStreams.client(fallback: client)
            var outgoing = try Self.outgoing(request)
            if let body {
                let length = body.length.map { HTTPClientRequest.Body.Length.known($0) } ?? .unknown
                outgoing.body = .stream(ByteBufferChunks(base: body, loops: client.eventLoopGroup), length: length)
            }
            let exchange = StreamedExchange(options: options)
            let prepared = outgoing
            // The exchange runs in a task of its own, which the exchange cancels when it ends early.
            let work = Task {
                do {
                    // AsyncHTTPClient's deadline covers the wait for the head; the exchange's
                    // watchdog covers the rest.
                    let response = try await client.execute(
                        prepared, deadline: .now() + .nanoseconds(options.timeout.inNanoseconds))
                    let length = response.headers.first(name: "content-length").flatMap { Int64($0) }
                    exchange.receive(head: Self.head(of: response), length: length)
                    // AsyncHTTPClient reads from the connection only when this loop asks for the next part.
                    for try await buffer in response.body {
                        if exchange.append(Data(buffer.readableBytesView)) { await exchange.drained() }
                        if exchange.isOver { return }
                    }
                    exchange.finish(nil)
                } catch {
                    exchange.finish(Self.classify(error, options: options))
                }
            }
            exchange.onCancel { work.cancel() }
            return try await exchange.open()
        }

        /// The status and header fields of AsyncHTTPClient's response.
        static func head(of response: HTTPClientResponse) -> HTTPResponse {
            HTTPResponse(
                status: .init(code: Int(response.status.code)), headerFields: NIOHTTP1Conversions.fields(response.headers))
        }

        /// AsyncHTTPClient's request for `request`, without a body.
        static func outgoing(_ request: HTTPRequest) throws -> HTTPClientRequest {
            let (url, headers) = try urlAndHeaders(of: request)
            var outgoing = HTTPClientRequest(url: url)
            outgoing.method = NIOHTTP1Conversions.method(request.method)
            outgoing.headers = headers
            return outgoing
        }
    }

    /// A ``ByteStream`` as AsyncHTTPClient's body chunks, handed over no faster than the
    /// connection takes them.
    ///
    /// AsyncHTTPClient asks for the next chunk as soon as it has queued the previous one for the
    /// connection's event loop (`EventLoop.execute`), and waits only once that loop has found the
    /// connection unwritable. A source faster than the loop (a file in the page cache, a loop
    /// starved of CPU on a loaded machine) thus piled chunks up in the loop's task queue: uploads
    /// of 1 GiB peaked at up to 167 MB on a loaded 2-core machine. So before reading the next
    /// chunk, the iterator waits for every loop of the client's group to have run what was queued
    /// before (a task submitted to each: a loop runs its tasks in order), which includes the
    /// previous chunk's write; from then on AsyncHTTPClient's own writability check is current.
    @_spi(OutpostInternal) public struct ByteBufferChunks: AsyncSequence, Sendable {
        @_spi(OutpostInternal) public typealias Element = ByteBuffer
        let base: ByteStream
        let loops: any EventLoopGroup

        @_spi(OutpostInternal) public init(base: ByteStream, loops: any EventLoopGroup) {
            self.base = base
            self.loops = loops
        }

        @_spi(OutpostInternal) public struct AsyncIterator: AsyncIteratorProtocol {
            var base: ByteStream.AsyncIterator
            let loops: any EventLoopGroup
            var handedOver = false

            let direct: DirectRead?
            /// The buffer a file is read into, reused from chunk to chunk (see ``next()``).
            var piece: ByteBuffer?

            @_spi(OutpostInternal) public mutating func next() async throws -> ByteBuffer? {
                if handedOver {
                    let taken = loops.makeIterator().map { $0.submit {} }
                    for future in taken { try await future.get() }
                }
                handedOver = true
                guard let direct else {
                    guard let data = try await base.next() else { return nil }
                    return ByteBuffer(bytes: data)
                }
                // A file is read straight into one buffer. By now the loop has taken the previous
                // chunk and usually sent it, so the buffer is ours alone and is refilled in place;
                // if the connection still holds it, copy-on-write gives `clear()` new storage.
                if piece == nil { piece = ByteBufferAllocator().buffer(capacity: direct.chunkSize) }
                piece!.clear()
                let size = direct.chunkSize
                let count = try piece!.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { target in
                    try direct.read(UnsafeMutableRawBufferPointer(rebasing: target.prefix(size)))
                }
                return count > 0 ? piece : nil
            }
        }

        @_spi(OutpostInternal) public func makeAsyncIterator() -> AsyncIterator {
            AsyncIterator(base: base.makeAsyncIterator(), loops: loops, direct: base.direct)
        }
    }
#endif
