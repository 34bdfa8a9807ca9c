#if os(Linux) || os(Android) || os(Windows) || os(OpenBSD)  // Package.swift's `nonApple`: where AsyncHTTPClient is linked
    import Foundation
    import HTTPTypes
    import NIOCore
    import NIOHTTP1

    /// Where one exchange's response goes: collected whole (``NIOHTTPTransport/send(_:body:options:)``)
    /// or handed to a ``StreamedExchange`` chunk by chunk (``NIOHTTPTransport/stream(_:body:options:)``).
    ///
    /// A stream with a `head` promise hands the response head to its caller first and holds the
    /// body back until the caller says to go on (``NIOExchangeHandler/proceed(_:)``: the response is
    /// the one) or not (``NIOExchangeHandler/abandon(_:)``: a redirect to follow); a failure before the
    /// head fails that promise and leaves the exchange alone, for the caller to try again.
    enum NIOResponseSink {
        case collect(EventLoopPromise<NIOCollectedResponse>, maxBytes: Int, isHead: Bool)
        case stream(StreamedExchange, head: EventLoopPromise<HTTPResponseHead>?)
    }

    extension NIOResponseSink {
        /// What tells this exchange from the next one on the same connection.
        var token: ObjectIdentifier {
            switch self {
            case .collect(let promise, _, _): ObjectIdentifier(promise.futureResult)
            case .stream(let exchange, _): ObjectIdentifier(exchange)
            }
        }
    }

    /// A whole response: its head and body (`nil` when empty).
    struct NIOCollectedResponse: Sendable {
        var head: HTTPResponseHead
        var body: ByteBuffer?
    }

    /// The connection closed before the request was written: it was an idle pooled connection the
    /// server had closed, and the request may go on another one.
    struct NIOStaleConnection: Error, CustomStringConvertible {
        var description: String { "the connection closed before the request was sent, three times" }
    }

    /// A connection that had carried an exchange before closed (or was reset) before any of the
    /// response arrived: the server most likely closed it as idle just as the request went out
    /// (HTTP/1.1's keep-alive race, RFC 9112 section 9.3.1), so a request that is safe to repeat may go
    /// again on another connection.
    struct NIOUnansweredOnReusedConnection: Error, CustomStringConvertible {
        var underlying: any Error
        var description: String { "a reused connection closed before the response (\(underlying))" }
    }

    /// The last handler of a pooled HTTP/1.1 connection: runs one exchange at a time.
    ///
    /// It writes the request, delivers the response to the exchange's sink, and then tells the pool
    /// whether the connection can carry another request (both sides said keep-alive, the request
    /// was written to its end). It holds reads back while a streamed body's buffer is full
    /// (backpressure), and keeps one timer for both the exchange's deadline and the idle timeout.
    /// Everything runs on the connection's event loop.
    final class NIOExchangeHandler: ChannelDuplexHandler {
        typealias InboundIn = HTTPClientResponsePart
        typealias OutboundIn = HTTPClientRequestPart
        typealias OutboundOut = HTTPClientRequestPart

        private struct Current {
            var sink: NIOResponseSink
            var options: TransportOptions
            var deadline: NIODeadline?
            var head: HTTPResponseHead?
            var body: ByteBuffer?
            var requestKeepAlive: Bool
            var requestEnded = false
            /// Whether the connection carried an exchange before this one.
            var reused: Bool
            /// A gated stream's head went to its caller, which has not decided yet: what arrives
            /// meanwhile is held (see ``NIOResponseSink``).
            var deciding = false
            var held: [ByteBuffer] = []
            var heldEnd = false
            var heldFailure: (any Error)?
        }

        private let idleTimeout: TimeAmount
        private var context: ChannelHandlerContext?
        private var current: Current?
        /// Called when an exchange is over: `true` when the connection can carry another one.
        var onDone: ((Bool) -> Void)?
        /// Since when the connection waits idle in its pool (`nil` while in use or not yet pooled).
        private var idleSince: NIODeadline?
        private var timer: Scheduled<Void>?
        private var timerAt: NIODeadline?
        private var paused = false
        private var readPending = false
        /// Exchanges started on this connection.
        private var started = 0

        init(idleTimeout: TimeAmount) {
            self.idleTimeout = idleTimeout
        }

        func handlerAdded(context: ChannelHandlerContext) {
            self.context = context
        }

        /// The pool keeps the connection idle: the idle timeout runs from now.
        func markIdle() {
            guard current == nil, idleSince == nil else { return }
            idleSince = .now()
            arm(idleSince! + idleTimeout)
        }

        func handlerRemoved(context: ChannelHandlerContext) {
            timer?.cancel()
            timer = nil
            self.context = nil
        }

        // MARK: Starting and stopping (called on the event loop)

        /// Starts an exchange: writes `head` and, when `body` is not `nil`, the body and the end. A
        /// streamed request (`streamsBody`) writes its own body parts and end through the channel.
        ///
        /// Returns `false`, and leaves a streamed sink alone (a collecting one fails with
        /// ``NIOStaleConnection``), when the connection closed before anything was written.
        @discardableResult
        func start(
            head: HTTPRequestHead, body: ByteBuffer?, streamsBody: Bool, sink: NIOResponseSink, options: TransportOptions,
            deadline: NIODeadline?
        ) -> Bool {
            guard let context, context.channel.isActive, current == nil else {
                if case .collect(let promise, _, _) = sink { promise.fail(NIOStaleConnection()) }
                return false
            }
            if case .stream(let exchange, let gate) = sink, exchange.isOver {
                // Cancelled while it waited for this connection: nothing is sent, and the connection,
                // which its cancellation may not have reached, is closed.
                gate?.fail(CancellationError())
                context.close(promise: nil)
                return true
            }
            idleSince = nil
            current = Current(
                sink: sink, options: options, deadline: deadline, requestKeepAlive: head.isKeepAlive, reused: started > 0)
            started += 1
            if let deadline { arm(deadline) }
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            if !streamsBody {
                if let body, body.readableBytes > 0 { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
                current?.requestEnded = true
                context.write(wrapOutboundOut(.end(nil)), promise: nil)
            }
            context.flush()
            return true
        }

        /// Ends the exchange in flight with `error` (cancellation, shutdown) and closes the connection;
        /// with `only`, nothing happens unless the exchange in flight is that one.
        func abort(_ error: any Error, only token: ObjectIdentifier? = nil) {
            if let token, current?.sink.token != token { return }
            current?.deciding = false
            finish(.failure(error))
            context?.close(promise: nil)
        }

        /// Called once a paused stream's reader made room.
        func resumeReading() {
            guard paused else { return }
            paused = false
            if readPending, let context {
                readPending = false
                context.read()
            }
        }

        // MARK: Channel events

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            // A streamed request's body parts, written by its uploading task.
            let part = unwrapOutboundIn(data)
            if case .end = part { current?.requestEnded = true }
            context.write(data, promise: promise)
        }

        func read(context: ChannelHandlerContext) {
            if paused {
                readPending = true
            } else {
                context.read()
            }
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard current != nil else {
                // Bytes nobody asked for: the connection cannot be trusted with another request.
                context.close(promise: nil)
                return
            }
            switch unwrapInboundIn(data) {
            case .head(let head):
                current!.head = head
                switch current!.sink {
                case .collect(_, let maxBytes, let isHead):
                    if !isHead, let length = head.headers.first(name: "content-length").flatMap({ Int($0) }), length > maxBytes {
                        abort(OutpostError.responseTooLarge(current!.options, underlying: nil))
                    }
                case .stream(_, head: let gate?):
                    // Reads wait for the caller's decision.
                    current!.deciding = true
                    paused = true
                    gate.succeed(head)
                case .stream(let exchange, head: nil):
                    deliver(head, to: exchange)
                }
            case .body(var part):
                switch current!.sink {
                case .collect(_, let maxBytes, _):
                    guard (current!.body?.readableBytes ?? 0) + part.readableBytes <= maxBytes else {
                        abort(OutpostError.responseTooLarge(current!.options, underlying: nil))
                        return
                    }
                    if current!.body == nil {
                        current!.body = part
                    } else {
                        current!.body!.writeBuffer(&part)
                    }
                case .stream(let exchange, _):
                    if current!.deciding {
                        current!.held.append(part)
                    } else {
                        stream(part, to: exchange)
                    }
                }
            case .end:
                if current!.deciding {
                    current!.heldEnd = true
                } else {
                    ended()
                }
            }
        }

        /// The caller of a gated stream takes the response: the head, what arrived meanwhile, and
        /// the rest of the body go to its exchange.
        func proceed(_ token: ObjectIdentifier) {
            guard let waiting = current, waiting.sink.token == token, waiting.deciding,
                case .stream(let exchange, _) = waiting.sink, let head = waiting.head
            else { return }
            current!.deciding = false
            current!.held = []
            paused = false
            deliver(head, to: exchange)
            for part in waiting.held {
                guard current != nil else { return }
                stream(part, to: exchange)
            }
            if waiting.heldEnd {
                ended()
            } else if let failure = waiting.heldFailure {
                finish(.failure(failure))
                context?.close(promise: nil)
            } else if !paused, readPending, let context {
                readPending = false
                context.read()
            }
        }

        /// The caller of a gated stream does not take the response (it follows a redirect): the
        /// exchange is let go untouched and the connection closed.
        func abandon(_ token: ObjectIdentifier) {
            guard current?.sink.token == token, current?.deciding == true else { return }
            current = nil
            paused = false
            readPending = false
            onDone?(false)
            context?.close(promise: nil)
        }

        private func deliver(_ head: HTTPResponseHead, to exchange: StreamedExchange) {
            exchange.receive(
                head: NIOHTTP1Conversions.response(head), length: head.headers.first(name: "content-length").flatMap { Int64($0) }
            )
        }

        /// A piece of a streamed body to its reader; reads pause while the reader's buffer is full.
        private func stream(_ part: ByteBuffer, to exchange: StreamedExchange) {
            if exchange.isOver {
                // The reader is gone: stop reading what nobody will take.
                abort(OutpostError.transportCancelled(underlying: CancellationError()))
                return
            }
            if exchange.append(Data(part.readableBytesView)), !paused, let context {
                paused = true
                let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
                let loop = context.eventLoop
                exchange.whenDrained { loop.execute { handler.value.resumeReading() } }
            }
        }

        /// The response's end: the exchange is over, and the connection kept when both sides allow.
        private func ended() {
            guard let ending = current else { return }
            let reusable =
                ending.requestKeepAlive && ending.requestEnded && (ending.head?.isKeepAlive ?? false)
                && context?.channel.isActive == true
            finish(.success(()), reusable: reusable)
            if !reusable { context?.close(promise: nil) }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            finish(.failure(error))
            context.close(promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            finish(.failure(ChannelError.eof))
            timer?.cancel()
            timer = nil
            onDone = nil
            context.fireChannelInactive()
        }

        // MARK: Internals

        /// Ends the exchange in flight, if any: delivers the outcome to its sink, then tells the pool.
        private func finish(_ outcome: Result<Void, any Error>, reusable: Bool = false) {
            guard let ending = current else { return }
            if case .failure(let error) = outcome, ending.deciding {
                // The caller decides what happens to the response; it hears of the failure then.
                current!.heldFailure = ending.heldFailure ?? error
                return
            }
            current = nil
            paused = false
            if readPending, let context {
                readPending = false
                context.read()
            }
            if reusable {
                idleSince = .now()
                arm(idleSince! + idleTimeout)
            }
            // The pool hears first: a caller resumed by the sink finds the connection free again.
            onDone?(reusable)
            switch (outcome, ending.sink) {
            case (.success, .collect(let promise, _, _)):
                guard let head = ending.head else {
                    promise.fail(ChannelError.eof)
                    return
                }
                promise.succeed(NIOCollectedResponse(head: head, body: ending.body))
            case (.success, .stream(let exchange, _)):
                exchange.finish(nil)
            case (.failure(let error), .collect(let promise, _, _)):
                promise.fail(Self.unanswered(error, ending))
            case (.failure(let error), .stream(_, head: let gate?)) where ending.head == nil:
                gate.fail(Self.unanswered(error, ending))
            case (.failure(let error), .stream(let exchange, _)):
                exchange.finish(NIOHTTPTransport.classify(error, options: ending.options))
            }
        }

        /// `error`, marked ``NIOUnansweredOnReusedConnection`` when it is the connection's end
        /// before any of the response, on a connection that had served before.
        private static func unanswered(_ error: any Error, _ ending: Current) -> any Error {
            guard ending.reused, ending.head == nil, NIOHTTP1Conversions.isConnectionEnd(error) else { return error }
            return NIOUnansweredOnReusedConnection(underlying: error)
        }

        /// Makes sure the timer fires no later than `moment` (one timer serves the deadline and the idle timeout).
        private func arm(_ moment: NIODeadline) {
            guard let context else { return }
            if let timerAt, timerAt <= moment { return }
            timer?.cancel()
            timerAt = moment
            timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: moment) { self.timerFired() }
        }

        private func timerFired() {
            timer = nil
            timerAt = nil
            guard let context else { return }
            let now = NIODeadline.now()
            if let current {
                if let deadline = current.deadline {
                    if deadline <= now {
                        abort(OutpostError.transportTimeout(current.options, underlying: NIODeadlineExceeded()))
                    } else {
                        arm(deadline)
                    }
                }
            } else if let idleSince {
                if idleSince + idleTimeout <= now {
                    context.close(promise: nil)
                } else {
                    arm(idleSince + idleTimeout)
                }
            }
        }
    }
#endif
