import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOPosix
import OutpostTestSupport
import Testing

@_spi(OutpostInternal) @testable import OutpostCore

/// What `ClientTransport.send` must keep while the AsyncHTTPClient transport collects responses with
/// a delegate of its own and reuses the targets it has built: the response body cap, announced or
/// not, and each request's own headers and body when many go to one URL. Both built-in transports.
// The time limit bounds a hang, not the speed: with every suite running at once on two cores, a
// test can wait over a minute for its turn.
@Suite("Transport exchanges", .closesWhatItOpens, .timeLimit(.minutes(3)))
struct TransportExchangeTests {
    typealias Kind = TransportFailureTests.Kind

    /// Runs `body` with a transport of `kind` and an ``EchoServer``, always stopping both.
    static func with(_ kind: Kind, _ body: (any ClientTransport, EchoServer) async throws -> Void) async throws {
        let server = try await EchoServer.start()
        let transport = kind.makeTransport()
        try await closing(transport, stop: server.stop) { try await body(transport, server) }
    }

    /// Runs `body`, then shuts `transport` down and runs `stop`, whether `body` threw or not.
    static func closing(
        _ transport: any ClientTransport, stop: () async -> Void, _ body: () async throws -> Void
    ) async throws {
        do {
            try await body()
        } catch {
            try? await transport.shutdown()
            await stop()
            throw error
        }
        try await transport.shutdown()
        await stop()
    }

    static func request(_ method: HTTPRequest.Method, _ server: EchoServer, _ path: String, probe: String? = nil)
        -> HTTPRequest
    {
        var request = HTTPRequest(method: method, scheme: "http", authority: "127.0.0.1:\(server.port)", path: path)
        if let probe { request.headerFields[HTTPField.Name("X-Probe")!] = probe }
        return request
    }

    @Test("a body over maxResponseBytes is responseTooLarge, with or without Content-Length", arguments: Kind.allCases)
    func bodyCap(_ kind: Kind) async throws {
        try await Self.with(kind) { transport, server in
            let options = TransportOptions(timeout: .seconds(10), maxResponseBytes: 10_000)
            for shape in ["sized", "chunked"] {
                let (response, data) = try await transport.send(
                    Self.request(.get, server, "/\(shape)/10000"), body: nil, options: options)
                #expect(response.status == .ok, "\(shape)")
                #expect(data == Data(repeating: UInt8(ascii: "x"), count: 10_000), "\(shape)")
                let error = try await #require(throws: OutpostError.self, "\(shape)") {
                    try await transport.send(Self.request(.get, server, "/\(shape)/10001"), body: nil, options: options)
                }
                #expect(error.code == .responseTooLarge, "\(shape): \(error)")
            }
        }
    }

    @Test("requests to one URL each send their own method, headers and body", arguments: Kind.allCases)
    func sameURL(_ kind: Kind) async throws {
        try await Self.with(kind) { transport, server in
            let sends: [(HTTPRequest.Method, String?, String?)] = [
                (.post, "one", "first body"), (.get, "two", nil), (.post, "three", "third body"), (.post, nil, ""),
                (.put, "five", "fifth body"), (.get, nil, nil),
            ]
            for (method, probe, body) in sends + sends {
                let (response, data) = try await transport.send(
                    Self.request(method, server, "/echo?a=1", probe: probe), body: body.map { Data($0.utf8) },
                    options: TransportOptions())
                #expect(response.status == .ok)
                #expect(response.headerFields[.contentType] == "text/plain")
                let expected = "\(method.rawValue) /echo?a=1 probe=\(probe ?? "-") body=\(body ?? "")"
                #expect(String(decoding: data, as: UTF8.self) == expected)
            }
        }
    }

    @Test("a redirect is followed to the response it leads to, twice over the same targets", arguments: Kind.allCases)
    func redirect(_ kind: Kind) async throws {
        try await Self.with(kind) { transport, server in
            for _ in 0..<2 {
                let (response, data) = try await transport.send(
                    Self.request(.get, server, "/moved"), body: nil, options: TransportOptions())
                #expect(response.status == .ok)
                #expect(String(decoding: data, as: UTF8.self).hasPrefix("GET /echo?from=moved "))
            }
        }
    }

    @Test("the AsyncHTTPClient transport keeps at most a bounded number of built targets")
    func targetsBounded() throws {
        let targets = AsyncHTTPClientTransport.PreparedTargets()
        for index in 0..<(3 * AsyncHTTPClientTransport.PreparedTargets.limit + 5) {
            let key = AsyncHTTPClientTransport.PreparedTargets.Key(
                method: .get, scheme: "http", authority: "example.test", path: "/records/\(index)")
            let request = try targets.request(
                for: key, method: .GET, headers: ["X-Index": "\(index)"], body: nil,
                url: { "http://example.test/records/\(index)" })
            #expect(request.url.absoluteString == "http://example.test/records/\(index)")
            #expect(request.headers["X-Index"] == ["\(index)"])
            #expect(targets.count <= AsyncHTTPClientTransport.PreparedTargets.limit)
        }
        #expect(targets.count > 0)
    }

    @Test("the default AsyncHTTPClient configuration has no tracer when none is bootstrapped")
    func noNoOpTracer() {
        #expect(AsyncHTTPClientTransport.defaultConfiguration.tracing.tracer == nil)
    }
}

/// An HTTP/1.1 server on 127.0.0.1, port 0: `GET /sized/N` answers N bytes with a Content-Length,
/// `GET /chunked/N` the same bytes chunked (no length announced), `GET /moved` redirects (302) to
/// `/echo?from=moved`, anything else echoes the method,
/// the target, the `X-Probe` header and the body as text.
final class EchoServer: Sendable {
    let port: Int
    private let channel: any Channel

    private init(port: Int, channel: any Channel) {
        self.port = port
        self.channel = channel
    }

    static func start() async throws -> EchoServer {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Handler())
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let port = channel.localAddress?.port else {
            try? await channel.close()
            throw ChannelError.unknownLocalAddress
        }
        return EchoServer(port: port, channel: channel)
    }

    func stop() async {
        try? await channel.close()
    }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        private var head: HTTPRequestHead?
        private var body = ByteBuffer()

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                self.head = head
                body.clear()
            case .body(var part):
                body.writeBuffer(&part)
            case .end:
                guard let head else { return }
                respond(to: head, context: context)
            }
        }

        private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
            let parts = head.uri.split(separator: "/")
            var headers = HTTPHeaders()
            var chunks: [ByteBuffer]
            if parts.count == 2, parts[0] == "sized" || parts[0] == "chunked", let length = Int(parts[1]) {
                let bytes = ByteBuffer(repeating: UInt8(ascii: "x"), count: length)
                if parts[0] == "sized" {
                    headers.add(name: "Content-Length", value: "\(length)")
                    chunks = [bytes]
                } else {
                    // No length: NIO's encoder sends the body chunked, a piece at a time.
                    chunks = stride(from: 0, to: length, by: 1_000).map {
                        bytes.getSlice(at: $0, length: min(1_000, length - $0))!
                    }
                }
            } else if head.uri == "/moved" {
                let moved = HTTPResponseHead(
                    version: .http1_1, status: .found, headers: ["Location": "/echo?from=moved", "Content-Length": "0"])
                context.write(wrapOutboundOut(.head(moved)), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                return
            } else {
                let probe = head.headers["X-Probe"].first ?? "-"
                let text = "\(head.method.rawValue) \(head.uri) probe=\(probe) body=\(String(buffer: body))"
                headers.add(name: "Content-Type", value: "text/plain")
                headers.add(name: "Content-Length", value: "\(text.utf8.count)")
                chunks = [ByteBuffer(string: text)]
            }
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
            for chunk in chunks { context.write(wrapOutboundOut(.body(.byteBuffer(chunk))), promise: nil) }
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }
}
