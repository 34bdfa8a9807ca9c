import Foundation
import Hummingbird
import Logging
import OutpostCore
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
