import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// Profiling only: the least an HTTP/1.1 client on NIO can do for one keep-alive exchange (one
/// connection, one request at a time, no pool, no deadline, no cancellation). A floor for what a
/// transport of the SDK's own on NIO could reach (see docs/BENCHMARKS.md, "A transport on NIO").
final class LeanNIOClient: Sendable {
    private let channel: any Channel
    private let host: String

    private init(channel: any Channel, host: String) {
        self.channel = channel
        self.host = host
    }

    /// Connects to `host`:`port` on the shared event loop group.
    static func connect(host: String, port: Int) async throws -> LeanNIOClient {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(Exchange())
                }
            }
            .connect(host: host, port: port).get()
        return LeanNIOClient(channel: channel, host: host)
    }

    /// Sends `GET path` with `headers` and returns the status and the whole body.
    func get(_ path: String, headers: HTTPHeaders) async throws -> (HTTPResponseStatus, ByteBuffer) {
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: headers)
        head.headers.replaceOrAdd(name: "Host", value: host)
        let promise = channel.eventLoop.makePromise(of: (HTTPResponseHead, ByteBuffer).self)
        channel.writeAndFlush(Exchange.Outbound(head: head, promise: promise), promise: nil)
        let (responseHead, body) = try await promise.futureResult.get()
        return (responseHead.status, body)
    }

    func close() async {
        try? await channel.close()
    }

    /// Writes a request and completes its promise with the response head and collected body.
    private final class Exchange: ChannelDuplexHandler {
        struct Outbound {
            var head: HTTPRequestHead
            var promise: EventLoopPromise<(HTTPResponseHead, ByteBuffer)>
        }
        typealias InboundIn = HTTPClientResponsePart
        typealias OutboundIn = Outbound
        typealias OutboundOut = HTTPClientRequestPart

        private var pending: EventLoopPromise<(HTTPResponseHead, ByteBuffer)>?
        private var head: HTTPResponseHead?
        private var body: ByteBuffer?

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            let outbound = unwrapOutboundIn(data)
            pending = outbound.promise
            context.write(wrapOutboundOut(.head(outbound.head)), promise: nil)
            context.write(wrapOutboundOut(.end(nil)), promise: promise)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head): self.head = head
            case .body(var part):
                if body == nil { body = part } else { body!.writeBuffer(&part) }
            case .end:
                let done = (head!, body ?? ByteBuffer())
                head = nil
                body = nil
                pending.take()?.succeed(done)
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            pending.take()?.fail(error)
            context.close(promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            pending.take()?.fail(ChannelError.eof)
        }
    }
}
