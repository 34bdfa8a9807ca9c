import Foundation
import HTTPTypes
import Outpost
import OutpostServer
import OutpostTestSupport
import Synchronization
import Testing

/// A person with a nested entity, a list of them, and a property that never leaves the device.
struct Person: Entity, Equatable {
    static let resourcePath = "records/people"
    var id: String?
    var name: String
    var email: String?
    var address: Address?
    var pets: [Pet]
    @Transient var isSelected: Bool

    init(name: String, email: String? = nil, address: Address? = nil, pets: [Pet] = []) {
        self.name = name
        self.email = email
        self.address = address
        self.pets = pets
        self.isSelected = false
    }
}

struct Address: Codable, Sendable, Equatable {
    var city: String
    var zip: String
}

struct Pet: Entity, Equatable {
    static let resourcePath = "records/pets"
    var id: String?
    var kind: String
}

/// The list item type differs from the entity: a preview with fewer fields (the seed's classOfItems).
struct PersonPreview: Decodable, Sendable { var id: String; var name: String }

@Suite("Records over raw HTTP", .closesWhatItOpens)
struct RecordsProtocolTests {
    @Test("create, read, conditional read, replace, patch, delete")
    func lifecycle() async throws {
        try await withLiveServer { _, client in
            let created = try await client.send(.post("/records/memos", json: ["title": "first", "id": "ignored"]))
            #expect(created.status == 201)
            let etag = try #require(created.headerFields[.eTag])
            let location = try #require(created.headerFields[.location])
            let body = try created.json()
            let id = try #require(body["id"]?.stringValue)
            #expect(id != "ignored")
            #expect(location == "/records/memos/\(id)")
            #expect(body["title"] == "first")
            #expect(body["created_at"]?.stringValue?.hasSuffix("Z") == true)

            let read = try await client.send(.get(location))
            #expect(read.headerFields[.eTag] == etag)
            #expect(try read.json() == body)

            var conditional = Request.get(location)
            conditional.headers[.ifNoneMatch] = etag
            let notModified = try await client.send(conditional)
            #expect(notModified.status == 304)
            #expect(notModified.body.isEmpty)

            var replace = Request.put(location, body: ["title": "second", "tags": ["a"]] as JSONValue)
            replace.headers[.ifMatch] = etag
            let replaced = try await client.send(replace)
            #expect(try replaced.json()["title"] == "second")
            let newTag = try #require(replaced.headerFields[.eTag])
            #expect(newTag != etag)

            var stale = Request.put(location, body: ["title": "lost update"] as JSONValue)
            stale.headers[.ifMatch] = etag
            let conflict = try await #require(throws: OutpostError.self) { _ = try await client.send(stale) }
            #expect(conflict.code == .conflict)
            #expect(conflict.status == 412)

            var patch = Request(
                method: .patch, path: location,
                body: .data(Data(#"{"tags": null, "done": true}"#.utf8), contentType: "application/merge-patch+json"))
            patch.headers[.ifMatch] = newTag
            let patched = try await client.send(patch).json()
            #expect(patched["title"] == "second")
            #expect(patched["done"] == true)
            #expect(patched["tags"] == nil)

            let deleted = try await client.send(.delete(location))
            #expect(deleted.status == 204)
            let gone = try await #require(throws: OutpostError.self) { _ = try await client.send(.get(location)) }
            #expect(gone.status == 404)
            #expect(gone.serverCode == "record_not_found")
        }
    }

    @Test("bad input gets a 400 or 415 that says what to send")
    func badInput() async throws {
        try await withLiveServer { _, client in
            let notObject = try await #require(throws: OutpostError.self) {
                _ = try await client.send(.post("/records/memos", json: [1, 2]))
            }
            #expect(notObject.serverCode == "invalid_record")
            let badType = try await #require(throws: OutpostError.self) {
                _ = try await client.send(.get("/records/no%20spaces"))
            }
            #expect(badType.serverCode == "invalid_type")
            let badID = try await #require(throws: OutpostError.self) { _ = try await client.send(.get("/records/memos/a.b")) }
            #expect(badID.serverCode == "invalid_id")
            let created = try await client.send(.post("/records/memos", json: ["a": 1])).json()
            let path = "/records/memos/\(created["id"]?.stringValue ?? "")"
            let wrongType = try await #require(throws: OutpostError.self) {
                _ = try await client.send(Request(method: .patch, path: path, body: .json(["a": 2])))
            }
            #expect(wrongType.status == 415)
            let notAPatch = try await #require(throws: OutpostError.self) {
                _ = try await client.send(
                    Request(
                        method: .patch, path: path, body: .data(Data("[1]".utf8), contentType: "application/merge-patch+json")))
            }
            #expect(notAPatch.serverCode == "invalid_patch")
            let tooBig = try await #require(throws: OutpostError.self) {
                _ = try await client.send(.get("/records/memos", query: [URLQueryItem(name: "limit", value: "101")]))
            }
            #expect(tooBig.serverCode == "invalid_limit")
            #expect(try await client.send(.get(path)).json()["a"] == 1)
        }
    }

    @Test("page links are this request under the public URL: query sorted and percent-encoded, cursor last")
    func pageLinks() async throws {
        try await withLiveServer { server, client in
            for index in 0..<5 {
                _ = try await client.send(.post("/records/items", json: ["n": .int(index), "tag": "a b/é"]))
            }
            _ = try await client.send(.post("/records/items", json: ["n": 99, "tag": "other"]))
            let query = [URLQueryItem(name: "tag", value: "a b/é"), URLQueryItem(name: "limit", value: "2")]
            let first = try await client.send(.get("/records/items", query: query), decoding: JSONValue.self)
            let next = try #require(first["next_cursor"]?.stringValue)
            let base =
                server.baseURL.absoluteString.hasSuffix("/")
                ? String(server.baseURL.absoluteString.dropLast()) : server.baseURL.absoluteString
            #expect(first["next"]?.stringValue == base + "/records/items?limit=2&tag=a%20b%2F%C3%A9&cursor=" + next)
            #expect(first["previous"] == .null)
            // The link's own query, sent back, is the next page of the same list.
            let nextLink = try #require(first["next"]?.stringValue)
            let link = try #require(URLComponents(string: nextLink))
            let linkQuery = try #require(link.queryItems)
            let second = try await client.send(.get(link.path, query: linkQuery), decoding: JSONValue.self)
            #expect(second["results"]?.arrayValue?.compactMap { $0["n"]?.intValue } == [2, 3])
            let back = try #require(second["prev_cursor"]?.stringValue)
            #expect(second["previous"]?.stringValue == base + "/records/items?limit=2&tag=a%20b%2F%C3%A9&cursor=" + back)
        }
    }

    @Test("cursor pages walk forwards and back, and tampered cursors are refused")
    func cursors() async throws {
        try await withLiveServer { _, client in
            for index in 0..<25 {
                _ = try await client.send(.post("/records/items", json: ["n": .int(index), "even": .bool(index % 2 == 0)]))
            }
            var seen: [Int] = []
            var cursor: String?
            var pages: [JSONValue] = []
            repeat {
                var query = [URLQueryItem(name: "limit", value: "10")]
                if let cursor { query.append(URLQueryItem(name: "cursor", value: cursor)) }
                let page = try await client.send(.get("/records/items", query: query), decoding: JSONValue.self)
                pages.append(page)
                seen += page["results"]?.arrayValue?.compactMap { $0["n"]?.intValue } ?? []
                cursor = page["next_cursor"]?.stringValue
            } while cursor != nil
            #expect(seen == Array(0..<25))
            #expect(pages.count == 3)
            #expect(pages[0]["prev_cursor"] == .null)
            #expect(pages[2]["next_cursor"] == .null)
            #expect(pages[1]["next"]?.stringValue?.hasPrefix("http://127.0.0.1:") == true)

            let back = try #require(pages[2]["prev_cursor"]?.stringValue)
            let previous = try await client.send(
                .get(
                    "/records/items",
                    query: [URLQueryItem(name: "limit", value: "10"), URLQueryItem(name: "cursor", value: back)]),
                decoding: JSONValue.self)
            #expect(previous["results"]?.arrayValue?.compactMap { $0["n"]?.intValue } == Array(10..<20))

            var tampered = Array(back)
            tampered[3] = tampered[3] == "A" ? "B" : "A"
            let refused = try await #require(throws: OutpostError.self) {
                _ = try await client.send(.get("/records/items", query: [URLQueryItem(name: "cursor", value: String(tampered))]))
            }
            #expect(refused.serverCode == "invalid_cursor")
            let otherList = try await #require(throws: OutpostError.self) {
                _ = try await client.send(
                    .get(
                        "/records/items",
                        query: [URLQueryItem(name: "cursor", value: back), URLQueryItem(name: "even", value: "true")]))
            }
            #expect(otherList.serverCode == "invalid_cursor")
        }
    }

    @Test("page numbers carry totals; filters and sort apply to both styles")
    func pageNumbersFiltersSort() async throws {
        try await withLiveServer { _, client in
            for index in 0..<7 {
                _ = try await client.send(
                    .post(
                        "/records/items",
                        json: ["n": .int(index), "even": .bool(index % 2 == 0), "name": .string("item \(index)")]))
            }
            let page = try await client.send(
                .get(
                    "/records/items", query: [URLQueryItem(name: "page", value: "2"), URLQueryItem(name: "per_page", value: "3")]),
                decoding: JSONValue.self)
            #expect(page["total"] == 7)
            #expect(page["total_pages"] == 3)
            #expect(page["page"] == 2)
            #expect(page["results"]?.arrayValue?.compactMap { $0["n"]?.intValue } == [3, 4, 5])

            let evens = try await client.send(
                .get(
                    "/records/items",
                    query: [URLQueryItem(name: "even", value: "true"), URLQueryItem(name: "sort", value: "-created")]),
                decoding: JSONValue.self)
            #expect(evens["results"]?.arrayValue?.compactMap { $0["n"]?.intValue } == [6, 4, 2, 0])
            let byName = try await client.send(
                .get("/records/items", query: [URLQueryItem(name: "name", value: "item 3")]), decoding: JSONValue.self)
            #expect(byName["results"]?.arrayValue?.count == 1)
            let byNumber = try await client.send(
                .get("/records/items", query: [URLQueryItem(name: "n", value: "5"), URLQueryItem(name: "page", value: "1")]),
                decoding: JSONValue.self)
            #expect(byNumber["total"] == 1)
        }
    }

    @Test("two concurrent patches without If-Match both apply")
    func concurrentPatches() async throws {
        try await withLiveServer { _, client in
            let created = try await client.send(.post("/records/counters", json: [:])).json()
            let path = "/records/counters/\(created["id"]?.stringValue ?? "")"
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<10 {
                    group.addTask {
                        _ = try await client.send(
                            Request(
                                method: .patch, path: path,
                                body: .data(Data("{\"f\(index)\": \(index)}".utf8), contentType: "application/merge-patch+json")))
                    }
                }
                try await group.waitForAll()
            }
            let final = try await client.send(.get(path)).json()
            #expect((0..<10).allSatisfy { final["f\($0)"] == .int($0) })
        }
    }
}

@Suite("Entities and pagination through the SDK", .closesWhatItOpens)
struct EntityIntegrationTests {
    @Test("push, pull, patch (only what changed), delete; nested entities; transient properties stay home")
    func lifecycle() async throws {
        try await withLiveServer { _, client in
            let store = client.entities(.outpost)
            var ada = Person(
                name: "Ada", email: "ada@example.com", address: Address(city: "London", zip: "N1"),
                pets: [Pet(id: nil, kind: "cat")])
            ada.isSelected = true
            var synced = try await store.push(ada)
            let id = try #require(synced.id)
            #expect(synced.etag != nil)
            let raw = try await client.send(.get("/records/people/\(id)")).json()
            #expect(raw["address"]?["city"] == "London")
            #expect(raw["pets"]?[0]?["kind"] == "cat")
            #expect(raw["isSelected"] == nil)

            synced.email = nil
            synced.address = Address(city: "Paris", zip: "N1")
            let patch = try store.changes(in: synced)
            #expect(patch == ["email": nil, "address": ["city": "Paris"]])
            synced = try await store.patch(synced)

            let pulled = try await store.pull(Person.self, id: id)
            #expect(pulled.value.email == nil)
            #expect(pulled.value.address?.city == "Paris")
            #expect(pulled.value.pets == [Pet(id: nil, kind: "cat")])
            #expect(pulled.value.isSelected == false)

            // Someone else changes it: our stale copy's patch is a conflict, not a lost update.
            var other = pulled
            other.name = "Ada L."
            _ = try await store.patch(other)
            synced.name = "Ada Lovelace"
            let conflict = try await #require(throws: OutpostError.self) { _ = try await store.patch(synced) }
            #expect(conflict.code == .conflict)

            let fresh = try await store.pull(synced)
            #expect(fresh.value.name == "Ada L.")
            try await store.delete(fresh)
            let gone = try await #require(throws: OutpostError.self) { _ = try await store.pull(Person.self, id: id) }
            #expect(gone.status == 404)
        }
    }

    @Test("items(...) streams every record across cursor pages, lazily, with a limit; page numbers too")
    func listing() async throws {
        let requests = Counter()
        let counting = ClosureMiddleware { request, body, _, next in
            if request.method == .get { requests.increment() }
            return try await next(request, body)
        }
        try await withLiveServer(client: { OutpostClient(configuration: .init(baseURL: $0), middlewares: [counting]) }) {
            _, client in
            let store = client.entities(.outpost)
            for index in 0..<23 { _ = try await store.push(Person(name: "p\(index)")) }

            var names: [String] = []
            for try await person in store.items(ListRequest(Person.self, pageSize: 5)) { names.append(person.name) }
            #expect(names == (0..<23).map { "p\($0)" })
            #expect(requests.current == 5)

            let before = requests.current
            var limited: [String] = []
            for try await preview in store.items(
                ListRequest(resourcePath: "records/people", of: PersonPreview.self, pageSize: 5), limit: 7)
            {
                limited.append(preview.name)
            }
            #expect(limited == (0..<7).map { "p\($0)" })
            #expect(requests.current - before == 2)

            let third = try await store.page(ListRequest(Person.self, pageSize: 5, pagination: .outpostPageNumbers, page: 3))
            #expect(third.items.map(\.name) == (10..<15).map { "p\($0)" })
            #expect(third.info.numberOfPages == 5)
            #expect(third.info.totalItems == 23)
            #expect(third.info.currentPage == 3)
            #expect(!third.info.isLastPage)
        }
    }
}

@Suite("The SDK against a Django-REST-framework-shaped server", .closesWhatItOpens)
struct RestFrameworkShapeTests {
    struct Book: Entity, Equatable {
        static let resourcePath = "books"
        var id: Int?
        var title: String
    }

    @Test("pages follow next links and read count")
    func restFrameworkPages() async throws {
        let (url, stop) = try await RestShapeServer.start(items: 10)
        let client = OutpostClient(configuration: .init(baseURL: url, errorFormat: .restFramework))
        do {
            let store = client.entities(.restFramework)
            var titles: [String] = []
            for try await book in store.items(ListRequest(Book.self, pageSize: 4)) { titles.append(book.title) }
            #expect(titles == (0..<10).map { "Book \($0)" })
            let first = try await store.page(ListRequest(Book.self, pageSize: 4))
            #expect(first.info.totalItems == 10)
            #expect(first.info.numberOfPages == 3)
            #expect(first.info.hasNextPage)
        } catch {
            try? await client.shutdown()
            await stop()
            throw error
        }
        try await client.shutdown()
        await stop()
    }
}
