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

    @Test(
        "a cursor page and a numbered page each match exactly one branch of the list's oneOf, and the first that decodes is theirs"
    )
    func listPagesMatchOneBranch() async throws {
        try await withLiveServer { server, client in
            for n in 1...3 { _ = try await client.send(.post("/records/pages", json: ["n": .int(n)])) }
            let document = try await Document.fetch(client)
            let branches = try #require(
                document.value["paths"]?["/records/{type}"]?["get"]?["responses"]?["200"]?["content"]?["application/json"]?[
                    "schema"]?["oneOf"]?.arrayValue)
            let names = branches.compactMap { $0["$ref"]?.stringValue?.split(separator: "/").last.map(String.init) }
            #expect(names == ["NumberedPage", "CursorPage"])
            let schemas = try names.map { try #require(document.value["components"]?["schemas"]?[$0]) }
            let answers: [(path: String, branch: String)] = [
                ("/records/pages?limit=1", "CursorPage"), ("/records/pages?limit=1&sort=-updated&n=2", "CursorPage"),
                ("/records/pages?page=1&per_page=1", "NumberedPage"), ("/records/pages?page=9&per_page=2&n=1", "NumberedPage"),
            ]
            for (path, branch) in answers {
                let page = try await client.send(.get(path), decoding: JSONValue.self)
                let matching = zip(names, schemas).filter { SchemaCheck(document: document.value).validates(page, $0.1) }
                #expect(matching.map(\.0) == [branch], "\(path) matches \(matching.map(\.0))")
                // A generated client tries the branches in order and keeps the first that decodes,
                // where a nullable required member may be missing: that must be the right one too.
                let decoding = zip(names, schemas).first { SchemaCheck(document: document.value).decodes(page, $0.1) }
                #expect(decoding?.0 == branch, "\(path) decodes first as \(decoding?.0 ?? "nothing")")
            }
        }
    }

    /// The part of JSON Schema the list's branches use: `type` (one or a list), `required`,
    /// `properties`, `additionalProperties: false`, `items`, `minimum` and local `$ref`s.
    struct SchemaCheck {
        let document: JSONValue

        func resolve(_ schema: JSONValue) -> JSONValue {
            guard let ref = schema["$ref"]?.stringValue, ref.hasPrefix("#/") else { return schema }
            return ref.dropFirst(2).split(separator: "/").reduce(document as JSONValue?) { $0?[String($1)] } ?? .null
        }

        static func typeName(_ value: JSONValue) -> String {
            switch value {
            case .null: "null"
            case .bool: "boolean"
            case .int, .largeInteger: "integer"
            case .double: "number"
            case .string: "string"
            case .array: "array"
            case .object: "object"
            }
        }

        func validates(_ value: JSONValue, _ unresolved: JSONValue) -> Bool {
            let schema = resolve(unresolved)
            if let type = schema["type"] {
                let allowed = type.stringValue.map { [$0] } ?? (type.arrayValue ?? []).compactMap(\.stringValue)
                let name = Self.typeName(value)
                guard allowed.contains(name) || (name == "integer" && allowed.contains("number")) else { return false }
            }
            if let minimum = schema["minimum"]?.intValue, case .int(let number) = value, number < minimum { return false }
            if case .array(let items) = value, let itemSchema = schema["items"] {
                guard items.allSatisfy({ validates($0, itemSchema) }) else { return false }
            }
            guard case .object(let members) = value else { return true }
            let properties = schema["properties"]?.objectValue ?? [:]
            let required = (schema["required"]?.arrayValue ?? []).compactMap(\.stringValue)
            guard required.allSatisfy({ members[$0] != nil }) else { return false }
            if schema["additionalProperties"] == false, !members.keys.allSatisfy({ properties[$0] != nil }) { return false }
            return members.allSatisfy { key, member in properties[key].map { validates(member, $0) } ?? true }
        }

        /// What a generated Codable type accepts: a required member whose type allows null is
        /// optional there and may be missing; extra members fail only with `additionalProperties: false`.
        func decodes(_ value: JSONValue, _ unresolved: JSONValue) -> Bool {
            let schema = resolve(unresolved)
            guard case .object(let members) = value else { return false }
            let properties = schema["properties"]?.objectValue ?? [:]
            for name in (schema["required"]?.arrayValue ?? []).compactMap(\.stringValue) where members[name] == nil {
                let type = properties[name].map(resolve)?["type"]
                let nullable = type?.stringValue == "null" || (type?.arrayValue ?? []).contains("null")
                if !nullable { return false }
            }
            if schema["additionalProperties"] == false, !members.keys.allSatisfy({ properties[$0] != nil }) { return false }
            return members.allSatisfy { key, member in properties[key].map { validates(member, $0) } ?? true }
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
