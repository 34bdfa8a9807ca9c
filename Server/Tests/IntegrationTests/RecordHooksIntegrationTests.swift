import Foundation
import HTTPTypes
import Outpost
import OutpostServer
import OutpostTestSupport
import Synchronization
import Testing

/// Record hooks and the data API on a live server: before hooks change and refuse writes of every
/// route, the demo's `notes` hook, lambdas reading as the caller and as the server, and an after
/// hook writing through the data API. Runs on PostgreSQL with `OUTPOST_TEST_LIVE_BACKEND=postgres`.
@Suite("Record hooks and the data API on a live server", .closesWhatItOpens, .timeLimit(.minutes(5)))
struct RecordHooksIntegrationTests {
    /// Hooks on `stamped`, `counters` and `watched` records, and lambdas over the data API.
    struct HookPlugin: ServerPlugin {
        let identifier = "outpost.tests.hooks"
        let counterCalls = Counter()
        let audits: AsyncStream<String>
        let audited: AsyncStream<String>.Continuation

        init() {
            (audits, audited) = AsyncStream.makeStream(of: String.self)
        }

        struct Explosion: Error {}

        func register(into registrar: inout PluginRegistrar) throws {
            try registrar.before(.create, .update, on: "stamped") { write in
                if write.fields["bad"] == true { throw RecordRefusal("bad_record", "This record is bad; send bad: false") }
                if write.fields["explode"] == true { throw Explosion() }
                write.fields["stamped_by"] = .string(write.caller?.userID ?? "anonymous")
                write.fields["operation"] = .string(write.operation.rawValue)
                write.fields["id"] = "not-the-id"
            }
            try registrar.before(.delete, on: "stamped") { write in
                if write.current?["locked"] == true {
                    throw RecordRefusal("locked", "This record is locked", details: ["id": .string(write.id ?? "")])
                }
            }
            // The first update's hook changes the record itself (through the data API, as the
            // server): the outer write then finds another version and runs its hook again.
            let calls = counterCalls
            try registrar.before(.update, on: "counters") { write in
                let call = calls.increment()
                if call == 1, let id = write.id {
                    _ = try await write.data.server.patch("counters", id: id, ["meanwhile": true])
                }
                write.fields["hook_calls"] = .int(call)
            }
            // An order reserves its item and logs itself, in the order's own transaction.
            try registrar.before(.create, on: "orders") { order in
                let item = order.fields["item"]?.stringValue ?? ""
                order.alsoPatch("stock", id: item, ["reserved": true])
                order.alsoCreate("order_log", fields: ["item": .string(item), "id": "ignored"])
            }
            try registrar.before(.delete, on: "orders") { order in
                if let item = order.current?["item"]?.stringValue { order.alsoPatch("stock", id: item, ["reserved": false]) }
                if let log = order.current?["log"]?.stringValue { order.alsoDelete("order_log", id: log) }
            }
            let audited = self.audited
            try registrar.after(.create, .delete, on: "watched", name: "audit") { event in
                let audit = try await event.data.create(
                    "audits",
                    fields: [
                        "record": .string(event.record.id), "operation": .string(event.operation.rawValue),
                        "position": .int(Int(event.position)),
                    ])
                audited.yield(audit.id)
            }
            try registrar.lambda("data:probe") { call in
                let type = call.arguments.string(0, named: "type") ?? ""
                let id = call.arguments.string(1, named: "id") ?? ""
                let asCaller = try await call.data.read(type, id: id)
                let asServer = try await call.data.server.read(type, id: id)
                let listed = try await call.data.list(type, filter: "record.text != null", sort: "-created", limit: 10)
                return [
                    "as_caller": asCaller?.json ?? .null, "as_server": asServer?.json ?? .null,
                    "listed": .array(listed.map { .string($0.id) }), "server": .bool(call.data.server.actsAsServer),
                    "caller": .bool(call.data.actsAsServer),
                ]
            }
            try registrar.lambda("data:note") { call in
                let note = try await call.data.create("notes", fields: ["text": call.arguments.value(0, named: "text") ?? .null])
                return note.json
            }
        }
    }

    static func send(
        _ base: URL, _ method: HTTPRequest.Method, _ path: String, token: String? = nil, body: JSONValue? = nil
    ) async throws -> ClientResponse {
        try await PrivateRecordsTests.send(base, method, path, token: token, body: body)
    }

    @Test("the demo's notes hook counts words on create, replace and patch, and refuses a note without text")
    func demoNotes() async throws {
        try await withAuthFixture { fixture in
            let base = fixture.server.baseURL
            let created = try await Self.send(base, .post, "/records/notes", body: ["text": "buy  milk\tand\nbread"])
            #expect(created.status == 201)
            let note = try created.json()
            #expect(note["words"] == 4)
            let id = try #require(note["id"]?.stringValue)
            let patched = try await Self.send(base, .patch, "/records/notes/\(id)", body: ["text": "just two"])
            #expect(try patched.json()["words"] == 2)
            // A patch of another field keeps the count of the text it leaves.
            let tagged = try await Self.send(base, .patch, "/records/notes/\(id)", body: ["tag": "home", "words": 99])
            #expect(try tagged.json()["words"] == 2)
            let replaced = try await Self.send(base, .put, "/records/notes/\(id)", body: ["text": "one"])
            #expect(try replaced.json()["words"] == 1)
            for body: JSONValue in [[:], ["text": ""], ["text": " \n\t "], ["text": 42], ["text": .null]] {
                let refused = try await Self.send(base, .post, "/records/notes", body: body)
                #expect(refused.status == 422, "\(body)")
                #expect(try refused.json()["error"]?["code"] == "text_required")
                let emptied = try await Self.send(base, .put, "/records/notes/\(id)", body: body)
                #expect(emptied.status == 422)
            }
            let removed = try await Self.send(base, .patch, "/records/notes/\(id)", body: ["text": .null])
            #expect(removed.status == 422)
            // Nothing refused was stored: one note, still "one".
            let list = try await Self.send(base, .get, "/records/notes?page=1").json()
            #expect(list["total"] == 1)
            #expect(list["results"]?[0]?["text"] == "one")
            #expect(list["results"]?[0]?["words"] == 1)
        }
    }

    @Test("before hooks change what is stored, refuse with 422 and their code, and a failing hook writes nothing")
    func beforeHooks() async throws {
        try await withAuthFixture(plugins: [DemoPlugin(), HookPlugin()]) { fixture in
            let base = fixture.server.baseURL
            let ada = try #require(try await fixture.passwordTokens("ada")["access_token"] as? String)
            let created = try await Self.send(base, .post, "/records/stamped", token: ada, body: ["title": "a"])
            #expect(created.status == 201)
            let record = try created.json()
            let id = try #require(record["id"]?.stringValue)
            #expect(record["stamped_by"]?.stringValue?.hasPrefix("u_") == true)
            #expect(record["operation"] == "create")
            // The hook set `id`: a server-owned key is the server's, whatever a hook writes.
            #expect(id != "not-the-id")
            let anonymous = try await Self.send(base, .post, "/records/stamped", body: ["title": "b"])
            #expect(try anonymous.json()["stamped_by"] == "anonymous")
            let patched = try await Self.send(base, .patch, "/records/stamped/\(id)", token: ada, body: ["title": "c"])
            #expect(try patched.json()["operation"] == "update")

            let bad = try await Self.send(base, .post, "/records/stamped", token: ada, body: ["bad": true])
            #expect(bad.status == 422)
            #expect(try bad.json()["error"]?["code"] == "bad_record")
            let exploded = try await Self.send(base, .patch, "/records/stamped/\(id)", token: ada, body: ["explode": true])
            #expect(exploded.status == 500)
            #expect(try exploded.json()["error"]?["code"] == "hook_failed")
            let current = try await Self.send(base, .get, "/records/stamped/\(id)", token: ada).json()
            #expect(current["title"] == "c")
            #expect(current["explode"] == nil)

            _ = try await Self.send(base, .patch, "/records/stamped/\(id)", token: ada, body: ["locked": true])
            let locked = try await Self.send(base, .delete, "/records/stamped/\(id)", token: ada)
            #expect(locked.status == 422)
            #expect(try locked.json()["error"]?["details"]?["id"]?.stringValue == id)
            #expect(try await Self.send(base, .get, "/records/stamped/\(id)", token: ada).status == 200)
            _ = try await Self.send(base, .patch, "/records/stamped/\(id)", token: ada, body: ["locked": false])
            #expect(try await Self.send(base, .delete, "/records/stamped/\(id)", token: ada).status == 204)
            // The access rules come first: a refused write never reaches the hook.
            let bob = try #require(try await fixture.passwordTokens("bob")["access_token"] as? String)
            let bobs = try #require(
                try await Self.send(base, .post, "/records/stamped", token: bob, body: ["title": "bob's"]).json()["id"]?
                    .stringValue)
            let denied = try await Self.send(base, .patch, "/records/stamped/\(bobs)", token: ada, body: ["bad": true])
            #expect(denied.status == 403)
        }
    }

    @Test("an update whose record changes under its hook runs the hook again on the new version")
    func updateRerunsHook() async throws {
        let plugin = HookPlugin()
        try await withAuthFixture(plugins: [DemoPlugin(), plugin]) { fixture in
            let base = fixture.server.baseURL
            let id = try #require(try await Self.send(base, .post, "/records/counters", body: ["n": 1]).json()["id"]?.stringValue)
            let patched = try await Self.send(base, .patch, "/records/counters/\(id)", body: ["n": 2])
            #expect(patched.status == 200)
            let record = try patched.json()
            // Call 1 (outer) wrote through the data API, which ran call 2; the outer write then
            // found version 2 and ran its hook again: call 3.
            #expect(record["hook_calls"] == 3)
            #expect(record["meanwhile"] == true)
            #expect(record["n"] == 2)
            #expect(patched.headerFields[.eTag] == "\"v3\"")
        }
    }

    @Test("the data API reads as the caller (rules apply) or as the server, and its writes run hooks")
    func dataAPI() async throws {
        try await withAuthFixture(plugins: [DemoPlugin(), HookPlugin()]) { fixture in
            let base = fixture.server.baseURL
            let ada = try #require(try await fixture.passwordTokens("ada")["access_token"] as? String)
            let bob = try #require(try await fixture.passwordTokens("bob")["access_token"] as? String)
            let secret = try await Self.send(
                base, .post, "/records/diary?visibility=private", token: ada, body: ["text": "secret"])
            let id = try #require(try secret.json()["id"]?.stringValue)
            _ = try await Self.send(base, .post, "/records/diary", token: bob, body: ["text": "open"])
            func probe(_ token: String?) async throws -> JSONValue {
                let reply = try await Self.send(
                    base, .post, "/lambdas/data:probe", token: token, body: ["args": ["type": "diary", "id": .string(id)]])
                #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
                return try reply.json()["result"] ?? .null
            }
            let owner = try await probe(ada)
            #expect(owner["as_caller"]?["text"] == "secret")
            #expect(owner["listed"]?.arrayValue?.count == 2)
            #expect(owner["server"] == true)
            #expect(owner["caller"] == false)
            for token in [bob, nil] {
                let other = try await probe(token)
                #expect(other["as_caller"] == .null)
                #expect(other["as_server"]?["text"] == "secret")
                #expect(other["listed"]?.arrayValue?.count == 1)
            }
            // A create through the data API runs the type's before hooks.
            let note = try await Self.send(base, .post, "/lambdas/data:note", token: ada, body: ["args": ["three little words"]])
            #expect(try note.json()["result"]?["words"] == 3)
            let empty = try await Self.send(base, .post, "/lambdas/data:note", token: ada, body: ["args": [""]])
            #expect(empty.status == 422)
            #expect(try empty.json()["error"]?["code"] == "text_required")
        }
    }

    @Test("an after hook runs after commit, away from the request, and writes through the data API")
    func afterHook() async throws {
        let plugin = HookPlugin()
        try await withAuthFixture(
            plugins: [DemoPlugin(), plugin],
            configure: { $0.background = BackgroundWorkConfiguration(pollInterval: .milliseconds(20)) }
        ) { fixture in
            let base = fixture.server.baseURL
            let created = try await Self.send(base, .post, "/records/watched", body: ["a": 1])
            let id = try #require(try created.json()["id"]?.stringValue)
            #expect(try await Self.send(base, .delete, "/records/watched/\(id)").status == 204)
            var audits: [String] = []
            for await audit in plugin.audits {
                audits.append(audit)
                if audits.count == 2 { break }
            }
            let list = try await Self.send(base, .get, "/records/audits?page=1&sort=created").json()
            let rows = list["results"]?.arrayValue ?? []
            #expect(rows.map { $0["operation"] } == ["create", "delete"])
            #expect(rows.allSatisfy { $0["record"]?.stringValue == id })
            #expect(rows.map { $0["id"]?.stringValue } == audits.map { Optional($0) })
        }
    }

    @Test("a batch runs each operation's before hooks in order, and a refusal writes nothing, with its index")
    func batchHooks() async throws {
        let plugin = HookPlugin()
        try await withAuthFixture(plugins: [DemoPlugin(), plugin]) { fixture in
            let base = fixture.server.baseURL
            let note = try #require(
                try await Self.send(base, .post, "/records/notes", body: ["text": "one"]).json()["id"]?.stringValue)
            let counter = try #require(
                try await Self.send(base, .post, "/records/counters", body: ["n": 0]).json()["id"]?.stringValue)
            let batch = try await Self.send(
                base, .post, "/records/batch",
                body: [
                    "operations": [
                        ["method": "POST", "type": "notes", "body": ["text": "a new note"]],
                        ["method": "PATCH", "type": "notes", "id": .string(note), "body": ["text": "now three words"]],
                        // Sees the operation before: the text it leaves has three words.
                        ["method": "PATCH", "type": "notes", "id": .string(note), "body": ["tag": "x"]],
                        // Its hook changes the record under the batch once: the batch is prepared again.
                        ["method": "PATCH", "type": "counters", "id": .string(counter), "body": ["n": 1]],
                    ]
                ])
            #expect(batch.status == 200, "\(String(decoding: batch.body, as: UTF8.self))")
            let results = try batch.json()["results"]?.arrayValue ?? []
            #expect(results.map { $0["record"]?["words"] } == [3, 3, 3, nil])
            #expect(results[2]["record"]?["tag"] == "x")
            #expect(results[3]["record"]?["meanwhile"] == true)
            #expect(results[3]["record"]?["n"] == 1)

            let refused = try await Self.send(
                base, .post, "/records/batch",
                body: [
                    "operations": [
                        ["method": "PATCH", "type": "notes", "id": .string(note), "body": ["text": "changed"]],
                        ["method": "POST", "type": "notes", "body": ["text": "   "]],
                    ]
                ])
            #expect(refused.status == 422)
            #expect(try refused.json()["error"]?["code"] == "text_required")
            #expect(try refused.json()["error"]?["details"]?["index"] == 1)
            let kept = try await Self.send(base, .get, "/records/notes/\(note)").json()
            #expect(kept["text"] == "now three words")
            #expect(try await Self.send(base, .get, "/records/notes?page=1").json()["total"] == 2)
        }
    }

    @Test("writes a hook joins commit in the request's transaction: all of them, or none with the write")
    func joinedWrites() async throws {
        try await withAuthFixture(plugins: [DemoPlugin(), HookPlugin()]) { fixture in
            let base = fixture.server.baseURL
            func count(_ type: String) async throws -> Int {
                try await Self.send(base, .get, "/records/\(type)?page=1").json()["total"]?.intValue ?? -1
            }
            let stock = try #require(
                try await Self.send(base, .post, "/records/stock", body: ["name": "tea"]).json()["id"]?.stringValue)
            let order = try await Self.send(base, .post, "/records/orders", body: ["item": .string(stock)])
            #expect(order.status == 201)
            #expect(try await Self.send(base, .get, "/records/stock/\(stock)").json()["reserved"] == true)
            let logs = try await Self.send(base, .get, "/records/order_log?page=1").json()["results"]?.arrayValue ?? []
            #expect(logs.map { $0["item"] } == [.string(stock)])
            #expect(logs.first?["id"] != "ignored")

            // A joined write that fails undoes the write itself: no order, no log.
            let missing = try await Self.send(base, .post, "/records/orders", body: ["item": "nothing-here"])
            #expect(missing.status == 500)
            #expect(try missing.json()["error"]?["code"] == "hook_failed")
            #expect(try await count("orders") == 1)
            #expect(try await count("order_log") == 1)

            // With an Idempotency-Key, and in a batch (whose answer lists its own operations only).
            var ids: [String?] = []
            for _ in 0..<2 {
                let keyed = try await IdempotencyTests.raw(base, "/records/orders", ["item": .string(stock)], key: "order-1")
                #expect(keyed.status == 201)
                ids.append(try keyed.json()["id"]?.stringValue)
            }
            #expect(ids[0] != nil && ids[0] == ids[1])
            #expect(try await count("order_log") == 2)
            let batch = try await Self.send(
                base, .post, "/records/batch",
                body: ["operations": [["method": "POST", "type": "orders", "body": ["item": .string(stock)]]]])
            #expect(try batch.json()["results"]?.arrayValue?.count == 1)
            #expect(try await count("order_log") == 3)

            // A delete's joined writes: the stock is released and the order's log removed with it.
            let logID = try #require(logs.first?["id"]?.stringValue)
            let id = try #require(try order.json()["id"]?.stringValue)
            #expect(
                try await Self.send(base, .patch, "/records/orders/\(id)", body: ["log": .string(logID)]).status == 200)
            #expect(try await Self.send(base, .delete, "/records/orders/\(id)").status == 204)
            #expect(try await Self.send(base, .get, "/records/stock/\(stock)").json()["reserved"] == false)
            #expect(try await Self.send(base, .get, "/records/order_log/\(logID)").status == 404)
        }
    }
}
