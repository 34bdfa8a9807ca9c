import Foundation
import HTTPTypes
import HTTPTypesFoundation
@_spi(Generated) import OpenAPIRuntime
import OutpostAuth
@_spi(OutpostInternal) import OutpostCore
import OutpostOpenAPI
import OutpostTesting
import Synchronization
import Testing

/// What the runtime's `next` received.
struct Forwarded: Sendable {
    var request: HTTPRequest
    var body: String?
    var baseURL: URL
}

/// A runtime `next` that records what it gets and answers with `answer`.
final class Downstream: Sendable {
    let forwarded = Mutex<[Forwarded]>([])
    let answer: @Sendable (HTTPRequest) throws -> (HTTPResponse, HTTPBody?)

    init(_ answer: @escaping @Sendable (HTTPRequest) throws -> (HTTPResponse, HTTPBody?)) { self.answer = answer }

    func next(_ request: HTTPRequest, _ body: HTTPBody?, _ baseURL: URL) async throws -> (HTTPResponse, HTTPBody?) {
        var text: String?
        if let body { text = try await String(collecting: body, upTo: 1 << 20) }
        forwarded.withLock { $0.append(Forwarded(request: request, body: text, baseURL: baseURL)) }
        return try answer(request)
    }
}

let server = URL(string: "http://127.0.0.1:8080/api")!

@Suite("OutpostMiddleware")
struct OutpostMiddlewareTests {
    @Test("Outpost middlewares see an absolute request and the server URL; the runtime gets its own form back")
    func convertsRequests() async throws {
        let seen = Mutex<[String]>([])
        let middleware = ClosureMiddleware { request, body, context, next in
            seen.withLock {
                $0.append("\(request.scheme ?? "-")://\(request.authority ?? "-")\(request.path ?? "-")")
                $0.append("\(context.baseURL.absoluteString) \(context.operationName ?? "-")")
                $0.append(body.map { String(decoding: $0, as: UTF8.self) } ?? "-")
            }
            var request = request
            request.headerFields[.init("X-Seen")!] = "yes"
            let response = try await next(request, Data(#"{"changed":true}"#.utf8))
            #expect(String(decoding: response.body, as: UTF8.self) == "created")
            return response
        }
        let downstream = Downstream { _ in (HTTPResponse(status: .created), HTTPBody("created")) }
        let (response, body) = try await OutpostMiddleware(middleware, baseURL: server).intercept(
            HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/records/notes?x=1"), body: HTTPBody("{}"),
            baseURL: server, operationID: "createRecord", next: downstream.next)
        #expect(response.status == .created)
        #expect(try await text(body) == "created")
        #expect(
            seen.withLock { $0 } == [
                "http://127.0.0.1:8080/api/records/notes?x=1", "http://127.0.0.1:8080/api createRecord", "{}",
            ])
        let forwarded = try #require(downstream.forwarded.withLock { $0 }.first)
        #expect(forwarded.request.scheme == nil && forwarded.request.authority == nil)
        #expect(forwarded.request.path == "/records/notes?x=1")
        #expect(forwarded.request.headerFields[.init("X-Seen")!] == "yes")
        #expect(forwarded.baseURL == server)
        #expect(forwarded.body == #"{"changed":true}"#)
    }

    @Test("a request a middleware sends to another origin or outside the server URL's path goes there")
    func redirectedRequests() async throws {
        for (target, path, base) in [
            ("https://files.example.com/blob/1", "/blob/1", "https://files.example.com"),
            ("http://127.0.0.1:8080/other/x", "/other/x", "http://127.0.0.1:8080"),
            ("http://127.0.0.1:8080/apix/y", "/apix/y", "http://127.0.0.1:8080"),
        ] {
            let middleware = ClosureMiddleware { request, body, _, next in
                try await next(HTTPRequest(method: request.method, url: URL(string: target)!), body)
            }
            let downstream = Downstream { _ in (HTTPResponse(status: .ok), nil) }
            _ = try await OutpostMiddleware(middleware, baseURL: server).intercept(
                HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/records/notes"), body: nil, baseURL: server,
                operationID: "listRecords", next: downstream.next)
            let forwarded = try #require(downstream.forwarded.withLock { $0 }.first)
            #expect(forwarded.request.path == path)
            #expect(forwarded.baseURL.absoluteString == base)
        }
    }

    @Test("bodies over the configured bounds fail with an OutpostError naming the bound")
    func bodyLimits() async throws {
        let passThrough = ClosureMiddleware { request, body, _, next in try await next(request, body) }
        let adapter = OutpostMiddleware(
            passThrough, baseURL: server, configuration: .init(maxRequestBytes: 4, maxResponseBytes: 4))
        let small = Downstream { _ in (HTTPResponse(status: .ok), HTTPBody("1234")) }
        let large = Downstream { _ in (HTTPResponse(status: .ok), HTTPBody("12345")) }
        let get = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/x")
        let request = await #expect(throws: OutpostError.self) {
            try await adapter.intercept(get, body: HTTPBody("12345"), baseURL: server, operationID: "x", next: small.next)
        }
        #expect(request?.code == .invalidRequest)
        #expect(request?.message.contains("maxRequestBytes") == true)
        #expect(small.forwarded.withLock { $0 }.isEmpty)
        let response = await #expect(throws: OutpostError.self) {
            try await adapter.intercept(get, body: HTTPBody("1234"), baseURL: server, operationID: "x", next: large.next)
        }
        #expect(response?.code == .responseTooLarge)
        #expect(response?.message.contains("maxResponseBytes") == true)
        let (ok, body) = try await adapter.intercept(
            get, body: HTTPBody("1234"), baseURL: server, operationID: "x", next: small.next)
        #expect(ok.status == .ok)
        #expect(try await text(body) == "1234")
    }

    @Test("middlewares run in order: the first sees the request first and the response last")
    func order() async throws {
        let log = Mutex<[String]>([])
        func named(_ name: String) -> ClosureMiddleware {
            ClosureMiddleware { request, body, _, next in
                log.withLock { $0.append("> \(name)") }
                let response = try await next(request, body)
                log.withLock { $0.append("< \(name)") }
                return response
            }
        }
        let downstream = Downstream { _ in (HTTPResponse(status: .ok), nil) }
        _ = try await OutpostMiddleware(named("a"), named("b"), baseURL: server).intercept(
            HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/x"), body: nil, baseURL: server, operationID: "x",
            next: downstream.next)
        #expect(log.withLock { $0 } == ["> a", "> b", "< b", "< a"])
    }

    @Test("a runtime failure that wraps an OutpostError reaches the middlewares as that OutpostError")
    func unwrapsTransportErrors() async throws {
        let caught = Mutex<OutpostError.Code?>(nil)
        let middleware = ClosureMiddleware { request, body, _, next in
            do {
                return try await next(request, body)
            } catch let error as OutpostError {
                caught.withLock { $0 = error.code }
                throw error
            }
        }
        let downstream = Downstream { request in
            throw ClientError(
                operationID: "x", operationInput: "", request: request, requestBody: nil, baseURL: server, response: nil,
                responseBody: nil, causeDescription: "Transport threw an error.",
                underlyingError: OutpostError(.cannotConnect, "refused"))
        }
        await #expect(throws: OutpostError.self) {
            try await OutpostMiddleware(middleware, baseURL: server).intercept(
                HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/x"), body: nil, baseURL: server,
                operationID: "x", next: downstream.next)
        }
        #expect(caught.withLock { $0 } == .cannotConnect)
    }
}

/// Counts what happened, across tasks.
final class Counter: Sendable {
    let value = Mutex(0)
}

@Suite("OutpostOpenAPI with AuthMiddleware and the runtime's client")
struct AuthThroughRuntimeTests {
    /// An authenticator signed in with `credential`, whose token endpoint answers a refresh with
    /// access token `fresh` (and counts refreshes).
    func authenticator(_ credential: Credential, refreshes: Counter) async throws -> Authenticator {
        let tokens = ScriptedTransport { request, _ in
            guard request.path == "/api/oauth/token" else { return ScriptedTransport.reply(404) }
            refreshes.value.withLock { $0 += 1 }
            return ScriptedTransport.reply(
                200, json: ["access_token": "fresh", "token_type": "Bearer", "expires_in": 3600, "refresh_token": "r2"])
        }
        let authenticator = Authenticator(
            configuration: .init(registration: ClientRegistration(clientID: "app"), endpoints: .outpost(base: server)),
            client: tokens.client(baseURL: server.absoluteString))
        try await authenticator.setCredential(credential)
        return authenticator
    }

    @Test("a generated-style call signs with the token, refreshes once on a 401 and retries, on the server's origin only")
    func refreshOn401() async throws {
        let refreshes = Counter()
        let authenticator = try await authenticator(
            Credential(accessToken: "stale", tokenType: "Bearer", refreshToken: "r1", expiresAt: Date() + 3600),
            refreshes: refreshes)
        let api = ScriptedTransport { request, _ in
            request.headerFields[.authorization] == "Bearer fresh"
                ? ScriptedTransport.reply(200, json: ["id": "n1"])
                : ScriptedTransport.reply(401, json: ["error": ["code": "invalid_token", "message": "expired"]])
        }
        let client = UniversalClient(
            serverURL: server, transport: OutpostTransport(client: api.client(baseURL: server.absoluteString)),
            middlewares: [OutpostMiddleware(AuthMiddleware(authenticator: authenticator), baseURL: server)])
        let status = try await client.send(
            input: "n1", forOperation: "getRecord",
            serializer: { id in (HTTPRequest(soar_path: "/records/notes/\(id)", method: .get), nil as HTTPBody?) },
            deserializer: { response, _ in response.status.code })
        #expect(status == 200)
        #expect(refreshes.value.withLock { $0 } == 1)
        #expect(api.requests.map { $0.header(.authorization) } == ["Bearer stale", "Bearer fresh"])
        #expect(api.requests.allSatisfy { $0.url?.absoluteString == "http://127.0.0.1:8080/api/records/notes/n1" })
        #expect(try await authenticator.credential()?.refreshToken == "r2")

        // The token is for the base URL's origin: a generated client pointed elsewhere gets nothing sent.
        let elsewhere = UniversalClient(
            serverURL: URL(string: "http://127.0.0.2:8080/api")!,
            transport: OutpostTransport(client: api.client(baseURL: server.absoluteString)),
            middlewares: [OutpostMiddleware(AuthMiddleware(authenticator: authenticator), baseURL: server)])
        let error = await #expect(throws: ClientError.self) {
            try await elsewhere.send(
                input: "n1", forOperation: "getRecord",
                serializer: { _ in (HTTPRequest(soar_path: "/records/notes/n1", method: .get), nil as HTTPBody?) },
                deserializer: { response, _ in response.status.code })
        }
        #expect((error?.underlyingError as? OutpostError)?.code == .untrustedDestination)
        #expect(api.requests.count == 2)
    }
}
