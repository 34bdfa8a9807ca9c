import Foundation
import HTTPTypes
import OutpostTesting
import Testing

@_spi(OutpostInternal) @testable import OutpostCore

/// A Django REST framework model as the SDK sees it.
struct Note: Entity, Equatable {
    static let resourcePath = "notes"
    var id: Int?
    var title: String
    var body: String?
    var meta: [String: Int]?
    var due: String?
}

@Suite("Django REST framework: partial updates, field-map errors, cursor and bare-array lists")
struct RestFrameworkTests {
    static let stored: JSONValue = ["id": 7, "title": "Draft", "body": "text", "meta": ["a": 1, "b": 2], "due": "2026-12-01"]

    @Test("the restFramework preset patches with the changed top-level fields as application/json")
    func partialUpdate() async throws {
        let transport = ScriptedTransport { request, body in
            if request.method == .get { return ScriptedTransport.reply(200, json: Self.stored) }
            var object = Self.stored.objectValue ?? [:]
            for (key, value) in (body.flatMap { try? JSONValue(parsing: $0) }?.objectValue ?? [:]) { object[key] = value }
            return ScriptedTransport.reply(200, json: .object(object))
        }
        let store = transport.client().entities(.restFramework)
        var note = try await store.pull(Note.self, id: 7)
        note.title = "Final"
        note.meta?["a"] = 9
        note.due = nil
        #expect(try store.changes(in: note) == ["title": "Final", "meta": ["a": 9, "b": 2], "due": .null])
        note = try await store.patch(note)
        let patch = try #require(transport.requests.last)
        #expect(patch.method == .patch)
        #expect(patch.path == "/notes/7/")
        #expect(patch.header(.contentType) == "application/json")
        #expect(patch.json == ["title": "Final", "meta": ["a": 9, "b": 2], "due": .null])
        #expect(note.title == "Final")
        #expect(EntityConfiguration.outpost.patchStyle == .mergePatch)  // merge patch stays for backends that speak it
    }

    static let fieldMap: JSONValue = [
        "title": ["This field may not be blank."],
        "non_field_errors": ["The body must not repeat the title."],
        "address": ["city": ["This field is required."]],
        "items": [[:], ["name": ["Ensure this field has no more than 5 characters."]]],
    ]
    static let expectedFields: [String: [String]] = [
        "title": ["This field may not be blank."],
        "non_field_errors": ["The body must not repeat the title."],
        "address.city": ["This field is required."],
        "items[1].name": ["Ensure this field has no more than 5 characters."],
    ]

    @Test("a 400 field map becomes fieldErrors and reads well in the description")
    func fieldMapErrors() async throws {
        let transport = ScriptedTransport { _, _ in ScriptedTransport.reply(400, json: Self.fieldMap) }
        let store = transport.client().entities(.restFramework)
        let thrown = await #expect(throws: OutpostError.self) { try await store.push(Note(title: "")) }
        let error = try #require(thrown)
        #expect(error.fieldErrors == Self.expectedFields)
        #expect(error.serverMessage == nil)
        #expect(error.path == "/notes/")
        let text = error.description
        #expect(text.hasPrefix("POST /notes/: The server answered 400 Bad Request — The body must not repeat the title.; "))
        #expect(text.contains("title: This field may not be blank."))
        #expect(text.contains("items[1].name: Ensure this field has no more than 5 characters."))
        #expect(!text.contains(".."))
        #expect(!text.contains("message says"))
        #expect(text.hasSuffix(". Correct the fields the server named and send the request again"))
    }

    @Test("a plain client reads DRF, OAuth and Outpost error shapes without configuration")
    func plainClientDetectsShapes() async throws {
        let replies: [String: (Int, JSONValue)] = [
            "/fields": (400, ["title": ["This field may not be blank."]]),
            "/detail": (404, ["detail": "Not found."]),
            "/oauth": (400, ["error": "invalid_request", "error_description": "Missing grant_type."]),
            "/outpost": (409, ["error": ["code": "taken", "message": "The name is taken"]]),
        ]
        let transport = ScriptedTransport { request, _ in
            let reply = replies[request.path ?? ""] ?? (500, [:])
            return ScriptedTransport.reply(reply.0, json: reply.1)
        }
        let client = transport.client()  // errorFormat: .outpost, the default
        func failure(_ path: String) async -> OutpostError? {
            await #expect(throws: OutpostError.self) { _ = try await client.send(.get(path)) }
        }
        #expect(await failure("/fields")?.fieldErrors == ["title": ["This field may not be blank."]])
        let detail = await failure("/detail")
        #expect(detail?.serverMessage == "Not found.")
        #expect(
            detail?.description
                == "GET /detail: The server answered 404 Not Found — server said Not found. The server refused the request; its message says what to change"
        )
        let oauth = await failure("/oauth")
        #expect(oauth?.serverCode == "invalid_request")
        #expect(oauth?.serverMessage == "Missing grant_type.")
        #expect(await failure("/outpost")?.serverCode == "taken")
    }

    @Test("with the restFramework format, an Outpost envelope or a detail is a message, not a field map")
    func envelopeIsNoFieldMap() async throws {
        let transport = ScriptedTransport { request, _ in
            request.path == "/detail/"
                ? ScriptedTransport.reply(403, json: ["detail": "You do not have permission to perform this action."])
                : ScriptedTransport.reply(415, json: ["error": ["code": "unsupported_media_type", "message": "send JSON"]])
        }
        var configuration = OutpostClient.Configuration(
            baseURL: URL(string: "http://scripted.test")!, errorFormat: .restFramework)
        configuration.retry.maxAttempts = 1
        let client = OutpostClient(configuration: configuration, transport: transport)
        let envelope = await #expect(throws: OutpostError.self) { _ = try await client.send(.get("envelope/")) }
        #expect(envelope?.serverCode == "unsupported_media_type")
        #expect(envelope?.serverMessage == "send JSON")
        #expect(envelope?.fieldErrors == [:])
        let detail = await #expect(throws: OutpostError.self) { _ = try await client.send(.get("detail/")) }
        #expect(detail?.serverMessage == "You do not have permission to perform this action.")
        #expect(detail?.fieldErrors == [:])
    }

    @Test("without a message there is no promise of one; paths always have their leading slash")
    func descriptions() async throws {
        let transport = ScriptedTransport { _, _ in ScriptedTransport.reply(404) }
        let client = transport.client()
        let thrown = await #expect(throws: OutpostError.self) { _ = try await client.send(.get("notes/9/")) }
        let text = try #require(thrown).description
        #expect(
            text
                == "GET /notes/9/: The server answered 404 Not Found. Check the path and the identifier; the server has nothing there"
        )
        let decoding = await #expect(throws: OutpostError.self) {
            _ = try await ScriptedTransport { _, _ in ScriptedTransport.reply(200, json: ["x": 1]) }.client()
                .send(.get("notes?token=secret"), decoding: [Int].self)
        }
        #expect(decoding?.path == "/notes")
        #expect(
            OutpostError(.invalidRequest, "Bad.", suggestion: "Fix it", method: "GET", path: "a/b?q=1").description
                == "GET /a/b: Bad. Fix it")
        #expect(OutpostError(.invalidRequest, "x", path: "https://h.example/o/token/?code=1").path == "/o/token/")
    }

    @Test("cursor pagination: cursors come out of the links, and pages follow them")
    func cursorPages() async throws {
        let transport = ScriptedTransport { request, _ in
            let query = URLComponents(string: request.path ?? "")?.queryItems ?? []
            let cursor = query.first { $0.name == "cursor" }?.value
            let page: JSONValue =
                cursor == nil
                ? [
                    "next": "http://scripted.test/notes/?cursor=cD0y&page_size=2", "previous": .null,
                    "results": [["id": 1, "title": "one"], ["id": 2, "title": "two"]],
                ]
                : [
                    "next": .null, "previous": "http://scripted.test/notes/?cursor=cj0xJnA9Mw%3D%3D&page_size=2",
                    "results": [["id": 3, "title": "three"]],
                ]
            return ScriptedTransport.reply(200, json: page)
        }
        var shape = EntityConfiguration.restFramework
        shape.pagination = .restFrameworkCursor
        let store = transport.client().entities(shape)
        let first = try await store.page(ListRequest(Note.self, pageSize: 2))
        #expect(first.info.nextCursor == "cD0y")
        #expect(first.info.currentPage == 1)
        let second = try #require(try await store.page(after: first, of: ListRequest(Note.self, pageSize: 2)))
        #expect(second.items.map(\.title) == ["three"])
        #expect(second.info.previousCursor == "cj0xJnA9Mw==")
        #expect(second.info.isLastPage)
        #expect(transport.requests.map(\.query) == [["page_size": "2"], ["page_size": "2", "cursor": "cD0y"]])
        let resumed = try await store.page(ListRequest(Note.self, pageSize: 2, cursor: "cD0y"))
        #expect(resumed.items.map(\.id) == [3])
    }

    @Test("bare-array lists per request, and an error that names the fix when the shape is wrong")
    func bareArrays() async throws {
        let transport = ScriptedTransport { request, _ in
            if request.path?.hasPrefix("/all-notes/") == true {
                return ScriptedTransport.reply(200, json: [["id": 1, "title": "one"], ["id": 2, "title": "two"]])
            }
            return ScriptedTransport.reply(
                200, json: ["count": 1, "next": .null, "previous": .null, "results": [["id": 1, "title": "one"]]])
        }
        let store = transport.client().entities(.restFramework)
        var titles: [String] = []
        for try await note in store.items(ListRequest(resourcePath: "all-notes", of: Note.self, shape: .bareArray)) {
            titles.append(note.title)
        }
        #expect(titles == ["one", "two"])

        let wrapped = await #expect(throws: OutpostError.self) {
            _ = try await store.page(ListRequest(resourcePath: "all-notes", of: Note.self))
        }
        #expect(wrapped?.message == "The list response is a bare JSON array, not an object with a 'results' key")
        #expect(wrapped?.suggestion?.contains("shape: .bareArray") == true)

        let bare = await #expect(throws: OutpostError.self) {
            _ = try await store.page(ListRequest(Note.self, shape: .bareArray))
        }
        #expect(bare?.message == "The list response is a JSON object (keys: count, next, previous, results), not a bare array")
        #expect(bare?.suggestion?.contains(#"shape: .object(itemsKey: "results")"#) == true)
    }
}
