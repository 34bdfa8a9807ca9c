import Foundation
import HTTPTypes
import OutpostTesting
import Testing

@_spi(OutpostInternal) @testable import OutpostCore

struct Address: Codable, Sendable, Equatable {
    var city: String
    var zip: String?
}

struct Pet: Entity, Equatable {
    static let resourcePath = "records/pets"
    var id: String?
    var name: String
    @Transient var isPetted = false
}

struct Person: Entity, Equatable {
    static let resourcePath = "records/people"
    var id: String?
    var name: String
    var email: String?
    var address: Address?
    var tags: [String] = []
    var pets: [Pet] = []
    @Transient var isSelected = false
    @Transient var scratch: [String: String] = [:]
}

/// A type with its own wire form: snake_case keys and a renamed field.
struct Member: Entity, Equatable {
    static let resourcePath = "records/members"
    var id: Int?
    var fullName: String
    var nickname: String?

    enum CodingKeys: String, CodingKey {
        case id
        case fullName = "full_name"
        case nickname = "nick"
    }
}

@Suite("Entities")
struct EntityTests {
    let server = FakeRecordsServer()

    func store(_ configuration: EntityConfiguration = .outpost) -> (EntityStore, ScriptedTransport) {
        let transport = server.transport()
        return (transport.client().entities(configuration), transport)
    }

    @Test("push of a new entity POSTs to the collection and takes the server's id and ETag")
    func pushNew() async throws {
        let (store, transport) = store()
        let ada = try await store.push(Person(name: "Ada", email: "ada@example.com", isSelected: true))
        #expect(ada.id == "r1")
        #expect(ada.etag == "\"1\"")
        #expect(ada.name == "Ada")
        #expect(ada.isSelected == true)  // transient: kept from the local value
        let sent = try #require(transport.requests.first)
        #expect(sent.method == .post)
        #expect(sent.path == "/records/people")
        #expect(sent.json == ["name": "Ada", "email": "ada@example.com", "tags": [], "pets": []])
        #expect(server.record("people", id: "r1")?["name"] == "Ada")
    }

    @Test("push of an existing entity PUTs it whole with If-Match")
    func pushExisting() async throws {
        let (store, transport) = store()
        var ada = try await store.push(Person(name: "Ada"))
        ada.name = "Ada Lovelace"
        ada = try await store.push(ada)
        let put = try #require(transport.requests.last)
        #expect(put.method == .put)
        #expect(put.path == "/records/people/r1")
        #expect(put.header(.ifMatch) == "\"1\"")
        #expect(put.json?["name"] == "Ada Lovelace")
        #expect(put.json?["id"] == "r1")
        #expect(ada.etag == "\"2\"")
        #expect(server.record("people", id: "r1")?["name"] == "Ada Lovelace")
    }

    @Test("a plain entity with an id is pushed with PUT and no If-Match")
    func pushUnconditional() async throws {
        server.seed("people", [["name": "Old", "tags": [], "pets": []]])
        let (store, transport) = store()
        let replaced = try await store.push(Person(id: "r1", name: "New"))
        #expect(replaced.name == "New")
        #expect(transport.requests.last?.header(.ifMatch) == nil)
        #expect(transport.requests.last?.method == .put)
    }

    @Test("patch sends only the changed fields, nulls included, as a merge patch with If-Match")
    func patchSendsChanges() async throws {
        server.seed(
            "people",
            [
                [
                    "name": "Ada", "email": "ada@example.com", "tags": ["math"], "address": ["city": "London", "zip": "W1"],
                    "pets": [],
                ]
            ])
        let (store, transport) = store()
        var ada = try await store.pull(Person.self, id: "r1")
        ada.email = nil
        ada.address?.city = "Paris"
        ada.isSelected = true  // transient: not a change
        #expect(try store.changes(in: ada) == ["email": nil, "address": ["city": "Paris"]])
        ada = try await store.patch(ada)
        let patch = try #require(transport.requests.last)
        #expect(patch.method == .patch)
        #expect(patch.header(.contentType) == "application/merge-patch+json")
        #expect(patch.header(.ifMatch) == "\"1\"")
        #expect(patch.json == ["email": nil, "address": ["city": "Paris"]])
        let stored = try #require(server.record("people", id: "r1"))
        #expect(stored["email"] == nil)
        #expect(stored["address"] == ["city": "Paris", "zip": "W1"])
        #expect(stored["tags"] == ["math"])
        #expect(ada.etag == "\"2\"")
        #expect(ada.email == nil)
        #expect(MergePatch.isEmpty(try store.changes(in: ada)))
    }

    @Test("patch with nothing changed sends nothing")
    func patchNothing() async throws {
        server.seed("people", [["name": "Ada", "tags": [], "pets": []]])
        let (store, transport) = store()
        let ada = try await store.pull(Person.self, id: "r1")
        _ = try await store.patch(ada)
        #expect(transport.requests.count == 1)
    }

    @Test("patch after patch diffs against the last sync, not the first pull")
    func patchTwice() async throws {
        let (store, transport) = store()
        var ada = try await store.push(Person(name: "Ada", tags: ["a"]))
        ada.tags.append("b")
        ada = try await store.patch(ada)
        ada.name = "Ada L."
        ada = try await store.patch(ada)
        #expect(
            transport.requests.map(\.json) == [
                ["name": "Ada", "tags": ["a"], "pets": []], ["tags": ["a", "b"]], ["name": "Ada L."],
            ])
        #expect(server.record("people", id: "r1")?["tags"] == ["a", "b"])
    }

    @Test("patch of an entity without an id is a missingIdentity error, nothing sent")
    func patchWithoutID() async throws {
        let (store, transport) = store()
        await #expect(throws: OutpostError.self) { _ = try await store.patch(Synced(Person(name: "New"))) }
        do {
            _ = try await store.patch(Synced(Person(name: "New")))
        } catch let error as OutpostError {
            #expect(error.code == .missingIdentity)
        }
        #expect(transport.requests.isEmpty)
    }

    @Test("a stale ETag gives a conflict that says to pull and retry")
    func conflict() async throws {
        server.seed("people", [["name": "Ada", "tags": [], "pets": []]])
        let (store, _) = store()
        var mine = try await store.pull(Person.self, id: "r1")
        server.touch("people", id: "r1", field: "name", value: "Someone else")
        mine.name = "Mine"
        do {
            _ = try await store.patch(mine)
            Issue.record("the patch should have failed")
        } catch let error as OutpostError {
            #expect(error.code == .conflict)
            #expect(error.status == 412)
            #expect(error.message.contains("Person r1"))
            #expect(error.suggestion?.contains("Pull it again") == true)
            #expect(error.serverCode == "precondition_failed")
        }
        #expect(server.record("people", id: "r1")?["name"] == "Someone else")
        for operation in ["push", "delete"] {
            do {
                if operation == "push" { _ = try await store.push(mine) } else { try await store.delete(mine) }
                Issue.record("\(operation) should have failed")
            } catch let error as OutpostError {
                #expect(error.code == .conflict, "\(operation)")
            }
        }
        // Pull, reapply, retry: it goes through.
        mine = try await store.pull(mine)
        mine.name = "Mine"
        mine = try await store.patch(mine)
        #expect(server.record("people", id: "r1")?["name"] == "Mine")
    }

    @Test("delete sends If-Match, and the record is gone")
    func delete() async throws {
        let (store, transport) = store()
        let ada = try await store.push(Person(name: "Ada"))
        try await store.delete(ada)
        let delete = try #require(transport.requests.last)
        #expect(delete.method == .delete)
        #expect(delete.path == "/records/people/r1")
        #expect(delete.header(.ifMatch) == "\"1\"")
        #expect(server.record("people", id: "r1") == nil)
        do {
            _ = try await store.pull(Person.self, id: "r1")
            Issue.record("pull should fail")
        } catch let error as OutpostError {
            #expect(error.status == 404)
            #expect(error.code == .httpStatus)
        }
    }

    @Test("pull of an instance sends If-None-Match; 304 keeps local changes, a change replaces them")
    func refresh() async throws {
        server.seed("people", [["name": "Ada", "tags": [], "pets": []]])
        let (store, transport) = store()
        var ada = try await store.pull(Person.self, id: "r1")
        ada.name = "Local edit"
        ada = try await store.pull(ada)
        #expect(transport.requests.last?.header(.ifNoneMatch) == "\"1\"")
        #expect(ada.name == "Local edit")
        #expect(try store.changes(in: ada) == ["name": "Local edit"])
        server.touch("people", id: "r1", field: "name", value: "Remote edit")
        ada = try await store.pull(ada)
        #expect(ada.name == "Remote edit")
        #expect(ada.etag == "\"2\"")
        #expect(MergePatch.isEmpty(try store.changes(in: ada)))
    }

    @Test("nested values and arrays of entities encode and decode, transients left out at every level")
    func nested() async throws {
        let (store, transport) = store()
        let person = Person(
            name: "Ada", address: Address(city: "London", zip: nil), tags: ["x"],
            pets: [Pet(id: "p1", name: "Rex", isPetted: true), Pet(name: "Tom")])
        let pushed = try await store.push(person)
        #expect(
            transport.requests[0].json == [
                "name": "Ada", "address": ["city": "London"], "tags": ["x"],
                "pets": [["id": "p1", "name": "Rex"], ["name": "Tom"]],
            ])
        var expected = person
        expected.id = "r1"
        #expect(pushed.value == expected)  // transients kept at every level
        expected.pets[0].isPetted = false
        let pulled = try await store.pull(Person.self, id: "r1")  // no local value: defaults
        #expect(pulled.value == expected)
    }

    @Test("transient properties are never encoded and never required")
    func transient() throws {
        let encoded = try JSONValue(encoding: Person(name: "A", isSelected: true, scratch: ["k": "v"]))
        #expect(encoded["isSelected"] == nil)
        #expect(encoded["scratch"] == nil)
        let decoded = try JSONDecoder().decode(Person.self, from: Data(#"{"name":"B","tags":[],"pets":[{"name":"P"}]}"#.utf8))
        #expect(decoded.isSelected == false)
        #expect(decoded.scratch == [:])
        #expect(decoded.pets[0].isPetted == false)
        // A value sent by the server for a transient property is not read either.
        let ignored = try JSONDecoder().decode(Pet.self, from: Data(#"{"name":"P","isPetted":true}"#.utf8))
        #expect(ignored.isPetted == false)
    }

    @Test("a type's own CodingKeys are its wire form, and Int ids work")
    func customWireForm() async throws {
        let transport = ScriptedTransport { request, body in
            if request.method == .post {
                return ScriptedTransport.reply(
                    201, json: ["id": 7, "full_name": "Ada Lovelace", "nick": "ada"], headers: [.eTag: "\"a\""])
            }
            return ScriptedTransport.reply(
                200, json: ["id": 7, "full_name": "Ada King", "nick": "ada"], headers: [.eTag: "\"b\""])
        }
        let store = transport.client().entities(.outpost)
        var member = try await store.push(Member(fullName: "Ada Lovelace", nickname: "ada"))
        #expect(transport.requests[0].json == ["full_name": "Ada Lovelace", "nick": "ada"])
        #expect(member.id == 7)
        member.fullName = "Ada King"
        member = try await store.patch(member)
        #expect(transport.requests[1].path == "/records/members/7")
        #expect(transport.requests[1].json == ["full_name": "Ada King"])
    }

    @Test("an envelope key wraps request bodies and is unwrapped from responses")
    func envelope() async throws {
        let transport = ScriptedTransport { request, body in
            let sent = try JSONValue(parsing: body ?? Data("{}".utf8))
            var person = sent["person"]?.objectValue ?? ["name": "Fetched"]
            person["id"] = 42
            return ScriptedTransport.reply(
                request.method == .post ? 201 : 200, json: ["person": .object(person), "precinct": ["id": 1]])
        }
        struct NBPerson: Entity, Equatable {
            static let resourcePath = "api/v1/people"
            var id: Int?
            var name: String
        }
        #expect(NBPerson.entityName == "nBPerson")
        var configuration = EntityConfiguration.nationBuilder
        configuration.itemEnvelope = .key("person")
        let store = transport.client().entities(configuration)
        var person = try await store.push(NBPerson(name: "Ada"))
        #expect(transport.requests[0].json == ["person": ["name": "Ada"]])
        #expect(transport.requests[0].path == "/api/v1/people")
        #expect(person.value == NBPerson(id: 42, name: "Ada"))
        person.name = "Ada L."
        person = try await store.patch(person)  // nationBuilder: PUT of the whole object
        #expect(transport.requests[1].method == .put)
        #expect(transport.requests[1].path == "/api/v1/people/42")
        #expect(transport.requests[1].json == ["person": ["id": 42, "name": "Ada L."]])
        let fetched = try await store.pull(NBPerson.self, id: 42)
        #expect(fetched.name == "Fetched")
    }

    @Test("the entityName envelope uses the type's name, and a missing envelope is a clear decoding error")
    func entityNameEnvelope() async throws {
        let transport = ScriptedTransport { _, _ in ScriptedTransport.reply(200, json: ["name": "Not wrapped", "id": "r1"]) }
        var configuration = EntityConfiguration.outpost
        configuration.itemEnvelope = .entityName
        let store = transport.client().entities(configuration)
        do {
            _ = try await store.pull(Person.self, id: "r1")
            Issue.record("should fail")
        } catch let error as OutpostError {
            #expect(error.code == .decodingFailed)
            #expect(error.codingPath == "person")
        }
    }

    @Test("a 201 without a body takes the id from Location")
    func locationOnly() async throws {
        let transport = ScriptedTransport { _, _ in
            ScriptedTransport.reply(201, headers: [.location: "/records/people/abc%20d", .eTag: "\"1\""])
        }
        let store = transport.client().entities(.outpost)
        var ada = try await store.push(Person(name: "Ada"))
        #expect(ada.id == "abc d")
        #expect(ada.etag == "\"1\"")
        ada.name = "Ada L."
        #expect(try store.changes(in: ada) == ["name": "Ada L."])
    }

    @Test("a configuration's error format is used to read the server's errors")
    func errorFormat() async throws {
        let transport = ScriptedTransport { _, _ in ScriptedTransport.reply(404, json: ["detail": "Not found."]) }
        let store = transport.client().entities(.restFramework)
        do {
            _ = try await store.pull(Person.self, id: "9")
            Issue.record("should fail")
        } catch let error as OutpostError {
            #expect(error.serverMessage == "Not found.")
            #expect(transport.requests[0].path == "/records/people/9/")
        }
    }

    @Test("path templates and percent-encoded ids")
    func paths() {
        #expect(EntityConfiguration.outpost.itemPath(resource: "records/people/", id: "a/b c") == "records/people/a%2Fb%20c")
        #expect(EntityConfiguration.restFramework.collectionPath(resource: "api/people") == "api/people/")
        var custom = EntityConfiguration.outpost
        custom.itemPathTemplate = "node/{id}.json?resource={resource}"
        #expect(custom.itemPath(resource: "node", id: 5) == "node/5.json?resource=node")
        let uuid = UUID()
        #expect(UUID(pathSegment: uuid.pathSegment) == uuid)
    }
}

@Suite("Transient values across push, pull and patch")
struct TransientKeptTests {
    let server = FakeRecordsServer()

    @Test("push, patch and pull keep the local transient values, nested ones included")
    func kept() async throws {
        let store = server.transport().client().entities(.outpost)
        var ada = try await store.push(
            Person(name: "Ada", pets: [Pet(name: "Rex", isPetted: true)], isSelected: true, scratch: ["k": "v"]))
        #expect(ada.isSelected == true)
        #expect(ada.scratch == ["k": "v"])
        #expect(ada.pets[0].isPetted == true)
        ada.email = "ada@example.com"
        ada = try await store.patch(ada)
        #expect(ada.isSelected == true)
        #expect(ada.scratch == ["k": "v"])
        #expect(ada.pets[0].isPetted == true)
        ada.isSelected = false
        ada.scratch = ["other": "value"]
        ada = try await store.pull(Synced(ada.value, snapshot: ada.snapshot, etag: nil))  // no ETag: a full 200
        #expect(ada.isSelected == false)
        #expect(ada.scratch == ["other": "value"])
        #expect(ada.pets[0].isPetted == true)
        #expect(ada.email == "ada@example.com")
    }

    @Test("with an envelope ({\"person\": ...}) and PUT of the whole object")
    func enveloped() async throws {
        var shape = EntityConfiguration.outpost
        shape.itemEnvelope = .entityName
        shape.patchStyle = .putWholeObject
        let transport = ScriptedTransport { request, body in
            // Echoes the entity back inside its envelope, with an id; a GET gets the stored one.
            let stored: [String: JSONValue] = ["name": "Ada L.", "tags": [], "pets": []]
            var object = (body.flatMap { try? JSONValue(parsing: $0) }?["person"]?.objectValue) ?? stored
            object["id"] = "p1"
            return ScriptedTransport.reply(request.method == .post ? 201 : 200, json: ["person": .object(object)])
        }
        let store = transport.client().entities(shape)
        var ada = try await store.push(Person(name: "Ada", isSelected: true))
        #expect(ada.id == "p1")
        #expect(ada.isSelected == true)
        ada.name = "Ada L."
        ada = try await store.patch(ada)
        #expect(ada.isSelected == true)
        ada = try await store.pull(ada)
        #expect(ada.isSelected == true)
    }
}
