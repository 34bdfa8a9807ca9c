import Foundation
import HTTPTypes
import Logging
import Outpost
import OutpostServer
import OutpostTestSupport
import Synchronization
import Testing

/// `Idempotency-Key` on POST: one effect per (caller, key), the first response replayed.
@Suite("Idempotency keys", .closesWhatItOpens)
struct IdempotencyTests {
    static func post(_ path: String, _ body: JSONValue, key: String?, token: String? = nil) -> Request {
        var request = Request.post(path, json: body)
        if let key { request = request.idempotencyKey(key) }
        if let token { request.headers[.authorization] = "Bearer \(token)" }
        return request
    }

    /// POSTs without the client's status check, retries or middlewares, to see any answer as it is.
    static func raw(
        _ base: URL, _ path: String, _ body: JSONValue, key: String?, token: String? = nil,
        headers: HTTPFields = [:]
    ) async throws -> ClientResponse {
        var fields = headers
        fields[.contentType] = "application/json"
        if let key { fields[HTTPField.Name("Idempotency-Key")!] = key }
        if let token { fields[.authorization] = "Bearer \(token)" }
        let request = HTTPRequest(
            method: .post, scheme: "http", authority: "\(base.host ?? "127.0.0.1"):\(base.port ?? 80)", path: path,
            headerFields: fields)
        let transport = AsyncHTTPClientTransport()
        do {
            let (head, data) = try await transport.send(request, body: body.jsonData(), options: TransportOptions())
            try await transport.shutdown()
            return ClientResponse(response: head, body: data)
        } catch {
            try? await transport.shutdown()
            throw error
        }
    }

    /// Runs `body` with a client on `url`, and always shuts it down.
    static func withClient<T>(
        _ url: URL, retry: RetryPolicy = RetryPolicy(), _ body: (OutpostClient) async throws -> T
    ) async throws -> T {
        let client = OutpostClient(configuration: .init(baseURL: url, retry: retry))
        do {
            let result = try await body(client)
            try await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    static func count(_ client: OutpostClient, _ type: String) async throws -> Int {
        let page = try await client.send(.get("/records/\(type)?page=1&per_page=100"))
        return try page.json()["total"]?.intValue ?? -1
    }

    @Test("a POST repeated with the same key answers the same record and creates one")
    func repeated() async throws {
        try await withLiveServer { _, client in
            let first = try await client.send(Self.post("/records/orders", ["item": "tea"], key: "order-1"))
            let again = try await client.send(Self.post("/records/orders", ["item": "tea"], key: "order-1"))
            #expect(first.status == 201 && again.status == 201)
            #expect(try first.json()["id"] == (try again.json()["id"]))
            #expect(first.headerFields[.location] == again.headerFields[.location])
            #expect(first.headerFields[.eTag] == again.headerFields[.eTag])
            #expect(first.headerFields[HTTPField.Name("Idempotency-Replayed")!] == nil)
            #expect(again.headerFields[HTTPField.Name("Idempotency-Replayed")!] == "true")
            #expect(again.body == first.body)
            #expect(try await Self.count(client, "orders") == 1)
            // Without a key, every POST creates.
            _ = try await client.send(Self.post("/records/orders", ["item": "tea"], key: nil))
            #expect(try await Self.count(client, "orders") == 2)
        }
    }

    @Test("concurrent duplicates create one record, and all answer it")
    func concurrent() async throws {
        try await withLiveServer { _, client in
            let ids = try await withThrowingTaskGroup(of: JSONValue?.self) { group in
                for _ in 0..<12 {
                    group.addTask {
                        let response = try await client.send(Self.post("/records/orders", ["item": "jam"], key: "same"))
                        #expect(response.status == 201)
                        return try response.json()["id"]
                    }
                }
                return try await group.reduce(into: Set<JSONValue?>()) { $0.insert($1) }
            }
            #expect(ids.count == 1)
            #expect(try await Self.count(client, "orders") == 1)
        }
    }

    @Test("the same key with another body or path is 422 idempotency_key_reused")
    func reused() async throws {
        try await withLiveServer { server, client in
            _ = try await client.send(Self.post("/records/orders", ["item": "tea"], key: "k"))
            let other = try await Self.raw(server.baseURL, "/records/orders", ["item": "coffee"], key: "k")
            #expect(other.status == 422)
            #expect(try other.json()["error"]?["code"] == "idempotency_key_reused")
            let elsewhere = try await Self.raw(server.baseURL, "/records/invoices", ["item": "tea"], key: "k")
            #expect(elsewhere.status == 422)
            #expect(try await Self.count(client, "orders") == 1)
            #expect(try await Self.count(client, "invoices") == 0)
        }
    }

    @Test("keys must be 1–255 printable ASCII characters", arguments: ["", String(repeating: "k", count: 256), "tab\there"])
    func invalidKeys(key: String) async throws {
        try await withLiveServer { server, client in
            let response = try await Self.raw(server.baseURL, "/records/orders", ["item": "tea"], key: key)
            #expect(response.status == 400)
            #expect(try response.json()["error"]?["code"] == "invalid_idempotency_key")
            #expect(try await Self.count(client, "orders") == 0)
        }
    }

    @Test("a structured-field string key and a 255-character key are accepted")
    func validKeys() async throws {
        try await withLiveServer { _, client in
            var quoted = Request.post("/records/orders", json: ["item": "tea"])
            quoted.headers[HTTPField.Name("Idempotency-Key")!] = "\"8e03978e-40d5-43e8-bc93-6894a57f9324\""
            let quotedAnswer = try await client.send(quoted)
            #expect(quotedAnswer.status == 201)
            let long = String(repeating: "k", count: 255)
            let longAnswer = try await client.send(Self.post("/records/orders", ["item": "tea"], key: long))
            #expect(longAnswer.status == 201)
        }
    }

    @Test("different callers with the same key are independent; anonymous callers share one namespace")
    func callers() async throws {
        try await withAuthFixture { fixture in
            try await Self.withClient(fixture.server.baseURL) { client in
                let ada = try #require(try await fixture.passwordTokens("ada")["access_token"] as? String)
                let bob = try #require(try await fixture.passwordTokens("bob")["access_token"] as? String)
                let asAda = try await client.send(Self.post("/records/memos", ["n": 1], key: "shared", token: ada))
                let asBob = try await client.send(Self.post("/records/memos", ["n": 1], key: "shared", token: bob))
                let anonymous = try await client.send(Self.post("/records/memos", ["n": 1], key: "shared"))
                #expect(asAda.status == 201 && asBob.status == 201 && anonymous.status == 201)
                let ids = Set([try asAda.json()["id"], try asBob.json()["id"], try anonymous.json()["id"]])
                #expect(ids.count == 3)
                let adaAgain = try await client.send(Self.post("/records/memos", ["n": 1], key: "shared", token: ada))
                #expect(try adaAgain.json()["id"] == (try asAda.json()["id"]))
                #expect(try await Self.count(client, "memos") == 3)
            }
        }
    }

    @Test("two servers on one SQLite file create one record for one key")
    func twoServers() async throws {
        try await withLiveServer { server, client in
            var logger = Logger(label: "outpost.test.second")
            logger.logLevel = .critical
            var configuration = ServerConfiguration(
                host: "127.0.0.1", port: 0, databasePath: server.folder.appendingPathComponent("test.sqlite").path,
                logger: logger)
            server.shareDatabase(with: &configuration)
            let second = try await OutpostServer(configuration: configuration, plugins: [DemoPlugin(), TestPlugin()]).start()
            let other = OutpostClient(configuration: .init(baseURL: second.baseURL))
            do {
                let ids = try await withThrowingTaskGroup(of: JSONValue?.self) { group in
                    for index in 0..<10 {
                        let target = index.isMultiple(of: 2) ? client : other
                        group.addTask {
                            try await target.send(Self.post("/records/orders", ["item": "tea"], key: "both")).json()["id"]
                        }
                    }
                    return try await group.reduce(into: Set<JSONValue?>()) { $0.insert($1) }
                }
                #expect(ids.count == 1)
                #expect(try await Self.count(client, "orders") == 1)
            } catch {
                try? await other.shutdown()
                await second.stop()
                throw error
            }
            try await other.shutdown()
            await second.stop()
        }
    }

    @Test("the SDK's retry of a keyed POST whose reply was lost creates one record")
    func lostReply() async throws {
        let server = try await LiveServer.start()
        let transport = ReplyDroppingTransport(AsyncHTTPClientTransport(), drops: 1)
        var configuration = OutpostClient.Configuration(baseURL: server.baseURL)
        configuration.retry = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(1), sleep: { _ in })
        let client = OutpostClient(configuration: configuration, ownedTransport: transport)
        do {
            let created = try await client.send(Request.post("/records/orders", json: ["item": "tea"]).idempotencyKey())
            #expect(created.status == 201)
            #expect(transport.sent.current == 2, "the first reply was dropped and the POST sent again")
            #expect(created.headerFields[HTTPField.Name("Idempotency-Replayed")!] == "true")
            #expect(try await Self.count(client, "orders") == 1)
        } catch {
            try? await client.shutdown()
            await server.stop()
            throw error
        }
        try await client.shutdown()
        await server.stop()
    }

    @Test("lambdas and handlers run once per key; a failure gives the key up")
    func lambdas() async throws {
        let plugin = TestPlugin()
        try await withLiveServer(plugins: [DemoPlugin(), plugin]) { server, client in
            let first = try await client.send(Self.post("/lambdas/counted", [:], key: "once"))
            let again = try await client.send(Self.post("/lambdas/counted", [:], key: "once"))
            #expect(try first.json()["result"] == 1)
            #expect(try again.json()["result"] == 1)
            #expect(again.headerFields[HTTPField.Name("Idempotency-Replayed")!] == "true")
            #expect(plugin.countedCalls.current == 1)
            #expect(try await client.send(Self.post("/lambdas/counted", [:], key: "twice")).json()["result"] == 2)
            let reused = try await Self.raw(server.baseURL, "/lambdas/counted", ["args": [1]], key: "once")
            #expect(reused.status == 422)
            // A failing lambda keeps nothing: the retry runs again (and fails again).
            let boom = try await Self.raw(server.baseURL, "/lambdas/boom", [:], key: "b")
            let boomAgain = try await Self.raw(server.baseURL, "/lambdas/boom", [:], key: "b")
            #expect(boom.status == 500 && boomAgain.status == 500)
            #expect(boomAgain.headerFields[HTTPField.Name("Idempotency-Replayed")!] == nil)
            // A handler's answer is replayed with its own headers.
            let handler = try await client.send(Self.post("/handlers/not-json", [:], key: "h"))
            let handlerAgain = try await client.send(Self.post("/handlers/not-json", [:], key: "h"))
            #expect(handlerAgain.body == handler.body)
            #expect(handlerAgain.headerFields[.contentType] == "text/html")
        }
    }

    @Test("a repeat while the first call still runs is 409 idempotency_in_progress with Retry-After")
    func inProgress() async throws {
        let plugin = TestPlugin()
        try await withLiveServer(plugins: [DemoPlugin(), plugin]) { server, client in
            try await Self.withClient(server.baseURL, retry: .none) { raw in
                async let first = client.send(Self.post("/handlers/gate", [:], key: "slow"))
                // The handler runs only once the key is claimed.
                for await _ in plugin.gate.arrivals { break }
                let answer = try await Self.raw(server.baseURL, "/handlers/gate", [:], key: "slow")
                #expect(answer.status == 409)
                #expect(try answer.json()["error"]?["code"] == "idempotency_in_progress")
                #expect(answer.headerFields[.retryAfterHeader] == "1")
                plugin.gate.open()
                #expect(try await first.status == 200)
                let replay = try await raw.send(Self.post("/handlers/gate", [:], key: "slow"))
                #expect(replay.headerFields[HTTPField.Name("Idempotency-Replayed")!] == "true")
            }
        }
    }

    @Test("lambdas and handlers see who calls them")
    func caller() async throws {
        try await withAuthFixture { fixture in
            try await Self.withClient(fixture.server.baseURL) { client in
                let ada = try #require(try await fixture.passwordTokens("ada")["access_token"] as? String)
                let anonymous = try await client.send(Self.post("/lambdas/whoami", [:], key: nil))
                #expect(try anonymous.json()["result"] == .null)
                let signedIn = try await client.send(Self.post("/lambdas/whoami", [:], key: nil, token: ada)).json()["result"]
                #expect(signedIn?["client_id"]?.stringValue == fixture.publicClient.id)
                #expect(signedIn?["user_id"]?.stringValue?.isEmpty == false)
                #expect(signedIn?["scopes"]?.arrayValue?.contains("records") == true)
                let handler = try await client.send(Self.post("/handlers/whoami", [:], key: nil, token: ada)).json()
                #expect(handler == signedIn)
                let bad = try await Self.raw(fixture.server.baseURL, "/handlers/whoami", [:], key: nil, token: "not-a-token")
                #expect(bad.status == 401)
                // Another scheme is the plugin's business: no caller, no 401.
                let basic = try await Self.raw(
                    fixture.server.baseURL, "/lambdas/whoami", [:], key: nil, headers: [.authorization: "Basic dXNlcjpwYXNz"])
                #expect(basic.status == 200)
                #expect(try basic.json()["result"] == .null)
            }
        }
    }
}

/// Sends through `inner`, then drops the first `drops` replies as if the connection broke after
/// the server answered.
final class ReplyDroppingTransport: ClientTransport {
    let inner: any ClientTransport
    let drops: Int
    let sent = Counter()

    init(_ inner: any ClientTransport, drops: Int) {
        self.inner = inner
        self.drops = drops
    }

    func send(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> (HTTPResponse, Data) {
        let reply = try await inner.send(request, body: body, options: options)
        guard request.method == .post, sent.increment() <= drops else { return reply }
        throw OutpostError(.connectionLost, "The connection closed before the reply arrived (dropped by the test)")
    }

    func shutdown() async throws { try await inner.shutdown() }
}
