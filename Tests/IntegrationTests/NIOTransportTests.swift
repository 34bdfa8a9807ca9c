import Crypto
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import OutpostTestSupport
import SwiftASN1
import Synchronization
import Testing
import X509

@testable import OutpostCore

/// `NIOHTTPTransport`'s own behaviour, beyond what every transport shares (`TransportFailureTests`,
/// `TransportExchangeTests`, `StreamingTransportTests` run it too): its connection pool and https.
@Suite("NIO transport", .closesWhatItOpens, .timeLimit(.minutes(1)))
struct NIOTransportTests {
    static func get(_ server: CountingServer, _ path: String, scheme: String = "http") -> HTTPRequest {
        HTTPRequest(method: .get, scheme: scheme, authority: "127.0.0.1:\(server.port)", path: path)
    }

    /// Runs `body` with `transport` and a server, always stopping both.
    static func with(
        _ transport: NIOHTTPTransport, tls: NIOSSLContext? = nil, _ body: (NIOHTTPTransport, CountingServer) async throws -> Void
    ) async throws {
        let server = try await CountingServer.start(tls: tls)
        try await TransportExchangeTests.closing(transport, stop: server.stop) { try await body(transport, server) }
    }

    /// Runs `body` with another plain-http server (a second origin), always stopping it.
    static func withOtherOrigin(_ body: (CountingServer) async throws -> Void) async throws {
        let other = try await CountingServer.start(tls: nil)
        try await withCleanup({ try await body(other) }, cleanup: other.stop)
    }

    @Test("sequential requests to one origin reuse one keep-alive connection")
    func reuse() async throws {
        try await Self.with(NIOHTTPTransport()) { transport, server in
            for index in 0..<20 {
                let (response, data) = try await transport.send(
                    Self.get(server, "/hello/\(index)"), body: nil, options: TransportOptions())
                #expect(response.status == .ok)
                #expect(String(decoding: data, as: UTF8.self) == "GET /hello/\(index)")
            }
            #expect(server.accepted == 1)
            #expect(transport.openConnections(scheme: "http", authority: "127.0.0.1:\(server.port)") == 1)
        }
    }

    @Test("a response with Connection: close is not reused: each request opens a connection")
    func connectionClose() async throws {
        try await Self.with(NIOHTTPTransport()) { transport, server in
            for _ in 0..<3 {
                let (response, data) = try await transport.send(
                    Self.get(server, "/close"), body: nil, options: TransportOptions())
                #expect(response.status == .ok)
                #expect(String(decoding: data, as: UTF8.self) == "GET /close")
            }
            #expect(server.accepted == 3)
            // Requests after them go on a fresh connection again, which stays open.
            _ = try await transport.send(Self.get(server, "/after"), body: nil, options: TransportOptions())
            _ = try await transport.send(Self.get(server, "/after"), body: nil, options: TransportOptions())
            #expect(server.accepted == 4)
        }
    }

    @Test("concurrent requests stay within the per-origin connection limit and all complete")
    func bounded() async throws {
        let transport = NIOHTTPTransport(configuration: .init(maxConnectionsPerOrigin: 2))
        try await Self.with(transport) { transport, server in
            try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<24 {
                    group.addTask {
                        let (response, data) = try await transport.send(
                            Self.get(server, "/slow/\(index)"), body: nil, options: TransportOptions())
                        #expect(String(decoding: data, as: UTF8.self) == "GET /slow/\(index)")
                        return response.status.code
                    }
                }
                var codes: [Int] = []
                for try await code in group { codes.append(code) }
                #expect(codes.count == 24 && codes.allSatisfy { $0 == 200 })
            }
            #expect(server.accepted <= 2)
            #expect(server.accepted >= 1)
        }
    }

    @Test("https with a certificate the configuration trusts: the exchange works and the connection is reused")
    func httpsTrusted() async throws {
        let identity = try SelfSigned()
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([identity.certificate])
        try await Self.with(NIOHTTPTransport(configuration: .init(tls: tls)), tls: identity.serverContext()) {
            transport, server in
            for _ in 0..<3 {
                let (response, data) = try await transport.send(
                    Self.get(server, "/secure", scheme: "https"), body: nil, options: TransportOptions())
                #expect(response.status == .ok)
                #expect(String(decoding: data, as: UTF8.self) == "GET /secure")
            }
            #expect(server.accepted == 1)
        }
    }

    @Test("https with a certificate nobody trusts is refused with a clear error, never sent in plain text")
    func httpsUntrusted() async throws {
        let identity = try SelfSigned()
        try await Self.with(NIOHTTPTransport(), tls: identity.serverContext()) { transport, server in
            let error = try await #require(throws: OutpostError.self) {
                try await transport.send(Self.get(server, "/secure", scheme: "https"), body: nil, options: TransportOptions())
            }
            #expect(error.code == .cannotConnect, "\(error)")
            #expect(error.message.contains("TLS"), "\(error)")
            #expect(error.suggestion?.contains("certificate") == true)
            #expect(server.requests == 0)
        }
    }

    @Test("an https URL pointed at a plain-http server fails: the request never goes out in plain text")
    func httpsToPlain() async throws {
        try await Self.with(NIOHTTPTransport()) { transport, server in
            let error = try await #require(throws: OutpostError.self) {
                try await transport.send(Self.get(server, "/plain", scheme: "https"), body: nil, options: TransportOptions())
            }
            #expect([.cannotConnect, .connectionLost, .malformedResponse].contains(error.code), "\(error)")
            #expect(server.requests == 0)
        }
    }

    @Test("cancelling the calling task ends the request at once and closes its connection")
    func cancelCloses() async throws {
        try await Self.with(NIOHTTPTransport()) { transport, server in
            var events = server.events.makeAsyncIterator()
            let request = Task {
                try await transport.send(Self.get(server, "/never"), body: nil, options: TransportOptions(timeout: .seconds(60)))
            }
            #expect(await events.next() == .arrived("/never"))
            request.cancel()
            let error = await #expect(throws: OutpostError.self) { try await request.value }
            #expect(error?.code == .cancelled, "\(String(describing: error))")
            #expect(await events.next() == .closed)
            // The next request gets a new connection.
            let (response, _) = try await transport.send(Self.get(server, "/after"), body: nil, options: TransportOptions())
            #expect(response.status == .ok)
            #expect(server.accepted == 2)
        }
    }

    @Test("a streamed body dropped after its first chunk closes the connection; the next stream works")
    func droppedStream() async throws {
        try await Self.with(NIOHTTPTransport()) { transport, server in
            var events = server.events.makeAsyncIterator()
            do {
                let (head, body) = try await transport.stream(
                    Self.get(server, "/big/\(16 << 20)"), body: nil, options: TransportOptions(timeout: .seconds(30)))
                #expect(head.status == .ok)
                let iterator = body.makeAsyncIterator()
                let first = try await iterator.next()
                #expect((first?.count ?? 0) > 0)
            }
            #expect(await events.next() == .arrived("/big/\(16 << 20)"))
            // The body stream is gone: the transport closes the connection it was read from.
            #expect(await events.next() == .closed)
            let (head, body) = try await transport.stream(
                Self.get(server, "/big/100000"), body: nil, options: TransportOptions(timeout: .seconds(30)))
            #expect(head.status == .ok)
            var received = 0
            for try await chunk in body { received += chunk.count }
            #expect(received == 100_000)
        }
    }

    @Test("an idle connection is closed after the idle timeout; the next request opens another")
    func idleTimeout() async throws {
        try await Self.with(NIOHTTPTransport(configuration: .init(idleTimeout: .milliseconds(200)))) { transport, server in
            var events = server.events.makeAsyncIterator()
            _ = try await transport.send(Self.get(server, "/first"), body: nil, options: TransportOptions())
            #expect(await events.next() == .arrived("/first"))
            // The client closes the idle connection: the server sees it go.
            #expect(await events.next() == .closed)
            _ = try await transport.send(Self.get(server, "/second"), body: nil, options: TransportOptions())
            #expect(server.accepted == 2)
        }
    }

    @Test("a redirect to another origin drops Authorization; one within the origin keeps it")
    func redirectCredentials() async throws {
        try await Self.withOtherOrigin { other in
            try await Self.with(NIOHTTPTransport()) { transport, server in
                func follow(_ target: String) async throws -> String {
                    let encoded = target.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
                    var request = Self.get(server, "/to/\(encoded)")
                    request.headerFields[.authorization] = "Bearer secret"
                    let (response, data) = try await transport.send(request, body: nil, options: TransportOptions())
                    #expect(response.status == .ok)
                    return String(decoding: data, as: UTF8.self)
                }
                let same = try await follow("/auth/same")
                #expect(same == "GET /auth/same auth=Bearer secret")
                let elsewhere = try await follow("http://127.0.0.1:\(other.port)/auth/other")
                #expect(elsewhere == "GET /auth/other auth=-")
            }
        }
    }

    @Test("a redirect from https to http is not followed: the 3xx comes back as it is")
    func noDowngradeRedirect() async throws {
        let identity = try SelfSigned()
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([identity.certificate])
        try await Self.withOtherOrigin { plain in
            try await Self.with(NIOHTTPTransport(configuration: .init(tls: tls)), tls: identity.serverContext()) {
                transport, server in
                let target = "http://127.0.0.1:\(plain.port)/auth/plain".addingPercentEncoding(
                    withAllowedCharacters: .alphanumerics)!
                let (response, _) = try await transport.send(
                    Self.get(server, "/to/\(target)", scheme: "https"), body: nil, options: TransportOptions())
                #expect(response.status.code == 302)
                #expect(plain.requests == 0)
            }
        }
    }

    @Test("authorities are split into host and port, with defaults and IPv6 brackets; bad ones are refused")
    func authorities() {
        #expect(NIOHTTPTransport.hostAndPort("example.com", defaultPort: 443)! == ("example.com", 443))
        #expect(NIOHTTPTransport.hostAndPort("example.com:8080", defaultPort: 80)! == ("example.com", 8080))
        #expect(NIOHTTPTransport.hostAndPort("user@example.com:81", defaultPort: 80)! == ("example.com", 81))
        #expect(NIOHTTPTransport.hostAndPort("[::1]:9000", defaultPort: 80)! == ("::1", 9000))
        #expect(NIOHTTPTransport.hostAndPort("[::1]", defaultPort: 80)! == ("::1", 80))
        #expect(NIOHTTPTransport.hostAndPort("example.com:0", defaultPort: 80) == nil)
        #expect(NIOHTTPTransport.hostAndPort("example.com:99999", defaultPort: 80) == nil)
        #expect(NIOHTTPTransport.hostAndPort("[::1", defaultPort: 80) == nil)
        #expect(NIOHTTPTransport.hostAndPort(":80", defaultPort: 80) == nil)
    }
}

/// A self-signed certificate for 127.0.0.1, made for one test.
struct SelfSigned {
    let key = P256.Signing.PrivateKey()
    let certificate: NIOSSLCertificate

    init() throws {
        let name = try DistinguishedName { CommonName("127.0.0.1") }
        let now = Date()
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 3600, issuer: name, subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                SubjectAlternativeNames([.ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))])
            },
            issuerPrivateKey: .init(key))
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        self.certificate = try NIOSSLCertificate(bytes: serializer.serializedBytes, format: .der)
    }

    func serverContext() throws -> NIOSSLContext {
        let privateKey = try NIOSSLPrivateKey(bytes: Array(key.pemRepresentation.utf8), format: .pem)
        let configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(certificate)], privateKey: .privateKey(privateKey))
        return try NIOSSLContext(configuration: configuration)
    }
}

/// An HTTP/1.1 server on 127.0.0.1, port 0, optionally over TLS, that counts the connections it
/// accepts and the requests it receives, and reports each request's arrival and each connection's
/// close (``events``). It answers `METHOD PATH`, plus ` auth=…` (the `Authorization` field) for paths
/// under `/auth`; `/close` with `Connection: close` (and closes); `/slow/…` after 20 ms; `/never`
/// never; `/to/URL` with a 302 to the percent-encoded `URL`; `/drop-reused/…`, on a connection that
/// already answered a request, not at all: the connection is closed unanswered, as a server closes an
/// idle keep-alive connection just as the client reuses it.
final class CountingServer: Sendable {
    let port: Int
    private let channel: any Channel
    private let counts: Counts

    final class Counts: Sendable {
        let accepted = Atomic<Int>(0)
        let requests = Atomic<Int>(0)
        let (events, sink) = AsyncStream.makeStream(of: Event.self)
    }

    enum Event: Equatable, Sendable {
        case arrived(String)
        case closed
    }

    /// Request arrivals and connection closes, in order.
    var events: AsyncStream<Event> { counts.events }

    var accepted: Int { counts.accepted.load(ordering: .sequentiallyConsistent) }
    var requests: Int { counts.requests.load(ordering: .sequentiallyConsistent) }

    private init(port: Int, channel: any Channel, counts: Counts) {
        self.port = port
        self.channel = channel
        self.counts = counts
    }

    static func start(tls: NIOSSLContext?) async throws -> CountingServer {
        let counts = Counts()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                counts.accepted.add(1, ordering: .sequentiallyConsistent)
                return channel.eventLoop.makeCompletedFuture {
                    if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Responder(counts: counts))
                    channel.closeFuture.whenComplete { _ in counts.sink.yield(.closed) }
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let port = channel.localAddress?.port else {
            try? await channel.close()
            throw ChannelError.unknownLocalAddress
        }
        return CountingServer(port: port, channel: channel, counts: counts)
    }

    func stop() async {
        try? await channel.close()
        counts.sink.finish()
    }

    private final class Responder: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let counts: Counts
        private var head: HTTPRequestHead?
        /// Requests answered on this connection.
        private var answered = 0
        init(counts: Counts) { self.counts = counts }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head): self.head = head
            case .body: break
            case .end:
                guard let head else { return }
                counts.requests.add(1, ordering: .sequentiallyConsistent)
                counts.sink.yield(.arrived(head.uri))
                if head.uri == "/never" { return }
                if head.uri.hasPrefix("/drop-reused/"), answered > 0 {
                    context.close(promise: nil)
                    return
                }
                answered += 1
                var text = "\(head.method.rawValue) \(head.uri)"
                if head.uri.hasPrefix("/auth") { text += " auth=\(head.headers["Authorization"].first ?? "-")" }
                var headers: HTTPHeaders = ["Content-Length": "\(text.utf8.count)", "Content-Type": "text/plain"]
                var status = HTTPResponseStatus.ok
                if head.uri.hasPrefix("/big/"), let size = Int(head.uri.dropFirst(5)) {
                    // `size` bytes in 64 KiB pieces, written at once: the client's reading paces them.
                    context.write(
                        wrapOutboundOut(
                            .head(HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Content-Length": "\(size)"]))),
                        promise: nil)
                    for offset in stride(from: 0, to: size, by: 65_536) {
                        let piece = ByteBuffer(repeating: UInt8(ascii: "b"), count: min(65_536, size - offset))
                        context.write(wrapOutboundOut(.body(.byteBuffer(piece))), promise: nil)
                    }
                    context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                    return
                }
                if head.uri.hasPrefix("/to/") {
                    status = .found
                    headers.add(name: "Location", value: String(head.uri.dropFirst(4)).removingPercentEncoding ?? "/")
                }
                let closes = head.uri == "/close"
                if closes { headers.add(name: "Connection", value: "close") }
                let respond = {
                    context.write(
                        self.wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))),
                        promise: nil)
                    context.write(self.wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: text)))), promise: nil)
                    let done = context.writeAndFlush(self.wrapOutboundOut(.end(nil)))
                    if closes { done.assumeIsolated().whenComplete { _ in context.close(promise: nil) } }
                }
                if head.uri.hasPrefix("/slow/") {
                    context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(20)) { respond() }
                } else {
                    respond()
                }
            }
        }
    }
}
