import Foundation
import HTTPTypes
import OpenAPIRuntime
@_spi(OutpostInternal) import OutpostCore
import OutpostOpenAPI
import OutpostTesting
import Synchronization
import Testing

/// A transport that answers with `answer(request, n)`, n counting from 1.
func numbered(_ answer: @escaping @Sendable (HTTPRequest, Int) throws -> (HTTPResponse, Data)) -> ScriptedTransport {
    let count = Mutex(0)
    return ScriptedTransport { request, _ in
        let number = count.withLock {
            $0 += 1
            return $0
        }
        return try answer(request, number)
    }
}

/// The body of a runtime response as text.
func text(_ body: HTTPBody?) async throws -> String {
    guard let body else { return "" }
    return try await String(collecting: body, upTo: 1 << 20)
}

@Suite("OutpostTransport")
struct OutpostTransportTests {
    @Test("joins the server URL's path with the operation's path and keeps the query")
    func joinsPaths() async throws {
        let scripted = ScriptedTransport { _, _ in ScriptedTransport.reply(200, json: ["ok": true]) }
        let transport = OutpostTransport(client: scripted.client(baseURL: "http://127.0.0.1:9/v1"))
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/records/notes?page=2&q=a%20b")
        let (response, body) = try await transport.send(
            request, body: nil, baseURL: URL(string: "http://127.0.0.1:9/v1/")!, operationID: "listRecords")
        #expect(response.status == .ok)
        #expect(try await text(body) == #"{"ok":true}"#)
        let sent = try #require(scripted.requests.first)
        #expect(sent.request.scheme == "http")
        #expect(sent.request.authority == "127.0.0.1:9")
        #expect(sent.request.path == "/v1/records/notes?page=2&q=a%20b")
        #expect(sent.request.headerFields[.userAgent]?.hasPrefix("Outpost/") == true)
    }

    @Test("hands error statuses to the generated client as responses, with their bodies")
    func errorStatusesAreResponses() async throws {
        let envelope: JSONValue = ["error": ["code": "not_found", "message": "No such record"]]
        let scripted = ScriptedTransport { _, _ in ScriptedTransport.reply(404, json: envelope) }
        let transport = OutpostTransport(client: scripted.client())
        let (response, body) = try await transport.send(
            HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/records/notes/missing"), body: nil,
            baseURL: URL(string: "http://scripted.test")!, operationID: "getRecord")
        #expect(response.status.code == 404)
        #expect(try JSONValue(parsing: Data(try await text(body).utf8)) == envelope)
    }

    @Test("runs the client's middlewares with the operationId as the operation's name")
    func runsClientMiddlewares() async throws {
        let seen = Mutex<[String]>([])
        let recorder = ClosureMiddleware { request, body, context, next in
            seen.withLock { $0.append(context.operationName ?? "-") }
            var request = request
            request.headerFields[.init("X-Seen")!] = "yes"
            return try await next(request, body)
        }
        let scripted = ScriptedTransport { _, _ in ScriptedTransport.reply(204) }
        let client = OutpostClient(
            configuration: .init(baseURL: URL(string: "http://scripted.test")!), transport: scripted, middlewares: [recorder])
        let (response, _) = try await OutpostTransport(client: client).send(
            HTTPRequest(method: .delete, scheme: nil, authority: nil, path: "/records/notes/1"), body: nil,
            baseURL: URL(string: "http://scripted.test")!, operationID: "deleteRecord")
        #expect(response.status.code == 204)
        #expect(seen.withLock { $0 } == ["deleteRecord"])
        #expect(scripted.requests.first?.header(.init("X-Seen")!) == "yes")
    }

    @Test("a POST is retried only with an Idempotency-Key, which addsIdempotencyKeys supplies and keeps")
    func idempotencyKeys() async throws {
        let post = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/records/notes")
        for adds in [false, true] {
            let scripted = numbered { _, number in ScriptedTransport.reply(number == 1 ? 503 : 201, json: ["id": "n1"]) }
            let client = scripted.client { $0.retry = RetryPolicy(maxAttempts: 3, sleep: { _ in }) }
            let transport = OutpostTransport(client: client, configuration: .init(addsIdempotencyKeys: adds))
            let (response, _) = try await transport.send(
                post, body: HTTPBody(#"{"title":"a"}"#), baseURL: client.configuration.baseURL, operationID: "createRecord")
            let keys = scripted.requests.map { $0.header(.idempotencyKey) }
            if adds {
                #expect(response.status.code == 201)
                #expect(keys.count == 2)
                #expect(keys[0] != nil && keys[0] == keys[1])
                #expect(scripted.requests.allSatisfy { $0.json == ["title": "a"] })
            } else {
                #expect(response.status.code == 503)
                #expect(keys == [nil])
            }
        }
    }

    @Test("a key the caller gave is kept")
    func callersKeyIsKept() async throws {
        let scripted = ScriptedTransport { _, _ in ScriptedTransport.reply(201) }
        let client = scripted.client()
        var request = HTTPRequest(method: .patch, scheme: nil, authority: nil, path: "/records/notes/1")
        request.headerFields[.idempotencyKey] = "mine"
        _ = try await OutpostTransport(client: client, configuration: .init(addsIdempotencyKeys: true)).send(
            request, body: HTTPBody("{}"), baseURL: client.configuration.baseURL, operationID: "patchRecord")
        #expect(scripted.requests.map { $0.header(.idempotencyKey) } == ["mine"])
    }

    @Test("a request body over maxRequestBytes fails before anything is sent, whether its length is known or not")
    func requestBodyLimit() async throws {
        let scripted = ScriptedTransport { _, _ in ScriptedTransport.reply(200) }
        let client = scripted.client()
        let transport = OutpostTransport(client: client, configuration: .init(maxRequestBytes: 8))
        let post = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/lambdas/echo")
        let known = HTTPBody(Array(repeating: UInt8(ascii: "x"), count: 9))
        let (stream, continuation) = AsyncStream<HTTPBody.ByteChunk>.makeStream()
        for _ in 0..<3 { continuation.yield(ArraySlice("abcd".utf8)) }
        continuation.finish()
        for body in [known, HTTPBody(stream, length: .unknown)] {
            let error = await #expect(throws: OutpostError.self) {
                try await transport.send(post, body: body, baseURL: client.configuration.baseURL, operationID: "callLambda")
            }
            #expect(error?.code == .invalidRequest)
            #expect(error?.message.contains("larger than 8 bytes") == true)
            #expect(error?.suggestion?.contains("maxRequestBytes") == true)
        }
        #expect(scripted.requests.isEmpty)
        // At the limit exactly, it goes.
        _ = try await transport.send(
            post, body: HTTPBody(Array("12345678".utf8)), baseURL: client.configuration.baseURL, operationID: "callLambda")
        #expect(scripted.requests.count == 1)
    }

    @Test("a response over the client's maxResponseBytes fails with responseTooLarge")
    func responseBodyLimit() async throws {
        let scripted = ScriptedTransport { _, _ in (HTTPResponse(status: .ok), Data(count: 64)) }
        let client = scripted.client { $0.maxResponseBytes = 16 }
        let error = await #expect(throws: OutpostError.self) {
            try await OutpostTransport(client: client).send(
                HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/x"), body: nil,
                baseURL: client.configuration.baseURL, operationID: "get")
        }
        #expect(error?.code == .responseTooLarge)
    }

    @Test("a failed connection is retried for GET and then thrown as the OutpostError")
    func transportFailures() async throws {
        let scripted = ScriptedTransport { _, _ in throw OutpostError(.connectionLost, "closed") }
        let client = scripted.client { $0.retry = RetryPolicy(maxAttempts: 2, sleep: { _ in }) }
        let error = await #expect(throws: OutpostError.self) {
            try await OutpostTransport(client: client).send(
                HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/x"), body: nil,
                baseURL: client.configuration.baseURL, operationID: "get")
        }
        #expect(error?.code == .connectionLost)
        #expect(scripted.requests.count == 2)
    }

    @Test("a server URL that is not absolute http(s) is refused with what to give instead")
    func badServerURL() async throws {
        let scripted = ScriptedTransport { _, _ in ScriptedTransport.reply(200) }
        let error = await #expect(throws: OutpostError.self) {
            try await OutpostTransport(client: scripted.client()).send(
                HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/x"), body: nil,
                baseURL: URL(string: "file:///tmp/x")!, operationID: "get")
        }
        #expect(error?.code == .invalidRequest)
        #expect(error?.suggestion?.contains("server URL") == true)
        #expect(scripted.requests.isEmpty)
    }

    @Test("a HEAD response has no body")
    func headHasNoBody() async throws {
        let scripted = ScriptedTransport { _, _ in ScriptedTransport.reply(200) }
        let client = scripted.client()
        let (_, body) = try await OutpostTransport(client: client).send(
            HTTPRequest(method: .head, scheme: nil, authority: nil, path: "/x"), body: nil,
            baseURL: client.configuration.baseURL, operationID: "head")
        #expect(body == nil)
    }
}
