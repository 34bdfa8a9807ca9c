import Foundation
import HTTPTypes
import Outpost
import OutpostServer
import OutpostTestSupport
import Testing

/// `POST /records/batch` on a live server, on SQLite and (with `OUTPOST_TEST_LIVE_BACKEND=postgres`)
/// PostgreSQL: all or nothing, the access rules per operation, idempotency, the change feed, bad
/// input, and the client's ``EntityStore/batch(_:idempotencyKey:_:)`` and outbox entry.
@Suite("Batch writes on a live server", .closesWhatItOpens, .timeLimit(.minutes(2)))
struct BatchWriteIntegrationTests {
    struct Note: Entity, Equatable {
        static let resourcePath = "records/batch-notes"
        var id: String?
        var title: String
        var done: Bool? = nil
    }

    /// One request with a raw body and extra header fields, through the client's transport.
    static func send(
        _ base: URL, _ method: HTTPRequest.Method, _ path: String, token: String? = nil, body: Data? = nil,
        headers: [HTTPField.Name: String] = [:]
    ) async throws -> ClientResponse {
        var fields = HTTPFields()
        fields[.contentType] = method == .patch ? "application/merge-patch+json" : "application/json"
        if let token { fields[.authorization] = "Bearer \(token)" }
        for (name, value) in headers { fields[name] = value }
        let request = HTTPRequest(
            method: method, scheme: "http", authority: "\(base.host ?? "127.0.0.1"):\(base.port ?? 80)", path: path,
            headerFields: fields)
        let transport = AsyncHTTPClientTransport()
        do {
            let (head, data) = try await transport.send(request, body: body, options: TransportOptions())
            try await transport.shutdown()
            return ClientResponse(response: head, body: data)
        } catch {
            try? await transport.shutdown()
            throw error
        }
    }

    static func batch(
        _ base: URL, _ operations: [JSONValue], token: String? = nil, key: String? = nil
    ) async throws -> ClientResponse {
        try await send(
            base, .post, "/records/batch", token: token, body: JSONValue.object(["operations": .array(operations)]).jsonData(),
            headers: key.map { [HTTPField.Name("Idempotency-Key")!: $0] } ?? [:])
    }

    static func create(_ base: URL, _ type: String, _ fields: JSONValue, token: String? = nil) async throws -> String {
        let reply = try await PrivateRecordsTests.send(base, .post, "/records/\(type)", token: token, body: fields)
        #expect(reply.status == 201)
        return try #require(try reply.json()["id"]?.stringValue)
    }

    /// The changes of `type` in the feed, as `kind id` strings in order.
    static func changes(_ server: LiveServer, _ type: String) async throws -> [String] {
        let storage = try await server.openStorage()
        do {
            let feed = try #require(storage as? any ChangeFeedStorage)
            let list = try await feed.changes(type: type, after: 0, limit: 1000).map { "\($0.kind.rawValue) \($0.record.id)" }
            try await storage.close()
            return list
        } catch {
            try? await storage.close()
            throw error
        }
    }

    static func error(_ reply: ClientResponse) throws -> JSONValue? { try reply.json()["error"] }

    @Test("mixed operations run in order and answer each result; two on one record behave as writes in a row")
    func mixed() async throws {
        try await withLiveServer { server, _ in
            let base = server.baseURL
            let a = try await Self.create(base, "bn", ["title": "a", "n": 1])
            let b = try await Self.create(base, "bn", ["title": "b"])
            let c = try await Self.create(base, "bn", ["title": "c"])
            let reply = try await Self.batch(
                base,
                [
                    ["method": "POST", "type": "bn", "body": ["title": "new", "id": "ignored"]],
                    ["method": "PUT", "type": "bn", "id": .string(a), "body": ["title": "A"], "if_match": "\"v1\""],
                    ["method": "PATCH", "type": "bn", "id": .string(a), "body": ["n": 2], "if_match": "\"v2\""],
                    ["method": "PATCH", "type": "bn", "id": .string(b), "body": ["title": .null, "x": ["y": 1]]],
                    ["method": "DELETE", "type": "bn", "id": .string(c)],
                ])
            #expect(reply.status == 200)
            let results = try #require(try reply.json()["results"]?.arrayValue)
            #expect(results.map { $0["status"]?.intValue } == [201, 200, 200, 200, 204])
            #expect(results[0]["etag"] == "\"v1\"")
            #expect(results[0]["record"]?["title"] == "new")
            let newID = try #require(results[0]["record"]?["id"]?.stringValue)
            #expect(newID != "ignored")
            #expect(results[1]["etag"] == "\"v2\"")
            #expect(results[2]["etag"] == "\"v3\"")
            // The patch after the replacement patched the replaced fields.
            #expect(results[2]["record"]?["title"] == "A")
            #expect(results[2]["record"]?["n"] == 2)
            #expect(results[3]["record"]?["title"] == nil)
            #expect(results[3]["record"]?["x"]?["y"] == 1)
            #expect(results[4]["record"] == nil)
            #expect(try await PrivateRecordsTests.send(base, .get, "/records/bn/\(c)").status == 404)
            let read = try await PrivateRecordsTests.send(base, .get, "/records/bn/\(a)")
            #expect(read.headerFields[.eTag] == "\"v3\"")
            #expect(try await PrivateRecordsTests.send(base, .get, "/records/bn/\(newID)").status == 200)
            let feed = try await Self.changes(server, "bn")
            #expect(
                Array(feed.dropFirst(3)) == [
                    "created \(newID)", "updated \(a)", "updated \(a)", "updated \(b)", "deleted \(c)",
                ])
        }
    }

    @Test("a failing operation in the middle writes nothing: 404 with its index, records and feed unchanged")
    func allOrNothing() async throws {
        try await withLiveServer { server, _ in
            let base = server.baseURL
            let a = try await Self.create(base, "bn", ["title": "a"])
            let before = try await Self.changes(server, "bn")
            let reply = try await Self.batch(
                base,
                [
                    ["method": "PATCH", "type": "bn", "id": .string(a), "body": ["title": "changed"]],
                    ["method": "POST", "type": "bn", "body": ["title": "new"]],
                    ["method": "DELETE", "type": "bn", "id": "missing"],
                    ["method": "DELETE", "type": "bn", "id": .string(a)],
                ])
            #expect(reply.status == 404)
            #expect(try Self.error(reply)?["code"] == "record_not_found")
            #expect(try Self.error(reply)?["details"]?["index"] == 2)
            let read = try await PrivateRecordsTests.send(base, .get, "/records/bn/\(a)")
            #expect(try read.json()["title"] == "a")
            #expect(read.headerFields[.eTag] == "\"v1\"")
            let list = try await PrivateRecordsTests.send(base, .get, "/records/bn?page=1")
            #expect(try list.json()["total"] == 1)
            #expect(try await Self.changes(server, "bn") == before)
        }
    }

    @Test("a stale if_match is 412 with the index and the current ETag; a conflict between operations is 409")
    func preconditions() async throws {
        try await withLiveServer { server, _ in
            let base = server.baseURL
            let a = try await Self.create(base, "bn", ["title": "a"])
            let stale = try await Self.batch(
                base,
                [
                    ["method": "POST", "type": "bn", "body": ["title": "x"]],
                    ["method": "PUT", "type": "bn", "id": .string(a), "body": ["title": "b"], "if_match": "\"v7\""],
                ])
            #expect(stale.status == 412)
            #expect(try Self.error(stale)?["code"] == "precondition_failed")
            #expect(try Self.error(stale)?["details"]?["index"] == 1)
            #expect(try Self.error(stale)?["details"]?["current_etag"] == "\"v1\"")
            // The second operation names the version the record had before the first one changed it.
            let conflict = try await Self.batch(
                base,
                [
                    ["method": "PATCH", "type": "bn", "id": .string(a), "body": ["n": 1], "if_match": "\"v1\""],
                    ["method": "PATCH", "type": "bn", "id": .string(a), "body": ["n": 2], "if_match": "\"v1\""],
                ])
            #expect(conflict.status == 409)
            #expect(try Self.error(conflict)?["code"] == "batch_conflict")
            #expect(try Self.error(conflict)?["details"]?["index"] == 1)
            #expect(try Self.error(conflict)?["details"]?["conflicts_with"] == 0)
            let deleted = try await Self.batch(
                base,
                [
                    ["method": "DELETE", "type": "bn", "id": .string(a)],
                    ["method": "PATCH", "type": "bn", "id": .string(a), "body": ["n": 2]],
                ])
            #expect(deleted.status == 409)
            #expect(try Self.error(deleted)?["details"]?["conflicts_with"] == 0)
            let read = try await PrivateRecordsTests.send(base, .get, "/records/bn/\(a)")
            #expect(read.headerFields[.eTag] == "\"v1\"")
        }
    }

    @Test("the access rules decide each operation: 403 by rule with the index, 401 anonymous, hidden records 404")
    func rules() async throws {
        let rules = try AccessRuleSet(
            json: Data(#"{"types": {"bn": {"create": "caller.user != null && request.body.title != \"forbidden\""}}}"#.utf8))
        try await withAuthFixture(configure: { $0.accessRules = rules }) { fixture in
            let base = fixture.server.baseURL
            let ada = try #require(try await fixture.passwordTokens("ada")["access_token"] as? String)
            let bob = try #require(try await fixture.passwordTokens("bob")["access_token"] as? String)
            let adas = try await Self.create(base, "bn", ["title": "ada's"], token: ada)
            let secret = try await PrivateRecordsTests.send(
                base, .post, "/records/bn?visibility=private", token: ada, body: ["title": "secret"])
            let secretID = try #require(try secret.json()["id"]?.stringValue)
            let refused = try await Self.batch(
                base,
                [
                    ["method": "POST", "type": "bn", "body": ["title": "fine"]],
                    ["method": "POST", "type": "bn", "body": ["title": "forbidden"]],
                ], token: bob)
            #expect(refused.status == 403)
            #expect(try Self.error(refused)?["code"] == "forbidden_by_rule")
            #expect(try Self.error(refused)?["details"]?["index"] == 1)
            #expect(try Self.error(refused)?["details"]?["rule"] == "bn.create")
            // The default update rule: only the owner changes a record.
            let notOwner = try await Self.batch(
                base, [["method": "PATCH", "type": "bn", "id": .string(adas), "body": ["title": "bob's"]]], token: bob)
            #expect(notOwner.status == 403)
            #expect(try Self.error(notOwner)?["details"]?["rule"] == "bn.update")
            #expect(try Self.error(notOwner)?["details"]?["index"] == 0)
            let hidden = try await Self.batch(
                base, [["method": "DELETE", "type": "bn", "id": .string(secretID)]], token: bob)
            #expect(hidden.status == 404)
            #expect(try Self.error(hidden)?["code"] == "record_not_found")
            // A type with the default create rule: an anonymous caller is asked to sign in.
            let anonymous = try await Self.batch(base, [["method": "POST", "type": "bm", "body": ["title": "x"]]])
            #expect(anonymous.status == 401)
            #expect(anonymous.headerFields[.wwwAuthenticate] == "Bearer")
            #expect(try Self.error(anonymous)?["details"]?["index"] == 0)
            let owner = try await Self.batch(
                base,
                [
                    ["method": "PATCH", "type": "bn", "id": .string(adas), "body": ["title": "still ada's"]],
                    ["method": "DELETE", "type": "bn", "id": .string(secretID)],
                ], token: ada)
            #expect(owner.status == 200)
            let list = try await PrivateRecordsTests.send(base, .get, "/records/bn?page=1", token: ada)
            #expect(try list.json()["total"] == 1)
        }
    }

    @Test("an Idempotency-Key replays the stored answer and writes once; another body with it is 422")
    func idempotent() async throws {
        try await withLiveServer { server, _ in
            let base = server.baseURL
            let operations: [JSONValue] = [["method": "POST", "type": "bn", "body": ["title": "once"]]]
            let first = try await Self.batch(base, operations, key: "batch-key-1")
            #expect(first.status == 200)
            let again = try await Self.batch(base, operations, key: "batch-key-1")
            #expect(again.status == 200)
            #expect(again.headerFields[HTTPField.Name("Idempotency-Replayed")!] == "true")
            #expect(again.body == first.body)
            let list = try await PrivateRecordsTests.send(base, .get, "/records/bn?page=1")
            #expect(try list.json()["total"] == 1)
            let other = try await Self.batch(
                base, [["method": "POST", "type": "bn", "body": ["title": "twice"]]], key: "batch-key-1")
            #expect(other.status == 422)
            #expect(try Self.error(other)?["code"] == "idempotency_key_reused")
            // A failed batch keeps nothing: the same key runs afresh once the failure is cured.
            let failing: [JSONValue] = [["method": "DELETE", "type": "bn", "id": "later"]]
            #expect(try await Self.batch(base, failing, key: "batch-key-2").status == 404)
            #expect(try await Self.batch(base, failing, key: "batch-key-2").status == 404)
        }
    }

    @Test("more than 100 operations, malformed operations and hostile input are refused with 400 and write nothing")
    func badInput() async throws {
        try await withLiveServer { server, _ in
            let base = server.baseURL
            let many = [JSONValue](repeating: ["method": "POST", "type": "bn", "body": ["a": 1]], count: 101)
            let tooMany = try await Self.batch(base, many)
            #expect(tooMany.status == 400)
            #expect(try Self.error(tooMany)?["code"] == "too_many_operations")
            #expect(try Self.error(tooMany)?["details"]?["max_operations"] == 100)
            #expect(try await Self.batch(base, Array(many.prefix(100))).status == 200)
            let huge = String(repeating: "x", count: 100_000)
            let deep = (0..<200).reduce(JSONValue.int(1)) { inner, _ in .array([inner]) }
            let cases: [(JSONValue, String, Int?)] = [
                (["method": "GET", "type": "bn", "id": "a"], "invalid_batch_operation", 0),
                (["method": "POST", "type": "bn", "id": "a", "body": [:]], "invalid_batch_operation", 0),
                (["method": "PUT", "type": "bn", "body": [:]], "invalid_batch_operation", 0),
                (["method": "PUT", "type": "bn", "id": .string(huge), "body": [:]], "invalid_batch_operation", 0),
                (["method": "PATCH", "type": .string(huge), "id": "a", "body": [:]], "invalid_batch_operation", 0),
                (["method": "PATCH", "type": "bn", "id": "a", "body": [1, 2]], "invalid_batch_operation", 0),
                (["method": "DELETE", "type": "bn", "id": "a", "body": [:]], "invalid_batch_operation", 0),
                (["method": "DELETE", "type": "bn", "id": 7], "invalid_batch_operation", 0),
                (["method": "DELETE", "type": ["bn"], "id": "a"], "invalid_batch_operation", 0),
                (["method": "DELETE", "type": "bn", "id": "a", "if_match": 3], "invalid_batch_operation", 0),
                (["method": "DELETE", "type": "bn", "id": "a", "extra": true], "invalid_batch_operation", 0),
                (["method": "POST", "type": "bn", "body": "text"], "invalid_batch_operation", 0),
                ("not an operation", "invalid_batch_operation", 0),
            ]
            for (operation, code, index) in cases {
                let reply = try await Self.batch(base, [["method": "POST", "type": "bn", "body": ["ok": true]], operation])
                #expect(reply.status == 400, "\(operation)")
                #expect(try Self.error(reply)?["code"] == .string(code), "\(operation)")
                #expect(try Self.error(reply)?["details"]?["index"] == index.map { .int($0 + 1) }, "\(operation)")
            }
            for body in [#"{"operations": {}}"#, #"{"operations": []}"#, "[]", #"{"operations": [], "more": 1}"#, "{}"] {
                let reply = try await Self.send(base, .post, "/records/batch", body: Data(body.utf8))
                #expect(reply.status == 400, "\(body)")
                #expect(try Self.error(reply)?["code"] == "invalid_batch", "\(body)")
            }
            let tooDeep = try await Self.batch(base, [["method": "POST", "type": "bn", "body": ["deep": deep]]])
            #expect(tooDeep.status == 400)
            #expect(try Self.error(tooDeep)?["code"] == "json_too_deep")
            let malformed = try await Self.send(base, .post, "/records/batch", body: Data(#"{"operations": [{"#.utf8))
            #expect(malformed.status == 400)
            #expect(try Self.error(malformed)?["code"] == "malformed_json")
            let large = try await Self.batch(
                base, [["method": "POST", "type": "bn", "body": ["blob": .string(String(repeating: "y", count: 2 << 20))]]])
            #expect(large.status == 413)
            let list = try await PrivateRecordsTests.send(base, .get, "/records/bn?page=1")
            #expect(try list.json()["total"] == 100)
        }
    }

    @Test("EntityStore.batch sends typed operations and returns synced entities in order")
    func entityStoreBatch() async throws {
        try await withLiveServer { _, client in
            let store = client.entities()
            var first = try await store.push(Note(title: "first"))
            let second = try await store.push(Note(title: "second"))
            let third = try await store.push(Note(title: "third"))
            first.value.done = true
            var replaced = second
            replaced.value.title = "second, replaced"
            let results = try await store.batch(Note.self) { batch in
                batch.create(Note(title: "fourth"))
                try batch.patch(first)
                try batch.replace(replaced)
                try batch.delete(third)
            }
            #expect(results.count == 4)
            guard case .created(let created) = results[0], case .patched(let patched) = results[1],
                case .replaced(let put) = results[2], case .deleted(let deletedID) = results[3]
            else {
                Issue.record("unexpected results \(results)")
                return
            }
            #expect(created.value.title == "fourth")
            #expect(created.value.id != nil)
            #expect(created.etag == "\"v1\"")
            #expect(patched.value == Note(id: first.value.id, title: "first", done: true))
            #expect(patched.etag == "\"v2\"")
            #expect(put.value.title == "second, replaced")
            #expect(deletedID == third.value.id)
            #expect(try store.changes(in: patched) == .object([:]))
            // A stale ETag: nothing is applied, and the error names the operation.
            var stale = first
            stale.value.title = "stale"
            do {
                _ = try await store.batch(Note.self) { batch in
                    batch.create(Note(title: "never"))
                    try batch.patch(stale)
                }
                Issue.record("a stale batch was applied")
            } catch let error as OutpostError {
                #expect(error.code == .conflict)
                #expect(error.status == 412)
                #expect(error.details?["index"] == 1)
            }
            let pulled = try await store.pull(Note.self, id: try #require(first.value.id))
            #expect(pulled.value.title == "first")
            #expect(try await store.batch(Note.self) { _ in }.isEmpty)
        }
    }

    @Test("the outbox sends a queued batch as one entry, once, all or nothing")
    func outboxBatch() async throws {
        try await withLiveServer { server, client in
            let store = client.entities()
            let existing = try await store.push(Note(title: "existing"))
            var configuration = Outbox.Configuration(
                fileURL: server.folder.appendingPathComponent("outbox-\(UUID().uuidString).journal"))
            configuration.retry = RetryPolicy(maxAttempts: 1)
            let outbox = try await Outbox.open(configuration, client: client)
            let events = outbox.events()
            let entry = try await store.enqueueBatch(Note.self, in: outbox) { batch in
                batch.create(Note(title: "queued"))
                try batch.delete(existing)
            }
            #expect(entry.path == "records/batch")
            #expect(try await outbox.entries.count == 1)
            let summary = await outbox.replay()
            #expect(summary.completed == 1)
            var completion: OutboxCompletion?
            for await event in events {
                if case .completed(let done) = event {
                    completion = done
                    break
                }
            }
            let done = try #require(completion)
            let results = try store.batchResults(Note.self, from: done)
            #expect(results.count == 2)
            #expect(results[0]?.value.title == "queued")
            #expect(results[1] == nil)
            // The same entry sent again (a lost reply) is answered from the server's idempotency record.
            var repeated = Request(
                method: .post, path: entry.path,
                body: .data(try #require(entry.body), contentType: entry.contentType ?? "application/json"))
            repeated.headers[.idempotencyKey] = entry.idempotencyKey
            let replayed = try await client.send(repeated)
            #expect(replayed.headerFields[HTTPField.Name("Idempotency-Replayed")!] == "true")
            let list = try await client.send(.get("/records/batch-notes", query: [URLQueryItem(name: "page", value: "1")]))
            #expect(try list.json()["total"] == 1)
            await outbox.close()
        }
    }
}
