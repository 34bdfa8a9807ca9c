import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// A raw TCP server on 127.0.0.1, port 0, that reads a request and then answers it wrongly on
/// purpose, for the transport failures the client must report well.
final class MisbehavingServer: Sendable {
    enum Behavior: Sendable {
        /// Sends the response head (promising a body) and then nothing.
        case stallAfterHead
        /// Sends the head, then the body one byte per `interval`.
        case trickle(interval: TimeAmount)
        /// Resets the connection (RST) once the request has arrived.
        case reset
        /// Answers with something that is not HTTP.
        case notHTTP
        /// Never answers.
        case silent
        /// Sends a body without a length that never ends, as fast as the client reads it.
        case endless
        /// Answers every request on a connection with `{}` and `Cache-Control: max-age=600`.
        case cacheable
    }

    let port: Int
    /// Yields once per request that has fully arrived, so tests wait for it without sleeping.
    let requests: AsyncStream<Void>
    /// How many requests have arrived.
    var arrivals: Int { counter.count.withLock { $0 } }
    private let counter: ArrivalCounter
    private let channel: any Channel

    final class ArrivalCounter: Sendable {
        let count = Mutex(0)
    }

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    private init(port: Int, channel: any Channel, requests: AsyncStream<Void>, counter: ArrivalCounter) {
        self.counter = counter
        self.port = port
        self.channel = channel
        self.requests = requests
    }

    static func start(_ behavior: Behavior) async throws -> MisbehavingServer {
        let (requests, arrived) = AsyncStream<Void>.makeStream()
        let counter = ArrivalCounter()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        Handler(behavior: behavior, arrived: arrived, counter: counter))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let port = channel.localAddress?.port else {
            try? await channel.close()
            throw ChannelError.unknownLocalAddress
        }
        return MisbehavingServer(port: port, channel: channel, requests: requests, counter: counter)
    }

    func stop() async {
        try? await channel.close()
    }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        let behavior: Behavior
        let arrived: AsyncStream<Void>.Continuation
        let counter: ArrivalCounter
        private var received = ""
        private var answered = false
        private var active = true

        init(behavior: Behavior, arrived: AsyncStream<Void>.Continuation, counter: ArrivalCounter) {
            self.counter = counter
            self.behavior = behavior
            self.arrived = arrived
        }

        func channelInactive(context: ChannelHandlerContext) {
            active = false
            context.fireChannelInactive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var buffer = unwrapInboundIn(data)
            received += buffer.readString(length: buffer.readableBytes) ?? ""
            guard !answered, received.contains("\r\n\r\n") else { return }
            answered = true
            counter.count.withLock { $0 += 1 }
            arrived.yield()
            switch behavior {
            case .stallAfterHead:
                write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", context: context)
            case .trickle(let interval):
                write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n", context: context)
                trickle(interval: interval, remaining: 100_000, context: context)
            case .reset:
                // SO_LINGER with a zero timeout: closing sends RST instead of FIN.
                guard let socket = context.channel as? any SocketOptionProvider else {
                    context.close(promise: nil)
                    return
                }
                let channel = context.channel
                socket.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
            case .notHTTP:
                write("SSH-2.0-OpenSSH_9.6\r\nProtocol mismatch.\r\n\r\n", context: context)
            case .silent:
                break
            case .endless:
                write("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n", context: context)
                pour(context: context)
            case .cacheable:
                write(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nCache-Control: max-age=600\r\nContent-Length: 2\r\n\r\n{}",
                    context: context)
                received = ""
                answered = false
            }
        }

        /// Writes 64 KiB, then again once that write is done, until the connection closes.
        private func pour(context: ChannelHandlerContext) {
            guard active else { return }
            let chunk = context.channel.allocator.buffer(repeating: UInt8(ascii: "a"), count: 64 * 1024)
            let loop = context.eventLoop.assumeIsolated()
            context.writeAndFlush(wrapOutboundOut(chunk)).hop(to: context.eventLoop).assumeIsolated().whenSuccess {
                loop.execute { self.pour(context: context) }
            }
        }

        private func write(_ text: String, context: ChannelHandlerContext) {
            context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: text)), promise: nil)
        }

        private func trickle(interval: TimeAmount, remaining: Int, context: ChannelHandlerContext) {
            guard active, remaining > 0 else { return }
            write("a", context: context)
            context.eventLoop.assumeIsolated().scheduleTask(in: interval) {
                self.trickle(interval: interval, remaining: remaining - 1, context: context)
            }
        }
    }
}
