import Foundation
import HTTPTypes
import Outpost
import OutpostServer
import OutpostTestSupport
import Testing

/// What Schemathesis (`.ci/schemathesis.sh`) found where the served OpenAPI document and the server
/// disagreed, checked here against a live server and the document it serves.
@Suite("The served OpenAPI document matches what the server answers", .closesWhatItOpens)
struct OpenAPIConformanceTests {
    /// The document as served, and one operation's documented statuses.
    struct Document {
        let value: JSONValue

        static func fetch(_ client: OutpostClient) async throws -> Document {
            Document(value: try await client.send(.get("/openapi.json"), decoding: JSONValue.self))
        }

        func statuses(_ path: String, _ method: String) -> Set<String> {
            Set(value["paths"]?[path]?[method]?["responses"]?.objectValue?.keys.map { $0 } ?? [])
        }

        func required(_ schema: String) -> Set<String> {
            Set((value["components"]?["schemas"]?[schema]?["required"]?.arrayValue ?? []).compactMap(\.stringValue))
        }
    }

    static func send(_ base: URL, _ method: HTTPRequest.Method, _ path: String, token: String? = nil) async throws -> Int {
        try await PrivateRecordsTests.send(
            base, method, path, token: token, body: method == .delete || method == .get ? nil : [:]
        )
        .status
    }

    @Test("/auth/login: an unknown client is 401 invalid_client, an unknown provider 404 unknown_provider")
    func providerLoginErrors() async throws {
        try await withAuthFixture { fixture in
            let client = OutpostClient(configuration: .init(baseURL: fixture.server.baseURL))
            let unknownClient = try await #require(throws: OutpostError.self) {
                _ = try await client.send(
                    .post("/auth/login", json: ["provider": "outpost.test", "client_id": "nobody", "auth_data": [:]]))
            }
            #expect(unknownClient.status == 401)
            #expect(unknownClient.serverCode == "invalid_client")
            let unknownProvider = try await #require(throws: OutpostError.self) {
                _ = try await client.send(
                    .post(
                        "/auth/login",
                        json: ["provider": "com.example.none", "client_id": .string(fixture.publicClient.id), "auth_data": [:]]))
            }
            #expect(unknownProvider.status == 404)
            #expect(unknownProvider.serverCode == "unknown_provider")
            let document = try await Document.fetch(client)
            #expect(document.statuses("/auth/login", "post").isSuperset(of: ["401", "404"]))
            try await client.shutdown()
        }
    }

    @Test("a cursor page and a numbered page each match exactly one branch of the list's oneOf")
    func listPagesMatchOneBranch() async throws {
        try await withLiveServer { server, client in
            _ = try await client.send(.post("/records/pages", json: ["n": 1]))
            let document = try await Document.fetch(client)
            let branches = [document.required("CursorPage"), document.required("NumberedPage")]
            #expect(branches.allSatisfy { !$0.isEmpty })
            for path in ["/records/pages?limit=1", "/records/pages?page=1&per_page=1"] {
                let page = try await client.send(.get(path), decoding: JSONValue.self)
                let keys = Set(page.objectValue?.keys.map { $0 } ?? [])
                let matching = branches.filter { $0.isSubset(of: keys) }
                #expect(matching.count == 1, "\(path) matches \(matching.count) branches")
            }
        }
    }

    @Test("every record route documents the 400 for a bad type or id and the 401 for a bad token")
    func recordErrorsAreDocumented() async throws {
        try await withLiveServer { server, client in
            let document = try await Document.fetch(client)
            let base = server.baseURL
            let created = try await client.send(.post("/records/docs", json: ["n": 1]), decoding: JSONValue.self)
            let id = try #require(created["id"]?.stringValue)
            let operations: [(HTTPRequest.Method, String, String)] = [
                (.get, "/records/{type}", "/records/docs"), (.post, "/records/{type}", "/records/docs"),
                (.get, "/records/{type}/{id}", "/records/docs/\(id)"), (.put, "/records/{type}/{id}", "/records/docs/\(id)"),
                (.patch, "/records/{type}/{id}", "/records/docs/\(id)"), (.delete, "/records/{type}/{id}", "/records/docs/\(id)"),
            ]
            for (method, template, path) in operations {
                let documented = document.statuses(template, method.rawValue.lowercased())
                let badType = try await Self.send(base, method, path.replacingOccurrences(of: "/docs", with: "/no%20such"))
                #expect(badType == 400)
                let badToken = try await Self.send(base, method, path, token: "opa_not-a-token")
                #expect(badToken == 401)
                #expect(
                    documented.isSuperset(of: ["\(badType)", "\(badToken)"]),
                    "\(method) \(template) documents \(documented.sorted())")
            }
            let badID = try await Self.send(base, .get, "/records/docs/not%20an%20id")
            #expect(badID == 400)
            let idSchema = document.value["paths"]?["/records/{type}/{id}"]?["parameters"]?[1]?["schema"]
            #expect(idSchema?["pattern"]?.stringValue == "^[A-Za-z0-9_-]{1,64}$")
        }
    }
}
