import Foundation
import Outpost
import Testing

// Only `import Outpost` (and Foundation): HTTPTypes and Logging come with it, so the common
// extensions compile without depending on swift-http-types or swift-log directly.

/// A middleware: needs `HTTPRequest` and `HTTPField` from HTTPTypes.
private struct StampMiddleware: ClientMiddleware {
    func intercept(
        _ request: HTTPRequest, body: Data?, context: MiddlewareContext,
        next: @Sendable (HTTPRequest, Data?) async throws -> ClientResponse
    ) async throws -> ClientResponse {
        var request = request
        request.headerFields[HTTPField.Name("X-Stamp")!] = "1"
        context.logger.debug("stamped")
        return try await next(request, body)
    }
}

/// A log handler: needs `LogHandler` and `Logger` from Logging.
private struct CountingLogHandler: LogHandler {
    let count: Counter
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) { count.add() }
}

private final class Counter: Sendable {
    private let lock = NSLock()
    nonisolated(unsafe) private var value = 0  // guarded by `lock`
    func add() { lock.withLock { value += 1 } }
    var current: Int { lock.withLock { value } }
}

/// A custom transport: needs `HTTPResponse` from HTTPTypes.
private struct EchoTransport: ClientTransport {
    func send(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> (HTTPResponse, Data) {
        var response = HTTPResponse(status: .ok)
        response.headerFields[.contentType] = "application/json"
        let stamp = request.headerFields[HTTPField.Name("X-Stamp")!] ?? "none"
        return (response, Data("{\"stamp\": \"\(stamp)\"}".utf8))
    }
}

@Suite("import Outpost is enough")
struct ImportOutpostTests {
    @Test("a middleware, a log handler and a transport written against `import Outpost` alone")
    func extensionPoints() async throws {
        let count = Counter()
        let logger = Logger(label: "umbrella") { _ in CountingLogHandler(count: count) }
        let client = OutpostClient(
            configuration: .init(baseURL: URL(string: "https://api.test")!, logger: logger), transport: EchoTransport(),
            middlewares: [StampMiddleware()])
        let reply = try await client.send(.get("/x")).json()
        #expect(reply["stamp"] == "1")
        #expect(count.current > 0)
    }
}
