import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore

/// A request whose head or body did not arrive in time (``ServerConfiguration/headerReadTimeout``,
/// ``ServerConfiguration/bodyReadTimeout``).
struct RequestReadTimeout: Error, Sendable {
    enum Part: String, Sendable {
        case head, body
    }
    let part: Part
    let limit: TimeAmount

    var serverError: ServerError {
        let seconds = Double(limit.nanoseconds) / 1_000_000_000
        return ServerError(
            .requestTimeout, code: "request_timeout",
            message:
                "The request \(part == .head ? "head" : "body") did not arrive within \(seconds) s; send the whole request promptly, with a Content-Length that matches its body",
            headers: [.connection: "close"])
    }
}

/// Bounds how long a request takes to arrive, at the byte level, ahead of the HTTP decoder:
///
/// - from a request's first byte to the end of its head (`CRLF CRLF`): past the limit the server
///   writes 408 itself and closes the connection, as no request exists yet to answer;
/// - from the end of the head to the start of the response: past the limit an error goes up the
///   pipeline, so a route still reading the body answers 408 and the connection closes afterwards.
///
/// Idle connections (no byte of a new request yet) are left to Hummingbird's idle timeout.
final class RequestReadTimer: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    enum Phase {
        /// Between requests: nothing of the next one has arrived.
        case waitingForHead
        /// The head is arriving; `matched` counts the bytes of the final `CRLF CRLF` seen so far.
        case readingHead(matched: Int)
        /// The head is in; the body, if any, is arriving or the route is working.
        case afterHead
    }

    let headerTimeout: TimeAmount
    let bodyTimeout: TimeAmount
    var phase = Phase.waitingForHead
    /// When the part being waited for (``Phase/readingHead(matched:)`` or ``Phase/afterHead``)
    /// times out; `nil` between requests.
    var deadline: NIODeadline?
    /// The one timer of the connection, and when it fires: never later than ``deadline``. A
    /// request moves the deadline on without touching the timer (scheduling and cancelling a task
    /// per request cost about a microsecond each); a timer that fires before the deadline is armed
    /// again for it, so it fires about once per timeout on a busy connection.
    var timer: Scheduled<Void>?
    var timerFires = NIODeadline.distantFuture
    /// How many bytes of ``streamedPrefix`` the current request line matches so far; -1 once it
    /// differs.
    var prefixMatched = 0
    /// A file upload (`PUT /files/…`) may take as long as it needs: its body timeout is the longest
    /// silence between two reads rather than a deadline for the whole body.
    var streamingBody = false
    static let streamedPrefix: [UInt8] = Array("PUT /files/".utf8)

    init(headerTimeout: TimeAmount, bodyTimeout: TimeAmount) {
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        switch phase {
        case .afterHead:
            if streamingBody { wait(bodyTimeout, context: context) }
        case .waitingForHead, .readingHead:
            buffer.withUnsafeReadableBytes { scan($0, context: context) }
        }
        context.fireChannelRead(data)
    }

    func scan(_ bytes: UnsafeRawBufferPointer, context: ChannelHandlerContext) {
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch phase {
            case .afterHead:
                return
            case .waitingForHead:
                // Empty lines before a request line are allowed (RFC 9112 §2.2) but start no request.
                if byte == 0x0D || byte == 0x0A { continue }
                phase = .readingHead(matched: 0)
                prefixMatched = 0
                matchPrefix(byte)
                wait(headerTimeout, context: context)
            case .readingHead(let matched):
                matchPrefix(byte)
                let expected: UInt8 = matched % 2 == 0 ? 0x0D : 0x0A
                let next = byte == expected ? matched + 1 : (byte == 0x0D ? 1 : 0)
                if next == 4 {
                    phase = .afterHead
                    streamingBody = prefixMatched == Self.streamedPrefix.count
                    wait(bodyTimeout, context: context)
                    return
                }
                phase = .readingHead(matched: next)
            }
        }
    }

    func matchPrefix(_ byte: UInt8) {
        guard prefixMatched >= 0, prefixMatched < Self.streamedPrefix.count else { return }
        prefixMatched = byte == Self.streamedPrefix[prefixMatched] ? prefixMatched + 1 : -1
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .afterHead = phase {
            // A response is going out: the request is no longer waited for.
            deadline = nil
            phase = .waitingForHead
        }
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelTimer()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelTimer()
    }

    /// Waits `limit` from now for the current part; the timer is moved only when it would fire
    /// after the new deadline.
    func wait(_ limit: TimeAmount, context: ChannelHandlerContext) {
        let due = NIODeadline.now() + limit
        deadline = due
        if timer != nil, timerFires <= due { return }
        arm(at: due, context: context)
    }

    func arm(at due: NIODeadline, context: ChannelHandlerContext) {
        timer?.cancel()
        timerFires = due
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: due) { [self] in
            self.timer = nil
            self.timerFired(context)
        }
    }

    func timerFired(_ context: ChannelHandlerContext) {
        guard let deadline else { return }
        guard deadline <= NIODeadline.now() else { return arm(at: deadline, context: context) }
        self.deadline = nil
        switch phase {
        case .readingHead: headTimedOut(context)
        case .afterHead: bodyTimedOut(context)
        case .waitingForHead: break
        }
    }

    func cancelTimer() {
        timer?.cancel()
        timer = nil
    }

    func headTimedOut(_ context: ChannelHandlerContext) {
        let error = RequestReadTimeout(part: .head, limit: headerTimeout).serverError
        let body = error.envelope.jsonString()
        var text = "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\n"
        text += "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
        let buffer = context.channel.allocator.buffer(string: text)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.byteBuffer(buffer))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }

    func bodyTimedOut(_ context: ChannelHandlerContext) {
        context.fireErrorCaught(RequestReadTimeout(part: .body, limit: bodyTimeout))
    }
}

/// Hummingbird's HTTP/1.1 channel with a ``RequestReadTimer`` in front of its decoder, handled on
/// the connection's event loop when the storage answers there.
/// The first handler of a connection ``ConnectionGate`` refused: it writes
/// ``ConnectionGate/refusal`` once the connection is active, then closes its side (so the client
/// reads the answer whole rather than a reset while its request is still arriving), drops every
/// byte that arrives, and closes the connection when the client does, or after a second.
final class RefusedConnection: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    private var answered = false

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { answer(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        answer(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    private func answer(_ context: ChannelHandlerContext) {
        guard !answered else { return }
        answered = true
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(ConnectionGate.refusal)).whenComplete { _ in
            loopBound.value.close(mode: .output, promise: nil)
        }
        context.eventLoop.scheduleTask(in: .seconds(1)) { loopBound.value.close(promise: nil) }
    }
}

struct TimedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value
    let inner: HTTP1Channel
    let headerTimeout: TimeAmount
    let bodyTimeout: TimeAmount
    /// Whether connections are handled on their event loop: with PostgreSQL, whose pools are per
    /// loop, a query then goes out and comes back on the request's own thread. SQLite runs its
    /// queries on its connections' threads (key reads in place, on the caller's thread): on the
    /// loop, a list page's hop to a reader and back cost more than it saved (the bench's list page
    /// fell from 0.45 to 0.34 of a bare route, a token GET from 0.51 to 0.41), so it stays on
    /// Swift's cooperative pool.
    let onEventLoop: Bool
    /// The bound on connections held at once; one past it is refused before it is read.
    var gate: ConnectionGate? = nil

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let headerTimeout = self.headerTimeout
        let bodyTimeout = self.bodyTimeout
        let inner = self.inner
        let refused = gate.map { !$0.admit(channel) } ?? false
        return channel.eventLoop.makeCompletedFuture {
            // Past the limit, the first handler answers 503, closes, and lets no byte through.
            if refused { try channel.pipeline.syncOperations.addHandler(RefusedConnection(), position: .first) }
            try channel.pipeline.syncOperations.addHandler(
                RequestReadTimer(headerTimeout: headerTimeout, bodyTimeout: bodyTimeout))
        }.flatMap {
            inner.setup(channel: channel, logger: logger)
        }
    }

    /// Handles the connection, on its own event loop (``EventLoopTaskExecutor``) when
    /// ``onEventLoop``: reading a request, running its route and writing its response then cross
    /// no thread.
    func handle(value: Value, logger: Logger) async {
        guard onEventLoop else { return await inner.handle(value: value, logger: logger) }
        await EventLoopTaskExecutor.run(on: value.channel.eventLoop) {
            await inner.handle(value: value, logger: logger)
        }
    }
}
