import Foundation
import HTTPTypes
import Logging
import Outpost
import OutpostServer
import OutpostTestSupport
import Synchronization
import Testing

@Suite("Lambdas, handlers and operations against the live server", .closesWhatItOpens)
struct LambdaIntegrationTests {
    @Test("positional and named arguments reach the lambda", arguments: [Transport.asyncHTTPClient, .urlSession])
    func lambdaArguments(transport: Transport) async throws {
        try await withLiveServer(client: transport.client) { _, client in
            #expect(try await client.callLambda("hello:someone", arguments: .positional(["world"])) == "Hello, world!")
            #expect(try await client.callLambda("hello:someone", arguments: .named(["name": "Ada"])) == "Hello, Ada!")
            let echoed = try await client.callLambda("echo", arguments: .named(["n": 1, "list": [true, nil, 2.5]]))
            #expect(echoed == ["n": 1, "list": [true, nil, 2.5]])
        }
    }

    @Test("typed lambda call encodes arguments and decodes the result")
    func typedLambda() async throws {
        struct Args: Encodable, Sendable { var name: String }
        struct Pair: Codable, Sendable, Equatable { var a: Int; var b: String }
        try await withLiveServer { _, client in
            let greeting = try await client.callLambda("hello:someone", arguments: Args(name: "typed"), as: String.self)
            #expect(greeting == "Hello, typed!")
            let pair = try await client.callLambda("echo", arguments: Pair(a: 7, b: "x"), as: Pair.self)
            #expect(pair == Pair(a: 7, b: "x"))
            await #expect(throws: OutpostError.self) {
                _ = try await client.callLambda("echo", arguments: 42, as: Int.self)
            }
        }
    }

    @Test("a typed result that does not fit names the coding path")
    func decodingFailureCarriesPath() async throws {
        struct Shape: Decodable { var n: Int; var list: [String] }
        try await withLiveServer { _, client in
            let error = try await #require(throws: OutpostError.self) {
                _ = try await client.callLambda("echo", arguments: ["n": 1, "list": ["a", 2]] as JSONValue, as: Shape.self)
            }
            #expect(error.code == .decodingFailed)
            #expect(error.codingPath == "result.list[1]")
        }
    }

    @Test("the custom time-zone operation, and a clear error for an unknown zone")
    func timeOperation() async throws {
        struct Time: ClientOperation {
            var zone: String
            func makeRequest() throws -> Request { .post("/handlers/time", json: ["zone": .string(zone)]) }
            func handleResponse(_ response: ClientResponse, client: OutpostClient) throws -> JSONValue { try response.json() }
        }
        try await withLiveServer { _, client in
            let reply = try await client.perform(Time(zone: "Asia/Kolkata"))
            #expect(reply["zone"] == "Asia/Kolkata")
            #expect(reply["utc_offset_seconds"] == 19800)
            #expect(reply["time"]?.stringValue?.hasSuffix("+05:30") == true)
            let error = try await #require(throws: OutpostError.self) { _ = try await client.perform(Time(zone: "Nowhere/Land")) }
            #expect(error.status == 400)
            #expect(error.serverCode == "unknown_time_zone")
            #expect(error.serverMessage?.contains("Nowhere/Land") == true)
        }
    }

    @Test("performAll keeps order, limits concurrency, and reports each failure")
    func performAllOrder() async throws {
        struct Echo: ClientOperation {
            var value: Int
            func makeRequest() throws -> Request { .post("/lambdas/echo", json: ["args": [.int(value)]]) }
            func handleResponse(_ response: ClientResponse, client: OutpostClient) throws -> Int {
                try response.json()["result"]?[0]?.intValue ?? -1
            }
        }
        final class Tracker: ClientMiddleware {
            let current = Mutex(0)
            let peak = Mutex(0)
            func intercept(
                _ request: HTTPRequest, body: Data?, context: MiddlewareContext,
                next: @Sendable (HTTPRequest, Data?) async throws -> ClientResponse
            ) async throws -> ClientResponse {
                let now = current.withLock {
                    $0 += 1; return $0
                }
                peak.withLock { $0 = max($0, now) }
                defer { current.withLock { $0 -= 1 } }
                return try await next(request, body)
            }
        }
        let tracker = Tracker()
        try await withLiveServer(client: { OutpostClient(configuration: .init(baseURL: $0), middlewares: [tracker]) }) {
            _, client in
            let operations = (0..<20).map { Echo(value: $0) }
            let results = await client.performAll(operations, maxConcurrent: 3)
            #expect(results.map { try? $0.get() } == (0..<20).map { $0 })
            #expect(tracker.peak.withLock { $0 } <= 3)
        }
    }

    @Test("cancelling performAll stops the operations in flight and skips the rest")
    func performAllCancellation() async throws {
        struct Wait: ClientOperation {
            func makeRequest() throws -> Request { .post("/handlers/gate", json: [:]) }
            func handleResponse(_ response: ClientResponse, client: OutpostClient) throws -> Bool { true }
        }
        let plugin = TestPlugin()
        try await withLiveServer(plugins: [plugin]) { _, client in
            let task = Task { await client.performAll(Array(repeating: Wait(), count: 6), maxConcurrent: 2) }
            task.cancel()
            let results = await task.value
            plugin.gate.open()
            #expect(results.count == 6)
            #expect(
                results.allSatisfy { result in
                    if case .failure(let error) = result { return error.code == .cancelled }
                    return false
                })
        }
    }

    @Test("completion-handler form delivers the result")
    func completionForm() async throws {
        try await withLiveServer { _, client in
            let result = await withCheckedContinuation { continuation in
                client.callLambda("hello:someone", arguments: .positional(["callback"])) { continuation.resume(returning: $0) }
            }
            let value = try result.get()
            #expect(value == "Hello, callback!")
        }
    }
}

@Suite("Every error kind reads well", .closesWhatItOpens)
struct ErrorIntegrationTests {
    @Test("server down is cannotConnect", arguments: [Transport.asyncHTTPClient, .urlSession])
    func serverDown(transport: Transport) async throws {
        let nobody = try ClosedPort()
        defer { nobody.release() }
        let client = transport.client(nobody.baseURL, retry: .none)
        let error = try await #require(throws: OutpostError.self) { _ = try await client.callLambda("hello:someone", "x") }
        try await client.shutdown()
        #expect(error.code == .cannotConnect)
        #expect(error.method == "POST")
        #expect(error.path == "/lambdas/hello:someone")
        #expect(error.description.contains("Check that the server is running"))
    }

    @Test("a reply slower than the timeout is a timeout", arguments: [Transport.asyncHTTPClient, .urlSession])
    func timeout(transport: Transport) async throws {
        let plugin = TestPlugin()
        try await withLiveServer(plugins: [plugin], client: { transport.client($0, timeout: .milliseconds(300), retry: .none) }) {
            _, client in
            let error = try await #require(throws: OutpostError.self) {
                _ = try await client.send(.post("/handlers/gate", json: [:]))
            }
            plugin.gate.open()
            #expect(error.code == .timeout)
        }
    }

    @Test("a 2xx body that is not JSON is malformedResponse")
    func malformedJSON() async throws {
        try await withLiveServer { _, client in
            let error = try await #require(throws: OutpostError.self) {
                _ = try await client.send(.post("/handlers/not-json", json: [:]), decoding: JSONValue.self)
            }
            #expect(error.code == .malformedResponse)
            #expect(error.status == 200)
        }
    }

    @Test("a lambda that throws gives a 500 with the envelope")
    func serverErrorEnvelope() async throws {
        try await withLiveServer { _, client in
            let error = try await #require(throws: OutpostError.self) { _ = try await client.callLambda("boom") }
            #expect(error.code == .httpStatus)
            #expect(error.status == 500)
            #expect(error.serverCode == "lambda_failed")
            #expect(error.serverMessage?.contains("boom") == true)
        }
    }

    @Test("an error object in a 2xx body is a serviceError; the keys are configurable")
    func serviceError() async throws {
        try await withLiveServer { server, client in
            let error = try await #require(throws: OutpostError.self) {
                _ = try await client.send(.post("/handlers/service-error", json: [:]))
            }
            #expect(error.code == .serviceError)
            #expect(error.status == 200)
            #expect(error.serverCode == "quota_exceeded")
            #expect(error.serverMessage == "You used all your credits")

            var format = OutpostClient.ErrorFormat.outpost
            format.serviceErrorKeys = []
            let lenient = OutpostClient(
                configuration: .init(baseURL: server.baseURL, errorFormat: format), transport: client.transport)
            let response = try await lenient.send(.post("/handlers/service-error", json: [:]))
            #expect(response.status == 200)
        }
    }

    @Test("a lambda reply without result is malformedResult")
    func malformedResult() async throws {
        // A middleware reroutes the lambda call to a handler that answers 200 without `result`,
        // as a backend that is not Outpost-compatible would.
        let reroute = ClosureMiddleware { request, body, _, next in
            var request = request
            request.path = "/handlers/no-result"
            return try await next(request, body)
        }
        try await withLiveServer(client: { OutpostClient(configuration: .init(baseURL: $0), middlewares: [reroute]) }) {
            _, client in
            let untyped = try await #require(throws: OutpostError.self) { _ = try await client.callLambda("anything") }
            #expect(untyped.code == .malformedResult)
            #expect(untyped.path == "/lambdas/anything")
            let typed = try await #require(throws: OutpostError.self) {
                _ = try await client.callLambda("anything", arguments: [1], as: Int.self)
            }
            #expect(typed.code == .malformedResult)
        }
    }

    @Test("503 with Retry-After is retried after the server's delay")
    func retryHonoursRetryAfter() async throws {
        let sleeps = Mutex<[Duration]>([])
        let policy = RetryPolicy(maxAttempts: 4, sleep: { delay in sleeps.withLock { $0.append(delay) } })
        let plugin = TestPlugin()
        try await withLiveServer(plugins: [plugin], client: { OutpostClient(configuration: .init(baseURL: $0, retry: policy)) }) {
            _, client in
            // PUT-like idempotency comes from the Idempotency-Key; a plain POST is not retried.
            let plain = try await #require(throws: OutpostError.self) {
                _ = try await client.send(.post("/handlers/flaky", json: ["failures": 1, "retry_after": "2"]))
            }
            #expect(plain.status == 503)
            #expect(sleeps.withLock { $0 }.isEmpty)

            let reply = try await client.send(
                Request.post("/handlers/flaky", json: ["failures": 3, "retry_after": "2"]).idempotencyKey())
            #expect(try reply.json()["attempts"] == 4)
            #expect(sleeps.withLock { $0 } == [.seconds(2), .seconds(2)])
        }
    }

    @Test("a Retry-After beyond the policy's bound is not waited for")
    func retryAfterTooLong() async throws {
        let sleeps = Mutex<[Duration]>([])
        let policy = RetryPolicy(
            maxAttempts: 3, maxRetryAfter: .seconds(5), sleep: { delay in sleeps.withLock { $0.append(delay) } })
        try await withLiveServer(client: { OutpostClient(configuration: .init(baseURL: $0, retry: policy)) }) { _, client in
            let error = try await #require(throws: OutpostError.self) {
                _ = try await client.send(
                    Request.post("/handlers/flaky", json: ["failures": 1, "retry_after": "3600"]).idempotencyKey())
            }
            #expect(error.status == 503)
            #expect(error.serverCode == "busy")
            #expect(sleeps.withLock { $0 }.isEmpty)
        }
    }
}

@Suite("The server's own guarantees", .closesWhatItOpens)
struct ServerBehaviourTests {
    @Test("unknown routes and bad bodies get the JSON envelope")
    func envelopes() async throws {
        try await withLiveServer { _, client in
            let missing = try await #require(throws: OutpostError.self) { _ = try await client.send(.get("/nope")) }
            #expect(missing.status == 404)
            #expect(missing.serverCode == "route_not_found")

            let malformed = try await #require(throws: OutpostError.self) {
                _ = try await client.send(
                    Request(
                        method: .post, path: "/lambdas/echo",
                        body: .data(Data("{\"args\": [1,".utf8), contentType: "application/json")))
            }
            #expect(malformed.status == 400)
            #expect(malformed.serverCode == "malformed_json")

            let badArgs = try await #require(throws: OutpostError.self) {
                _ = try await client.send(.post("/lambdas/echo", json: ["args": "not a list"]))
            }
            #expect(badArgs.serverCode == "invalid_arguments")
        }
    }

    @Test("a body over the limit is refused with 413 and nothing is run")
    func bodyLimit() async throws {
        try await withLiveServer(configure: { $0.maxBodyBytes = 1024 }) { _, client in
            let big = JSONValue.array(Array(repeating: .string(String(repeating: "x", count: 100)), count: 20))
            let error = try await #require(throws: OutpostError.self) {
                _ = try await client.callLambda("echo", arguments: .positional([big]))
            }
            #expect(error.status == 413)
            #expect(error.serverCode == "payload_too_large")
            #expect(try await client.callLambda("echo", 1) == [1])
        }
    }

    @Test("a lambda that ignores cancellation is still stopped at the deadline")
    func lambdaTimeout() async throws {
        let plugin = TestPlugin()
        try await withLiveServer(plugins: [plugin], configure: { $0.lambdaTimeout = .milliseconds(200) }) { _, client in
            let error = try await #require(throws: OutpostError.self) { _ = try await client.callLambda("stubborn") }
            plugin.gate.open()
            #expect(error.status == 504)
            #expect(error.serverCode == "lambda_timeout")
        }
    }

    @Test("health reports the schema version")
    func health() async throws {
        try await withLiveServer { _, client in
            let health = try await client.send(.get("/health"), decoding: JSONValue.self)
            #expect(health["status"] == "ok")
            #expect((health["schema_version"]?.intValue ?? 0) >= 1)
        }
    }

    @Test("request logs at every level hold no request bodies or secret query values")
    func logsHoldNoSecrets() async throws {
        let recorder = LogRecorder()
        try await withLiveServer(
            configure: { $0.logger = recorder.logger() },
            client: { OutpostClient(configuration: .init(baseURL: $0, logger: recorder.logger())) }
        ) { _, client in
            _ = try await client.send(.get("/health", query: [URLQueryItem(name: "access_token", value: "s3cr3t-token")]))
            _ = try await client.callLambda("echo", "p4ssw0rd-value")
        }
        let lines = recorder.all
        #expect(lines.contains { $0.contains("response") && $0.contains("outpost.status=200") })
        #expect(lines.contains { $0.contains("access_token=<redacted>") })
        #expect(!lines.contains { $0.contains("s3cr3t-token") || $0.contains("p4ssw0rd-value") })
    }
}

/// The two transports every client test can run on.
enum Transport: String, CustomStringConvertible, Sendable {
    case asyncHTTPClient, urlSession

    var description: String { rawValue }

    func client(_ url: URL) -> OutpostClient { client(url, timeout: .seconds(10), retry: RetryPolicy()) }

    func client(_ url: URL, timeout: Duration = .seconds(10), retry: RetryPolicy) -> OutpostClient {
        let configuration = OutpostClient.Configuration(baseURL: url, timeout: timeout, retry: retry)
        switch self {
        case .asyncHTTPClient: return OutpostClient(configuration: configuration, ownedTransport: AsyncHTTPClientTransport())
        case .urlSession: return OutpostClient(configuration: configuration, ownedTransport: URLSessionTransport())
        }
    }
}
