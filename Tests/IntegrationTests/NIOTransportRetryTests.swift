import Foundation
import HTTPTypes
import OutpostTestSupport
import Testing

@testable import OutpostCore

/// `NIOHTTPTransport` and a keep-alive connection that the server closes just as the client reuses
/// it (the idle-timeout race): requests that are safe to repeat go again on another connection,
/// others fail with `connectionLost`. And redirects of streamed requests. Against ``CountingServer``,
/// whose `/drop-reused/…` closes a reused connection without answering.
@Suite("NIO transport: reused connections and stream redirects", .closesWhatItOpens, .timeLimit(.minutes(1)))
struct NIOTransportRetryTests {
    typealias With = NIOTransportTests

    static func request(_ method: HTTPRequest.Method, _ server: CountingServer, _ path: String) -> HTTPRequest {
        HTTPRequest(method: method, scheme: "http", authority: "127.0.0.1:\(server.port)", path: path)
    }

    /// Sends a first request that leaves its connection idle in the pool, then `second` on it.
    static func secondOnReused(
        _ transport: NIOHTTPTransport, _ server: CountingServer, _ second: HTTPRequest, body: Data? = nil
    ) async throws -> (HTTPResponse, Data) {
        let before = server.accepted
        let (first, _) = try await transport.send(
            request(.get, server, "/drop-reused/first"), body: nil, options: TransportOptions())
        #expect(first.status == .ok)
        #expect(server.accepted == before + 1)
        return try await transport.send(second, body: body, options: TransportOptions())
    }

    @Test(
        "a request safe to repeat, left unanswered on a reused connection the server closed, goes again on a new one",
        arguments: [HTTPRequest.Method.get, .put, .delete, .options])
    func retriedWhenSafe(_ method: HTTPRequest.Method) async throws {
        try await With.with(NIOHTTPTransport()) { transport, server in
            let body = method == .put ? Data("{}".utf8) : nil
            let (response, data) = try await Self.secondOnReused(
                transport, server, Self.request(method, server, "/drop-reused/second"), body: body)
            #expect(response.status == .ok)
            #expect(String(decoding: data, as: UTF8.self) == "\(method.rawValue) /drop-reused/second")
            // The first connection answered once and was closed at the second request; the retry
            // opened another.
            #expect(server.accepted == 2)
            #expect(server.requests == 3)
        }
    }

    @Test("a POST with an Idempotency-Key is safe to repeat: it goes again on a new connection")
    func retriedWithIdempotencyKey() async throws {
        try await With.with(NIOHTTPTransport()) { transport, server in
            var post = Self.request(.post, server, "/drop-reused/post")
            post.headerFields[.idempotencyKey] = "key-1"
            let (response, data) = try await Self.secondOnReused(transport, server, post, body: Data("{}".utf8))
            #expect(response.status == .ok)
            #expect(String(decoding: data, as: UTF8.self) == "POST /drop-reused/post")
            #expect(server.accepted == 2)
        }
    }

    @Test("a POST or PATCH without an Idempotency-Key is not repeated: connectionLost, as the server may have acted on it")
    func notRetriedWhenUnsafe() async throws {
        try await With.with(NIOHTTPTransport()) { transport, server in
            for method in [HTTPRequest.Method.post, .patch] {
                let before = server.accepted
                let error = try await #require(throws: OutpostError.self) {
                    try await Self.secondOnReused(
                        transport, server, Self.request(method, server, "/drop-reused/\(method.rawValue)"),
                        body: Data("{}".utf8))
                }
                #expect(error.code == .connectionLost, "\(method): \(error)")
                // One connection for the first request, none for a retry.
                #expect(server.accepted == before + 1, "\(method)")
            }
        }
    }

    @Test("a request unanswered on a connection it was the first on is not repeated")
    func freshConnectionNotRetried() async throws {
        let server = try await MisbehavingServer.start(.reset)
        let transport = NIOHTTPTransport()
        try await TransportExchangeTests.closing(transport, stop: server.stop) {
            let error = try await #require(throws: OutpostError.self) {
                try await transport.send(
                    HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(server.port)", path: "/"), body: nil,
                    options: TransportOptions())
            }
            #expect(error.code == .connectionLost, "\(error)")
            #expect(server.arrivals == 1)
        }
    }

    /// The client as an application has it (default retries): a loaded machine can hold a new
    /// connection's request past the server's idle timeout too, and that close (on a connection no
    /// request had used) is the retry policy's to handle, not the transport's. One second, not less:
    /// with 100 ms, a slow host running the whole suite in parallel held every retry past it.
    @Test("outpost's own server closing idle connections after 1 s: each later request gets a new one and its answer")
    func serverIdleTimeout() async throws {
        let transport = NIOHTTPTransport()
        try await withLiveServer(
            configure: { $0.idleTimeout = .seconds(1) },
            client: { OutpostClient(configuration: .init(baseURL: $0), ownedTransport: transport) }
        ) { server, client in
            let authority = "127.0.0.1:\(server.running.port)"
            for round in 0..<3 {
                let response = try await client.send(.get("/health"))
                #expect(response.status == 200, "round \(round)")
                // Nothing announces the server's close but the pool's count: polled, with a deadline.
                let deadline = ContinuousClock.now + .seconds(10)
                while transport.openConnections(scheme: "http", authority: authority) > 0, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(10))
                }
                #expect(transport.openConnections(scheme: "http", authority: authority) == 0, "round \(round)")
            }
        }
    }

    @Test("a streamed download unanswered on a reused connection goes again; a streamed upload does not")
    func streams() async throws {
        try await With.with(NIOHTTPTransport()) { transport, server in
            func download(_ path: String) async throws -> String {
                let (head, body) = try await transport.stream(
                    Self.request(.get, server, path), body: nil, options: TransportOptions())
                #expect(head.status == .ok)
                var data = Data()
                for try await chunk in body { data += chunk }
                return String(decoding: data, as: UTF8.self)
            }
            #expect(try await download("/drop-reused/a") == "GET /drop-reused/a")
            #expect(try await download("/drop-reused/b") == "GET /drop-reused/b")
            #expect(server.accepted == 2)
            // The second connection is idle in the streams' pool: an upload on it is not replayed.
            let error = try await #require(throws: OutpostError.self) {
                let (_, body) = try await transport.stream(
                    Self.request(.put, server, "/drop-reused/upload"), body: .data(Data(repeating: 1, count: 1000)),
                    options: TransportOptions())
                for try await _ in body {}
            }
            #expect(error.code == .connectionLost, "\(error)")
            #expect(server.accepted == 2)
        }
    }

    @Test("a streamed download follows redirects; Authorization goes to the same origin only")
    func streamRedirects() async throws {
        try await With.withOtherOrigin { other in
            try await With.with(NIOHTTPTransport()) { transport, server in
                func follow(_ target: String) async throws -> (Int, String) {
                    let encoded = target.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
                    var request = Self.request(.get, server, "/to/\(encoded)")
                    request.headerFields[.authorization] = "Bearer secret"
                    let (head, body) = try await transport.stream(request, body: nil, options: TransportOptions())
                    var data = Data()
                    for try await chunk in body { data += chunk }
                    return (head.status.code, String(decoding: data, as: UTF8.self))
                }
                #expect(try await follow("/auth/same") == (200, "GET /auth/same auth=Bearer secret"))
                #expect(try await follow("http://127.0.0.1:\(other.port)/auth/other") == (200, "GET /auth/other auth=-"))
                let (code, big) = try await follow("/big/200000")
                #expect(code == 200 && big.utf8.count == 200_000)
                #expect(other.requests == 1)
            }
        }
    }

    @Test("whole and streamed requests follow at most maxRedirects (5) redirects; a sixth is a clear transportFailed")
    func redirectLimit() async throws {
        try await With.with(NIOHTTPTransport()) { transport, server in
            /// A path that reaches `/auth/end` after `hops` redirects.
            func chain(_ hops: Int) -> HTTPRequest {
                var target = "/auth/end"
                for _ in 0..<hops { target = "/to/" + target.addingPercentEncoding(withAllowedCharacters: .alphanumerics)! }
                return Self.request(.get, server, target)
            }
            func streamed(_ request: HTTPRequest) async throws -> (Int, String) {
                let (head, body) = try await transport.stream(request, body: nil, options: TransportOptions())
                var data = Data()
                for try await chunk in body { data += chunk }
                return (head.status.code, String(decoding: data, as: UTF8.self))
            }
            let (response, data) = try await transport.send(chain(5), body: nil, options: TransportOptions())
            #expect(response.status == .ok)
            #expect(String(decoding: data, as: UTF8.self) == "GET /auth/end auth=-")
            #expect(try await streamed(chain(5)) == (200, "GET /auth/end auth=-"))
            #expect(server.requests == 12)
            for stream in [false, true] {
                let error = try await #require(throws: OutpostError.self) {
                    if stream {
                        _ = try await streamed(chain(6))
                    } else {
                        _ = try await transport.send(chain(6), body: nil, options: TransportOptions())
                    }
                }
                #expect(error.code == .transportFailed, "\(error)")
                #expect(error.message.contains("more than 5"), "\(error)")
            }
        }
    }

    @Test("a streamed upload does not follow a redirect: the 3xx comes back as it is")
    func streamedUploadNotRedirected() async throws {
        try await With.with(NIOHTTPTransport()) { transport, server in
            let target = "/auth/upload".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let (head, body) = try await transport.stream(
                Self.request(.put, server, "/to/\(target)"), body: .data(Data(repeating: 2, count: 5000)),
                options: TransportOptions())
            for try await _ in body {}
            #expect(head.status.code == 302)
            #expect(head.headerFields[.location] == "/auth/upload")
            #expect(server.requests == 1)
        }
    }
}
