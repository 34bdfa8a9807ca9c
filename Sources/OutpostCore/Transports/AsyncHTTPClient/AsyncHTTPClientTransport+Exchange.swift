#if os(Linux) || os(Android) || os(Windows) || os(OpenBSD)
    import AsyncHTTPClient
    import HTTPTypes
    import NIOCore
    import NIOHTTP1
    import Synchronization

    extension AsyncHTTPClientTransport {
        /// Collects one response, head and whole body, for ``AsyncHTTPClientTransport/send(_:body:options:)``:
        /// AsyncHTTPClient's `ResponseAccumulator` without what the transport does not use (a lock
        /// around every step, the redirect history, a copy of the request's host).
        ///
        /// AsyncHTTPClient calls a delegate's methods one at a time on the request's event loop, each
        /// after the future returned by the previous one (`HTTPClientResponseDelegate`'s documented
        /// contract), so the two stored properties need no lock; `didReceiveError` may also be called
        /// on the caller's thread when the request cannot start, and touches nothing.
        final class ResponseCollector: HTTPClientResponseDelegate, @unchecked Sendable {
            typealias Response = Collected

            /// The final response: status and fields, and the body (`nil` when there was none).
            struct Collected: Sendable {
                var head: HTTPResponseHead
                var body: ByteBuffer?
            }

            /// The body is larger than the limit (see `TransportOptions.maxResponseBytes`).
            struct TooLarge: Error {}

            private let maxBodySize: Int
            private let isHead: Bool
            private var head: HTTPResponseHead?
            private var body: ByteBuffer?

            init(maxBodySize: Int, isHead: Bool) {
                self.maxBodySize = maxBodySize
                self.isHead = isHead
            }

            func didReceiveHead(task: HTTPClient.Task<Collected>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
                task.eventLoop.assertInEventLoop()
                // A body announced larger than the limit fails before a byte of it is read.
                if !isHead, let length = head.headers.first(name: "Content-Length"), let announced = Int(length),
                    announced > maxBodySize
                {
                    return task.eventLoop.makeFailedFuture(TooLarge())
                }
                self.head = head
                return task.eventLoop.makeSucceededVoidFuture()
            }

            func didReceiveBodyPart(task: HTTPClient.Task<Collected>, _ part: ByteBuffer) -> EventLoopFuture<Void> {
                task.eventLoop.assertInEventLoop()
                guard (body?.readableBytes ?? 0) + part.readableBytes <= maxBodySize else {
                    return task.eventLoop.makeFailedFuture(TooLarge())
                }
                if body == nil {
                    body = part
                } else {
                    var part = part
                    body!.writeBuffer(&part)
                }
                return task.eventLoop.makeSucceededVoidFuture()
            }

            func didReceiveError(task: HTTPClient.Task<Collected>, _ error: any Error) {}

            func didFinishRequest(task: HTTPClient.Task<Collected>) throws -> Collected {
                task.eventLoop.assertInEventLoop()
                guard let head else { throw HTTPClientError.remoteConnectionClosed }
                return Collected(head: head, body: body)
            }
        }

        /// A task executor that runs jobs on one event loop: a job enqueued from the loop itself (a
        /// continuation resumed by a future the loop completed) runs in the same tick, with no wake-up.
        final class EventLoopExecutor: TaskExecutor {
            private let eventLoop: any EventLoop

            init(_ eventLoop: any EventLoop) {
                self.eventLoop = eventLoop
            }

            func enqueue(_ job: consuming ExecutorJob) {
                let job = UnownedJob(job)
                eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
            }
        }

        /// `HTTPClient.Request`s already built for a method and URL, without headers or body.
        ///
        /// Building one parses its URL twice (`URL(string:)`, then AsyncHTTPClient takes the `URL`
        /// apart through Foundation's accessors): about 14,000 instructions, a tenth of the client's
        /// own work per request. Clients call the same few endpoints over and over, so the transport
        /// keeps the last requests' targets and copies one with the new headers and body. Bounded:
        /// at ``limit`` entries the table is emptied and refills with what is in use.
        final class PreparedTargets: Sendable {
            struct Key: Hashable, Sendable {
                var method: HTTPRequest.Method
                var scheme: String
                var authority: String
                var path: String
            }

            static let limit = 64
            private let table = Mutex([Key: HTTPClient.Request]())

            /// A request for `key` with `headers` and `body`; `url` builds the URL string on a miss.
            func request(
                for key: Key, method: HTTPMethod, headers: HTTPHeaders, body: HTTPClient.Body?, url: () -> String
            ) throws -> HTTPClient.Request {
                var request: HTTPClient.Request
                if let known = table.withLock({ $0[key] }) {
                    request = known
                } else {
                    request = try HTTPClient.Request(url: url(), method: method)
                    table.withLock { table in
                        if table.count >= Self.limit { table.removeAll(keepingCapacity: true) }
                        table[key] = request
                    }
                }
                request.headers = headers
                request.body = body
                return request
            }

            /// How many targets are kept (for tests).
            var count: Int { table.withLock { $0.count } }
        }
    }
#endif
