import Foundation
import HTTPTypes
import OutpostTesting
import Synchronization
import Testing

@_spi(OutpostInternal) @testable import OutpostCore

/// ``EntityStore/batch(_:idempotencyKey:_:)`` and ``EntityStore/enqueueBatch(_:in:_:)``: the request
/// a batch makes, the results it reads, and the errors it reports. The live server's side is in the
/// server package's `BatchWriteIntegrationTests`.
@Suite("Entity batches")
struct EntityBatchTests {
    /// Answers `POST /records/batch` as an Outpost server does when every operation succeeds: new
    /// ids `n0`, `n1`, … for creates, the id sent otherwise, version 1 for creates and 2 for changes.
    /// A patch applies to the record `stored` holds under its id.
    static func batchServer(_ stored: [String: JSONValue] = [:]) -> ScriptedTransport {
        ScriptedTransport(answering: { exchange in
            guard exchange.method == .post, exchange.path == "/records/batch",
                case .array(let operations)? = exchange.json?["operations"]
            else { return ScriptedTransport.reply(404) }
            let results = operations.enumerated().map { index, operation -> JSONValue in
                let id = operation["id"] ?? .string("n\(index)")
                var record: [String: JSONValue] = ["id": id]
                let base = operation["method"] == "PATCH" ? stored[id.stringValue ?? ""] ?? [:] : [:]
                if case .object(let body) = MergePatch.apply(operation["body"] ?? [:], to: base) {
                    record.merge(body) { _, new in new }
                }
                switch operation["method"] {
                case "DELETE": return ["status": 204]
                case "POST": return ["status": 201, "record": .object(record), "etag": "\"v1\""]
                default: return ["status": 200, "record": .object(record), "etag": "\"v2\""]
                }
            }
            return ScriptedTransport.reply(200, json: ["results": .array(results)])
        })
    }

    @Test("the builder sends one POST with every operation in order, and the results come back typed, in order")
    func requestAndResults() async throws {
        let transport = Self.batchServer(["p1": ["name": "Ada", "email": "ada@example.com", "tags": [], "pets": []]])
        let store = transport.client().entities()
        var ada = Synced(Person(id: "p1", name: "Ada", email: "ada@example.com"), snapshot: nil, etag: "\"v1\"")
        ada.snapshot = try JSONValue(encoding: ada.value)
        ada.value.email = nil
        let grace = Synced(Person(id: "p2", name: "Grace"), snapshot: nil, etag: nil)
        let results = try await store.batch(Person.self, idempotencyKey: "key-1") { batch in
            batch.create(Person(name: "Alan", isSelected: true))
            try batch.patch(ada)
            try batch.replace(grace)
            batch.delete(id: "p3", ifMatch: "\"v4\"")
        }
        let sent = try #require(transport.requests.first)
        #expect(transport.requests.count == 1)
        #expect(sent.method == .post)
        #expect(sent.path == "/records/batch")
        #expect(sent.header(.idempotencyKey) == "key-1")
        let operations = try #require(sent.json?["operations"]?.arrayValue)
        #expect(operations.count == 4)
        #expect(operations[0] == ["method": "POST", "type": "people", "body": ["name": "Alan", "tags": [], "pets": []]])
        #expect(
            operations[1] == ["method": "PATCH", "type": "people", "id": "p1", "body": ["email": .null], "if_match": "\"v1\""])
        #expect(operations[2]["method"] == "PUT")
        #expect(operations[2]["if_match"] == nil)
        #expect(operations[2]["body"]?["name"] == "Grace")
        #expect(operations[3] == ["method": "DELETE", "type": "people", "id": "p3", "if_match": "\"v4\""])

        #expect(results.count == 4)
        guard case .created(let alan) = results[0], case .patched(let patched) = results[1],
            case .replaced(let replaced) = results[2], case .deleted(let deleted) = results[3]
        else {
            Issue.record("unexpected results: \(results)")
            return
        }
        #expect(alan.value.id == "n0")
        #expect(alan.value.isSelected)  // a transient value stays as it was locally
        #expect(alan.etag == "\"v1\"")
        #expect(patched.value.email == nil)
        #expect(patched.etag == "\"v2\"")
        #expect(try store.changes(in: patched) == .object([:]))
        #expect(replaced.value.name == "Grace")
        #expect(deleted == "p3")
        #expect(results[3].synced == nil)
        #expect(results[0].synced?.value.name == "Alan")
    }

    @Test("without an Idempotency-Key of its own, each batch gets a fresh one")
    func freshKeys() async throws {
        let transport = Self.batchServer()
        let store = transport.client().entities()
        for _ in 0..<2 { _ = try await store.batch(Pet.self) { $0.create(Pet(name: "Rex")) } }
        let keys = transport.requests.compactMap { $0.header(.idempotencyKey) }
        #expect(keys.count == 2)
        #expect(Set(keys).count == 2)
    }

    @Test("an empty batch sends nothing; a batch that cannot be sent is refused before it goes out")
    func refusedLocally() async throws {
        let transport = Self.batchServer()
        let store = transport.client().entities()
        #expect(try await store.batch(Pet.self) { _ in }.isEmpty)
        await #expect(throws: OutpostError.self) {
            _ = try await store.batch(Pet.self) { batch in
                for _ in 0...EntityBatch<Pet>.maxOperations { batch.create(Pet(name: "Rex")) }
            }
        }
        do {
            _ = try await store.batch(Pet.self) { batch in try batch.replace(Synced(Pet(name: "no id"))) }
            Issue.record("a replacement without an id was sent")
        } catch let error as OutpostError {
            #expect(error.code == .missingIdentity)
        }
        let restFramework = transport.client().entities(.restFramework)
        do {
            _ = try await restFramework.batch(Pet.self) { $0.create(Pet(name: "Rex")) }
            Issue.record("a batch was sent to a backend without one")
        } catch let error as OutpostError {
            #expect(error.code == .invalidRequest)
        }
        #expect(transport.requests.isEmpty)
    }

    @Test("a refused batch throws the failing operation's error with its index")
    func refusal() async throws {
        let transport = ScriptedTransport(answering: { _ in
            ScriptedTransport.reply(
                412,
                json: [
                    "error": [
                        "code": "precondition_failed", "message": "Record pets/r1 changed",
                        "details": ["index": 1, "current_etag": "\"v3\""],
                    ]
                ])
        })
        let store = transport.client().entities()
        do {
            _ = try await store.batch(Pet.self) { batch in
                batch.create(Pet(name: "Rex"))
                batch.delete(id: "r1", ifMatch: "\"v2\"")
            }
            Issue.record("a refused batch returned")
        } catch let error as OutpostError {
            #expect(error.code == .conflict)
            #expect(error.status == 412)
            #expect(error.details?["index"] == 1)
        }
    }

    @Test("the outbox queues a batch as one entry and replays it with the same Idempotency-Key after a lost reply")
    func outboxEntry() async throws {
        let server = Self.batchServer()
        let lost = Mutex(true)
        let transport = ScriptedTransport { request, body in
            let answer = try await server.send(request, body: body, options: TransportOptions())
            if lost.withLock({ lost in
                defer { lost = false }; return lost
            }) {
                throw OutpostError(.connectionLost, "the reply was lost")
            }
            return answer
        }
        let folder = try OutboxTests.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let client = transport.client()
        let outbox = try await OutboxTests.open(folder.appendingPathComponent("outbox.journal"), client: client)
        let store = client.entities()
        let events = outbox.events()
        let entry = try await store.enqueueBatch(Pet.self, in: outbox) { batch in
            batch.create(Pet(name: "Rex"))
            batch.delete(id: "r9")
        }
        #expect(entry.method == "POST")
        #expect(entry.path == "records/batch")
        #expect(entry.label == "batch of 2 Pet writes")
        #expect(try await outbox.entries.map(\.id) == [entry.id])
        let summary = await outbox.replay()
        #expect(summary.completed == 1)
        let sent = server.requests
        #expect(sent.count == 2)
        #expect(sent.allSatisfy { $0.header(.idempotencyKey) == entry.idempotencyKey })
        #expect(sent.first?.body == sent.last?.body)
        var completion: OutboxCompletion?
        for await event in events {
            if case .completed(let done) = event {
                completion = done
                break
            }
        }
        let results = try store.batchResults(Pet.self, from: try #require(completion))
        #expect(results.count == 2)
        #expect(results[0]?.value == Pet(id: "n0", name: "Rex"))
        #expect(results[0]?.etag == "\"v1\"")
        #expect(results[1] == nil)
        #expect(try await outbox.entries.isEmpty)
        await #expect(throws: OutpostError.self) { try await store.enqueueBatch(Pet.self, in: outbox) { _ in } }
        await outbox.close()
    }
}
