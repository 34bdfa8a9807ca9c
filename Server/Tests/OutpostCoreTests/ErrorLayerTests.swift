import Foundation
import HTTPTypes
import Logging
import OutpostTesting
import Synchronization
import Testing

@_spi(OutpostInternal) @testable import OutpostCore

private struct OwnError: Error, CustomStringConvertible {
    var description: String { "own error" }
}

private struct ThrowingMiddleware: ClientMiddleware {
    func intercept(
        _ request: HTTPRequest, body: Data?, context: MiddlewareContext,
        next: @Sendable (HTTPRequest, Data?) async throws -> ClientResponse
    ) async throws -> ClientResponse {
        throw OwnError()
    }
}

private struct Failing: ClientOperation {
    func makeRequest() throws -> Request { .get("/x") }
    func handleResponse(_ response: ClientResponse, client: OutpostClient) throws -> Int { throw OwnError() }
}

private let okTransport = ScriptedTransport { _, _ in ScriptedTransport.reply(200, json: ["ok": true]) }

@Suite("Errors name the layer that failed")
struct ErrorLayerTests {
    @Test("an error thrown by a middleware is middlewareFailed, naming it and keeping the cause")
    func middleware() async throws {
        let client = OutpostClient(
            configuration: .init(baseURL: URL(string: "http://scripted.test")!), transport: okTransport,
            middlewares: [HeaderMiddleware([HTTPField.Name("X-A")!: "1"]), ThrowingMiddleware()])
        let error = try await #require(throws: OutpostError.self) { try await client.send(.get("/x")) }
        #expect(error.code == .middlewareFailed)
        #expect(error.message.contains("ThrowingMiddleware"))
        #expect(error.underlying is OwnError)
        #expect(error.method == "GET")
        #expect(error.path == "/x")
        #expect(!error.description.contains("server is running"))
    }

    @Test("an error thrown by a transport is transportFailed, naming it and keeping the cause")
    func transport() async throws {
        var configuration = OutpostClient.Configuration(baseURL: URL(string: "http://scripted.test")!)
        configuration.retry = .none
        let client = OutpostClient(configuration: configuration, transport: ScriptedTransport { _, _ in throw OwnError() })
        let error = try await #require(throws: OutpostError.self) { try await client.send(.get("/x")) }
        #expect(error.code == .transportFailed)
        #expect(error.message.contains("ScriptedTransport"))
        #expect(error.underlying is OwnError)
    }

    @Test("an error thrown by an operation's response handler is handlerFailed")
    func handler() async throws {
        let client = okTransport.client()
        let error = try await #require(throws: OutpostError.self) { try await client.perform(Failing()) }
        #expect(error.code == .handlerFailed)
        #expect(error.message.contains("Failing"))
        #expect(error.underlying is OwnError)
        #expect(error.path == "/x")
    }
}

/// Keeps every log entry's level and message.
final class LogBook: Sendable {
    let entries = Mutex<[(level: Logger.Level, message: String)]>([])

    var logger: Logger {
        Logger(label: "test") { _ in Handler(book: self) }
    }

    var levels: [Logger.Level] { entries.withLock { $0.map(\.level) } }

    struct Handler: LogHandler {
        let book: LogBook
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            book.entries.withLock { $0.append((event.level, "\(event.message)")) }
        }
    }
}

@Suite("Logging levels")
struct LoggingLevelTests {
    @Test("failures that are thrown, and retries, are logged at info or below")
    func levels() async throws {
        let book = LogBook()
        let transport = ScriptedTransport { _, _ in ScriptedTransport.reply(503) }
        var configuration = OutpostClient.Configuration(baseURL: URL(string: "http://scripted.test")!, logger: book.logger)
        configuration.retry = RetryPolicy(maxAttempts: 2, sleep: { _ in })
        let client = OutpostClient(configuration: configuration, transport: transport)
        await #expect(throws: OutpostError.self) { try await client.send(.get("/x")) }
        let failing = OutpostClient(
            configuration: configuration, transport: ScriptedTransport { _, _ in throw OutpostError(.connectionLost, "gone") })
        await #expect(throws: OutpostError.self) { try await failing.send(.get("/x")) }
        #expect(!book.levels.isEmpty)
        #expect(book.levels.allSatisfy { $0 <= .info })
    }
}
