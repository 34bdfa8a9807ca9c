import Foundation
import HTTPTypes
import HTTPTypesFoundation
import OutpostTesting
import Synchronization
import Testing

@_spi(OutpostInternal) @testable import OutpostCore

/// A ``ScriptedTransport`` whose answer also gets the request's number (1 for the first).
private func scripted(
    _ answer: @escaping @Sendable (HTTPRequest, Int) throws -> (Int, HTTPFields, String)
) -> ScriptedTransport {
    final class Counter: Sendable { let value = Mutex(0) }
    let count = Counter()
    return ScriptedTransport { request, _ in
        let number = count.value.withLock {
            $0 += 1
            return $0
        }
        let (status, fields, text) = try answer(request, number)
        return (HTTPResponse(status: .init(code: status), headerFields: fields), Data(text.utf8))
    }
}

private func client(
    _ transport: ScriptedTransport, retry: RetryPolicy = RetryPolicy(sleep: { _ in }), middlewares: [any ClientMiddleware] = []
) -> OutpostClient {
    OutpostClient(
        configuration: .init(baseURL: URL(string: "http://example.test/api")!, retry: retry), transport: transport,
        middlewares: middlewares)
}

@Suite("Request building")
struct RequestBuildingTests {
    @Test("paths join the base URL; query values are encoded, + included")
    func urls() throws {
        let transport = scripted { _, _ in (200, [:], "{}") }
        let prepared = try client(transport).prepare(.get("/records/x", query: [URLQueryItem(name: "q", value: "a+b c&d")]))
        #expect(prepared.request.url?.absoluteString == "http://example.test/api/records/x?q=a%2Bb%20c%26d")
        #expect(prepared.request.headerFields[.userAgent]?.hasPrefix("Outpost/") == true)
        #expect(prepared.request.headerFields[.accept] == "application/json")
    }

    @Test("an absolute URL path is used as it is (next links)")
    func absolute() throws {
        let transport = scripted { _, _ in (200, [:], "{}") }
        let prepared = try client(transport).prepare(.get("https://other.test/page?cursor=abc"))
        #expect(prepared.request.url?.absoluteString == "https://other.test/page?cursor=abc")
    }

    @Test("lambda names are one path segment")
    func lambdaPath() {
        #expect(OutpostClient.lambdaPath("hello:someone") == "/lambdas/hello:someone")
        #expect(OutpostClient.lambdaPath("a/b c") == "/lambdas/a%2Fb%20c")
    }
}

@Suite("Middleware")
struct MiddlewareTests {
    @Test("middlewares run in order, can change headers and see the response JSON")
    func order() async throws {
        let trace = Mutex<[String]>([])
        func tracer(_ name: String) -> ClosureMiddleware {
            ClosureMiddleware { request, body, _, next in
                trace.withLock { $0.append("\(name) in") }
                var request = request
                request.headerFields[HTTPField.Name("X-Trace")!] = (request.headerFields[HTTPField.Name("X-Trace")!] ?? "") + name
                let response = try await next(request, body)
                let ok = try response.json()["ok"] ?? .null
                trace.withLock { $0.append("\(name) out \(ok)") }
                return response
            }
        }
        let transport = scripted { _, _ in (200, [:], "{\"ok\": true}") }
        _ = try await client(transport, middlewares: [tracer("A"), tracer("B")]).send(.get("/x"))
        #expect(trace.withLock { $0 } == ["A in", "B in", "B out true", "A out true"])
        #expect(transport.requests.first?.request.headerFields[HTTPField.Name("X-Trace")!] == "AB")
    }

    @Test("a middleware can halt the default handling of a 401")
    func halt() async throws {
        let signedOut = Mutex(false)
        let signOut = ClosureMiddleware { request, body, _, next in
            let response = try await next(request, body)
            if response.status == 401 {
                signedOut.withLock { $0 = true }
                throw OutpostError.halted("signed out after 401")
            }
            return response
        }
        let transport = scripted { _, _ in
            (401, [:], "{\"error\": {\"code\": \"expired\", \"message\": \"Token expired\"}}")
        }
        let error = try await #require(throws: OutpostError.self) {
            _ = try await client(transport, middlewares: [signOut]).send(.get("/me"))
        }
        #expect(error.code == .halted)
        #expect(signedOut.withLock { $0 })
    }

    @Test("without such a middleware a 401 is unauthorized with the server's code")
    func unauthorized() async throws {
        let transport = scripted { _, _ in
            (401, [:], "{\"error\": {\"code\": \"expired\", \"message\": \"Token expired\"}}")
        }
        let error = try await #require(throws: OutpostError.self) { _ = try await client(transport).send(.get("/me")) }
        #expect(error.code == .unauthorized)
        #expect(error.serverCode == "expired")
        #expect(error.path == "/api/me")
        #expect(error.method == "GET")
    }

    @Test("a prepared request is not sent until started, and can be started twice")
    func prepared() async throws {
        let transport = scripted { _, count in (200, [:], "{\"n\": \(count)}") }
        let prepared = try client(transport).prepare(.get("/x"))
        #expect(transport.requests.count == 0)
        #expect(try await prepared.start().json()["n"] == 1)
        #expect(try await prepared.start().json()["n"] == 2)
    }
}

@Suite("Retries")
struct RetryTests {
    @Test("GET retries 503 up to maxAttempts with growing, jittered delays")
    func backoff() async throws {
        let sleeps = Mutex<[Duration]>([])
        let policy = RetryPolicy(
            maxAttempts: 3, baseDelay: .milliseconds(100), sleep: { d in sleeps.withLock { $0.append(d) } }, random: { 1.0 })
        let transport = scripted { _, _ in (503, [:], "{}") }
        let error = try await #require(throws: OutpostError.self) {
            _ = try await client(transport, retry: policy).send(.get("/x"))
        }
        #expect(error.status == 503)
        #expect(transport.requests.count == 3)
        #expect(sleeps.withLock { $0 } == [.milliseconds(100), .milliseconds(200)])
    }

    @Test("POST is not retried without an Idempotency-Key, and is with one")
    func idempotency() async throws {
        let transport = scripted { _, count in count == 1 ? (502, [:], "{}") : (200, [:], "{}") }
        _ = try? await client(transport).send(.post("/x", json: [:]))
        #expect(transport.requests.count == 1)
        let keyed = scripted { _, count in count == 1 ? (502, [:], "{}") : (200, [:], "{}") }
        _ = try await client(keyed).send(Request.post("/x", json: [:]).idempotencyKey("k1"))
        #expect(keyed.requests.count == 2)
        #expect(keyed.requests.allSatisfy { $0.request.headerFields[.idempotencyKey] == "k1" })
    }

    @Test("connection failures are retried for idempotent requests")
    func connectionFailure() async throws {
        let transport = scripted { _, count in
            if count < 3 { throw OutpostError(.cannotConnect, "refused") }
            return (200, [:], "{}")
        }
        let response = try await client(transport).send(.get("/x"))
        #expect(response.status == 200)
        #expect(transport.requests.count == 3)
    }

    @Test("Retry-After: seconds and HTTP dates", arguments: [("7", 7.0), ("0", 0.0)])
    func retryAfterSeconds(value: String, seconds: Double) {
        #expect(RetryPolicy.parseRetryAfter(value) == .seconds(seconds))
    }

    @Test("Retry-After as an HTTP date is the time until then")
    func retryAfterDate() {
        let now = Date(timeIntervalSince1970: 1_000_000_000)  // Sun, 09 Sep 2001 01:46:40 GMT
        #expect(RetryPolicy.parseRetryAfter("Sun, 09 Sep 2001 01:47:10 GMT", now: now) == .seconds(30))
        #expect(RetryPolicy.parseRetryAfter("soon", now: now) == nil)
    }
}

@Suite("Error formats")
struct ErrorFormatTests {
    @Test("NationBuilder-style top-level code and message")
    func nationBuilder() async throws {
        let transport = scripted { _, _ in (404, [:], "{\"code\": \"not_found\", \"message\": \"Record not found\"}") }
        let client = OutpostClient(
            configuration: .init(baseURL: URL(string: "http://example.test")!, errorFormat: .nationBuilder), transport: transport)
        let error = try await #require(throws: OutpostError.self) { _ = try await client.send(.get("/people/1")) }
        #expect(error.serverCode == "not_found")
        #expect(error.serverMessage == "Record not found")
        #expect(error.description.contains("404 Not Found"))
    }

    @Test("REST framework detail messages")
    func restFramework() async throws {
        let transport = scripted { _, _ in (403, [:], "{\"detail\": \"You do not have permission.\"}") }
        let client = OutpostClient(
            configuration: .init(baseURL: URL(string: "http://example.test")!, errorFormat: .restFramework), transport: transport)
        let error = try await #require(throws: OutpostError.self) { _ = try await client.send(.get("/x")) }
        #expect(error.serverMessage == "You do not have permission.")
    }

    @Test("a 2xx record with an ordinary 'error' field is not a service error")
    func notAServiceError() async throws {
        let transport = scripted { _, _ in (200, [:], "{\"error\": null, \"name\": \"x\"}") }
        let response = try await client(transport).send(.get("/x"))
        #expect(response.status == 200)
    }
}

@Suite("JSONValue")
struct JSONValueTests {
    @Test("round-trips keep integers apart from doubles")
    func roundTrip() throws {
        let value: JSONValue = ["i": 42, "d": 2.5, "s": "x", "b": false, "n": nil, "a": [1, "two"]]
        let text = value.jsonString()
        #expect(text == #"{"a":[1,"two"],"b":false,"d":2.5,"i":42,"n":null,"s":"x"}"#)
        #expect(try JSONValue(parsing: Data(text.utf8)) == value)
    }

    @Test("subscripts and accessors")
    func access() {
        let value: JSONValue = ["list": [1, 2.0, "3"]]
        #expect(value["list"]?[0]?.intValue == 1)
        #expect(value["list"]?[1]?.intValue == 2)
        #expect(value["list"]?[2]?.stringValue == "3")
        #expect(value["list"]?[3] == nil)
        #expect(value["missing"] == nil)
    }

    @Test("Codable values convert to and from JSONValue")
    func conversion() throws {
        struct Point: Codable, Equatable { var x: Int; var y: Int }
        let json = try JSONValue(encoding: Point(x: 1, y: 2))
        #expect(json == ["x": 1, "y": 2])
        #expect(try json.decode(Point.self) == Point(x: 1, y: 2))
    }

    @Test("malformed JSON throws")
    func malformed() {
        #expect(throws: (any Error).self) { try JSONValue(parsing: Data("{\"a\": ".utf8)) }
    }
}
