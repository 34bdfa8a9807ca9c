import Foundation
import Hummingbird
import Logging
@_spi(OutpostInternal) import OutpostCore
import OutpostTestSupport
import Testing

@testable import OutpostServer

@Suite("The OpenAPI document keeps in step with the router", .closesWhatItOpens)
struct OpenAPIDocumentTests {
    static let methods: Set<String> = ["get", "put", "post", "delete", "patch", "head", "options", "trace"]

    /// `{name}` and `:name` both become `{}` so that parameter names do not matter.
    static func normalise(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).map { segment in
            segment.hasPrefix(":") || (segment.hasPrefix("{") && segment.hasSuffix("}")) ? "{}" : String(segment)
        }.joined(separator: "/")
    }

    @Test("every route the server has is described, and nothing else")
    func routesAreDescribed() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-openapi-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let storage = try await SQLiteStorage.open(
            path: folder.appendingPathComponent("db.sqlite").path, logger: Logger(label: "test"))
        let server = try OutpostServer(configuration: ServerConfiguration(port: 0))
        let router: Router<OutpostRequestContext>
        do {
            try await storage.migrate()
            router = try await server.makeRouter(storage: storage)
        } catch {
            try await storage.close()
            throw error
        }
        let routes = Set(router.routes.map { "\($0.method.rawValue.lowercased()) \(Self.normalise($0.path.description))" })

        let document = try JSONValue(parsing: Data(OpenAPIDocument.json.utf8))
        #expect(document["openapi"] == "3.1.0")
        var described = Set<String>()
        for (path, item) in document["paths"]?.objectValue ?? [:] {
            for method in (item.objectValue ?? [:]).keys where Self.methods.contains(method) {
                described.insert("\(method) \(Self.normalise(path))")
            }
        }
        #expect(!routes.isEmpty)
        #expect(
            routes.subtracting(described).isEmpty,
            "Routes missing from the OpenAPI document: \(routes.subtracting(described).sorted())")
        #expect(
            described.subtracting(routes).isEmpty, "Documented routes the server lacks: \(described.subtracting(routes).sorted())"
        )
        try await storage.close()
    }

    /// Every operation in the document, as `METHOD path` and its object.
    static func operations() throws -> [(name: String, operation: JSONValue)] {
        let document = try JSONValue(parsing: Data(OpenAPIDocument.json.utf8))
        var found: [(String, JSONValue)] = []
        for (path, item) in document["paths"]?.objectValue ?? [:] {
            for (method, operation) in item.objectValue ?? [:] where methods.contains(method) {
                found.append(("\(method.uppercased()) \(path)", operation))
            }
        }
        return found.sorted { $0.0 < $1.0 }
    }

    @Test("every operation has a readable camelCase operationId, and no two share one")
    func operationIDs() throws {
        let operations = try Self.operations()
        #expect(operations.count >= 30)
        var seen: [String: String] = [:]
        for (name, operation) in operations {
            let id = try #require(operation["operationId"]?.stringValue, "\(name) has no operationId")
            #expect(
                id.first?.isLowercase == true && id.count >= 4 && id.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) },
                "\(name): '\(id)' is not camelCase")
            #expect(seen[id] == nil, "\(name) repeats the operationId '\(id)' of \(seen[id] ?? "")")
            seen[id] = name
        }
        #expect(seen["callLambda"] == "POST /lambdas/{name}")
        #expect(seen["listRecords"] == "GET /records/{type}")
        #expect(seen["listChanges"] == "GET /records/{type}/changes")
        #expect(seen["patchRecord"] == "PATCH /records/{type}/{id}")
        #expect(seen["putFile"] == "PUT /files/{name}")
    }

    /// Walks every value of the document with its location.
    static func walk(_ value: JSONValue, at location: String, _ visit: (String, JSONValue) -> Void) {
        visit(location, value)
        switch value {
        case .object(let members): for (key, member) in members { walk(member, at: location + "/" + key, visit) }
        case .array(let items): for (index, item) in items.enumerated() { walk(item, at: location + "/\(index)", visit) }
        default: break
        }
    }

    @Test("media type objects hold only what OpenAPI 3.1 allows there (a description goes on the response)")
    func mediaTypes() throws {
        let document = try JSONValue(parsing: Data(OpenAPIDocument.json.utf8))
        let allowed: Set<String> = ["schema", "example", "examples", "encoding"]
        var checked = 0
        Self.walk(document, at: "") { location, value in
            guard location.hasPrefix("/paths/") || location.hasPrefix("/components/"), location.hasSuffix("/content"),
                !location.contains("/properties/"), let types = value.objectValue
            else { return }
            for (type, media) in types {
                checked += 1
                let extra = Set(media.objectValue?.keys.map { $0 } ?? []).subtracting(allowed).filter { !$0.hasPrefix("x-") }
                #expect(extra.isEmpty, "\(location)/\(type) has \(extra.sorted())")
            }
        }
        #expect(checked > 20)
    }

    @Test("the list's answer branches exclude each other: page numbers first, each with exactly its members")
    func listBranches() throws {
        let document = try JSONValue(parsing: Data(OpenAPIDocument.json.utf8))
        let oneOf = document["paths"]?["/records/{type}"]?["get"]?["responses"]?["200"]?["content"]?["application/json"]?[
            "schema"]?["oneOf"]
        #expect(
            oneOf == [["$ref": "#/components/schemas/NumberedPage"], ["$ref": "#/components/schemas/CursorPage"]])
        let schemas = document["components"]?["schemas"]
        for name in ["NumberedPage", "CursorPage"] {
            let schema = try #require(schemas?[name])
            #expect(schema["additionalProperties"] == false, "\(name) must allow no other member")
            let required = Set((schema["required"]?.arrayValue ?? []).compactMap(\.stringValue))
            let properties = Set(schema["properties"]?.objectValue?.keys.map { $0 } ?? [])
            #expect(required == properties, "\(name): every member is always sent")
        }
        // What a cursor page lacks is required and never null in a numbered page, so no cursor
        // page decodes as one even where nullable members are optional.
        for member in ["total", "total_pages", "page", "per_page"] {
            #expect(schemas?["NumberedPage"]?["properties"]?[member]?["type"] == "integer")
        }
    }
}

@Suite("Path parameters", .closesWhatItOpens)
struct PathParameterTests {
    @Test(
        "percent-encoding decodes once, to UTF-8",
        arguments: [
            ("hello%3Asomeone", "hello:someone"), ("hello%3asomeone", "hello:someone"), ("plain", "plain"), ("a+b", "a+b"),
            ("a%2Fb", "a/b"), ("%25", "%"), ("%253A", "%3A"), ("caf%C3%A9", "café"), ("%00", "\u{0}"),
        ])
    func decodes(encoded: String, decoded: String) {
        #expect(OutpostRequestContext.percentDecoded(encoded) == decoded)
    }

    @Test(
        "a '%' without two hex digits, or bytes that are not UTF-8, are refused",
        arguments: ["%", "a%2", "%zz", "%G0", "%FF", "%C3", "%E9x"])
    func refuses(encoded: String) {
        #expect(OutpostRequestContext.percentDecoded(encoded) == nil)
    }
}

@Suite("Plugin registration", .closesWhatItOpens)
struct PluginRegistrarTests {
    struct Named: ServerPlugin {
        var identifier: String
        var lambdaName: String
        func register(into registrar: inout PluginRegistrar) throws {
            try registrar.lambda(lambdaName) { _ in .null }
        }
    }

    @Test("valid names are accepted", arguments: ["hello:someone", "a", "x.y-z_1", String(repeating: "n", count: 128)])
    func validNames(name: String) throws {
        _ = try OutpostServer(configuration: .init(port: 0), plugins: [Named(identifier: "p", lambdaName: name)])
    }

    @Test(
        "invalid names are refused with a reason",
        arguments: ["", "has space", "slash/name", "é", String(repeating: "n", count: 129)])
    func invalidNames(name: String) throws {
        let error = try #require(throws: ServerError.self) {
            _ = try OutpostServer(configuration: .init(port: 0), plugins: [Named(identifier: "p", lambdaName: name)])
        }
        #expect(error.code == "invalid_lambda_name")
    }

    @Test("two plugins claiming one lambda name is an error naming both")
    func duplicates() throws {
        let error = try #require(throws: ServerError.self) {
            _ = try OutpostServer(
                configuration: .init(port: 0),
                plugins: [Named(identifier: "com.a", lambdaName: "same"), Named(identifier: "com.b", lambdaName: "same")])
        }
        #expect(error.code == "duplicate_lambda")
        #expect(error.message.contains("com.a") && error.message.contains("com.b"))
    }
}

@Suite("Deadlines for plugin code", .closesWhatItOpens)
struct DeadlineTests {
    struct Late: Error {}

    @Test("a fast body returns its value")
    func fast() async throws {
        let value = try await withDeadline(.seconds(5), onTimeout: { Late() }) { 42 }
        #expect(value == 42)
    }

    @Test("a body that never finishes is abandoned at the deadline")
    func slow() async throws {
        await #expect(throws: Late.self) {
            _ = try await withDeadline(.milliseconds(50), onTimeout: { Late() }) {
                try await Task.sleep(for: .seconds(3600))
                return 0
            }
        }
    }

    @Test("a body's error passes through")
    func failing() async throws {
        struct Boom: Error {}
        await #expect(throws: Boom.self) {
            _ = try await withDeadline(.seconds(5), onTimeout: { Late() }) { () async throws -> Int in throw Boom() }
        }
    }
}

@Suite("Record wire form", .closesWhatItOpens)
struct RecordWireTests {
    @Test(
        "timestamps match Foundation's ISO 8601 formatting",
        arguments: [Int64(0), 951_782_400_000, 1_795_241_267_933, 4_102_444_799_999, -1_000])
    func timestamps(milliseconds: Int64) {
        let date = Date(timeIntervalSince1970: (Double(milliseconds) / 1000).rounded(.down))
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        #expect(StoredRecord.timestamp(milliseconds) == formatter.string(from: date))
    }

    @Test("the spliced wire text is the fields plus the server's keys")
    func splice() throws {
        let record = StoredRecord(
            type: "t", id: "abc", owner: nil, body: #"{"a":1,"nested":{"b":[true,null]}}"#, version: 1, createdAt: 0,
            updatedAt: 1000, seq: 1)
        let parsed = try JSONValue(parsing: Data(record.wireText.utf8))
        #expect(
            parsed == [
                "id": "abc", "created_at": "1970-01-01T00:00:00Z", "updated_at": "1970-01-01T00:00:01Z", "a": 1,
                "nested": ["b": [true, nil]],
            ])
        let empty = StoredRecord(type: "t", id: "e", owner: nil, body: "{}", version: 1, createdAt: 0, updatedAt: 0, seq: 2)
        #expect(try JSONValue(parsing: Data(empty.wireText.utf8))["id"] == "e")
    }
}
