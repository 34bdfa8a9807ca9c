import Foundation
import NIOCore
import Outpost
import OutpostTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The built-in transports against a server that misbehaves on purpose: each failure is reported
/// with its own code, and the configured timeout bounds the whole exchange.
// The time limit bounds a hang, not the speed: with every suite running at once on two cores, a
// test can wait over a minute for its turn.
@Suite("Transport failures", .closesWhatItOpens, .timeLimit(.minutes(3)))
struct TransportFailureTests {
    /// How soon `shutdown()` must end what is in flight: far below the 60 s timeout these clients
    /// have, so a shutdown that waits for the timeout fails, with room for a loaded 2-core machine.
    static let prompt = Duration.seconds(15)

    enum Kind: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case asyncHTTPClient, urlSession

        var testDescription: String { rawValue }

        func makeTransport() -> any ClientTransport {
            switch self {
            case .asyncHTTPClient: return AsyncHTTPClientTransport()
            case .urlSession: return URLSessionTransport()
            }
        }
    }

    static func client(_ kind: Kind, _ server: MisbehavingServer, timeout: Duration) -> OutpostClient {
        var configuration = OutpostClient.Configuration(baseURL: server.baseURL, timeout: timeout)
        configuration.retry = .none
        return OutpostClient(configuration: configuration, ownedTransport: kind.makeTransport())
    }

    /// Runs `body` against a server with `behavior`, always stopping both.
    static func with(
        _ behavior: MisbehavingServer.Behavior, _ kind: Kind, timeout: Duration = .seconds(1),
        _ body: (MisbehavingServer, OutpostClient) async throws -> Void
    ) async throws {
        let server = try await MisbehavingServer.start(behavior)
        let client = client(kind, server, timeout: timeout)
        do {
            try await body(server, client)
        } catch {
            try? await client.shutdown()
            await server.stop()
            throw error
        }
        try await client.shutdown()
        await server.stop()
    }

    @Test("headers and then silence: a timeout when the timeout is up", arguments: Kind.allCases)
    func stallAfterHead(_ kind: Kind) async throws {
        try await Self.with(.stallAfterHead, kind, timeout: .milliseconds(500)) { _, client in
            let started = ContinuousClock.now
            let error = try await #require(throws: OutpostError.self) { try await client.send(.get("/stall")) }
            #expect(error.code == .timeout, "\(error)")
            #expect(ContinuousClock.now - started < Self.prompt)
        }
    }

    @Test("a body trickled a byte at a time: a timeout when the timeout is up", arguments: Kind.allCases)
    func trickle(_ kind: Kind) async throws {
        try await Self.with(.trickle(interval: .milliseconds(20)), kind, timeout: .seconds(1)) { _, client in
            let started = ContinuousClock.now
            let error = try await #require(throws: OutpostError.self) { try await client.send(.get("/trickle")) }
            #expect(error.code == .timeout, "\(error)")
            #expect(ContinuousClock.now - started < .seconds(6))
        }
    }

    @Test(
        "an endless body is refused past maxResponseBytes as it arrives, not buffered until the timeout", arguments: Kind.allCases
    )
    func endlessBody(_ kind: Kind) async throws {
        let server = try await MisbehavingServer.start(.endless)
        var configuration = OutpostClient.Configuration(baseURL: server.baseURL, timeout: .seconds(30))
        configuration.retry = .none
        configuration.maxResponseBytes = 256 * 1024
        let client = OutpostClient(configuration: configuration, ownedTransport: kind.makeTransport())
        try await withCleanup {
            let error = try await #require(throws: OutpostError.self) { try await client.send(.get("/endless")) }
            #expect(error.code == .responseTooLarge, "\(error)")
        } cleanup: {
            try? await client.shutdown()
            await server.stop()
        }
    }

    @Test("URLSession's own cache never answers: each GET reaches the server, owned or borrowed session")
    func noURLCache() async throws {
        let server = try await MisbehavingServer.start(.cacheable)
        let cached = URLSessionConfiguration.default
        cached.urlCache = URLCache.shared
        let borrowed = URLSession(configuration: cached)
        let transports: [any ClientTransport] = [
            URLSessionTransport(configuration: cached), URLSessionTransport(borrowing: borrowed),
        ]
        try await withCleanup {
            for (index, transport) in transports.enumerated() {
                let client = OutpostClient(configuration: .init(baseURL: server.baseURL), transport: transport)
                for _ in 0..<2 { _ = try await client.send(.get("/cached")) }
                #expect(server.arrivals == 2 * (index + 1), "transport \(index)")
            }
        } cleanup: {
            for transport in transports { try? await transport.shutdown() }
            borrowed.invalidateAndCancel()
            await server.stop()
        }
    }

    @Test("a reset after the request was sent is connectionLost, not cannotConnect", arguments: Kind.allCases)
    func reset(_ kind: Kind) async throws {
        // A long timeout: the reset must be reported as such, not overtaken by the clock on a loaded machine.
        try await Self.with(.reset, kind, timeout: .seconds(20)) { server, client in
            let error = try await #require(throws: OutpostError.self) { try await client.send(.get("/reset")) }
            #expect(error.code == .connectionLost, "\(error) after \(server.arrivals) request(s)")
            #expect(error.suggestion?.contains("server is running") != true)
        }
    }

    @Test("a reply that is not HTTP is malformedResponse, not cannotConnect", arguments: Kind.allCases)
    func notHTTP(_ kind: Kind) async throws {
        try await Self.with(.notHTTP, kind, timeout: .seconds(20)) { _, client in
            let error = try await #require(throws: OutpostError.self) { try await client.send(.get("/ssh")) }
            #expect(error.code == .malformedResponse, "\(error) \(String(describing: error.underlying))")
        }
    }

    @Test("shutdown cancels a request in flight and returns promptly", arguments: Kind.allCases)
    func shutdownCancels(_ kind: Kind) async throws {
        let server = try await MisbehavingServer.start(.silent)
        let client = Self.client(kind, server, timeout: .seconds(60))
        let request = Task { try await client.send(.get("/never")) }
        var arrivals = server.requests.makeAsyncIterator()
        _ = await arrivals.next()
        let started = ContinuousClock.now
        try await client.shutdown()
        #expect(ContinuousClock.now - started < Self.prompt)
        let error = await #expect(throws: OutpostError.self) { try await request.value }
        #expect(error?.code == .cancelled, "\(String(describing: error))")
        #expect(ContinuousClock.now - started < Self.prompt)
        await server.stop()
    }

    @Test("a request after shutdown fails at once", arguments: Kind.allCases)
    func afterShutdown(_ kind: Kind) async throws {
        let server = try await MisbehavingServer.start(.silent)
        let client = Self.client(kind, server, timeout: .seconds(60))
        try await client.shutdown()
        let error = await #expect(throws: OutpostError.self) { try await client.send(.get("/late")) }
        #expect(error?.code == .cancelled)
        await server.stop()
    }

    #if canImport(Glibc)
        @Test("shutdown returns promptly while a connection hangs in the server's backlog", arguments: Kind.allCases)
        func shutdownWhileConnecting(_ kind: Kind) async throws {
            let server = try BacklogServer()
            defer { server.stop() }
            let (reached, reachedTransport) = AsyncStream<Void>.makeStream()
            var configuration = OutpostClient.Configuration(baseURL: server.baseURL, timeout: .seconds(60))
            configuration.retry = .none
            let client = OutpostClient(
                configuration: configuration, ownedTransport: kind.makeTransport(),
                middlewares: [
                    ClosureMiddleware { request, body, _, next in
                        reachedTransport.yield()
                        return try await next(request, body)
                    }
                ])
            let request = Task { try await client.send(.get("/backlog")) }
            var iterator = reached.makeAsyncIterator()
            _ = await iterator.next()
            let started = ContinuousClock.now
            try await client.shutdown()
            #expect(ContinuousClock.now - started < Self.prompt)
            let error = await #expect(throws: OutpostError.self) { try await request.value }
            #expect(error?.code == .cancelled, "\(String(describing: error))")
            #expect(ContinuousClock.now - started < Self.prompt)
        }
    #endif
}
