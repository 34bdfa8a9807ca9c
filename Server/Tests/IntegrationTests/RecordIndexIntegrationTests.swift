import Foundation
import Logging
import Outpost
import OutpostServer
import OutpostTestSupport
import Testing

/// Indexes of record types on a live server: past the server's bound, a list with filter or sort
/// that no declared index serves is 400 `index_required` naming the index; a declared index (from
/// storage or from the rules file) lets it run, on every instance and after a restart. Runs on
/// PostgreSQL with `OUTPOST_TEST_LIVE_BACKEND=postgres`.
@Suite("Record indexes on a live server", .closesWhatItOpens, .timeLimit(.minutes(5)))
struct RecordIndexIntegrationTests {
    /// The bound the servers here run with: a type of more records needs an index for filters and sorts.
    static let bound = 5

    static func list(_ base: URL, _ type: String, _ parameters: [(String, String)]) async throws -> ClientResponse {
        try await PrivateRecordsTests.send(base, .get, ListQueryIntegrationTests.query("/records/\(type)", parameters))
    }

    /// Creates `count` records of `type` with `views` 0, 3, 6, … and `tag` `a` or `b`.
    static func seed(_ base: URL, _ type: String, count: Int) async throws {
        for index in 0..<count {
            let created = try await PrivateRecordsTests.send(
                base, .post, "/records/\(type)", body: ["views": .int(index * 3), "tag": index.isMultiple(of: 2) ? "a" : "b"])
            #expect(created.status == 201)
        }
    }

    /// The ids of every page of a keyset walk, following `next_cursor`.
    static func walk(_ base: URL, _ type: String, _ parameters: [(String, String)]) async throws -> [JSONValue] {
        var records: [JSONValue] = []
        var cursor: String?
        repeat {
            let reply = try await list(base, type, parameters + [("limit", "2")] + (cursor.map { [("cursor", $0)] } ?? []))
            #expect(reply.status == 200, "\(parameters): \(String(decoding: reply.body, as: UTF8.self))")
            let json = try reply.json()
            records += json["results"]?.arrayValue ?? []
            cursor = json["next_cursor"]?.stringValue
        } while cursor != nil && records.count < 100
        return records
    }

    static func configure(_ configuration: inout ServerConfiguration) {
        configuration.unindexedListLimit = bound
    }

    @Test(
        "past the bound, an unindexed filter or sort is 400 index_required naming the field and the command; small types are not")
    func indexRequired() async throws {
        try await withLiveServer(configure: Self.configure) { server, _ in
            let base = server.baseURL
            try await Self.seed(base, "posts", count: Self.bound + 1)
            try await Self.seed(base, "small", count: Self.bound)
            let cases: [([(String, String)], String)] = [
                ([("filter", "record.views > 3")], "index field views of type posts: outpost types index posts views"),
                ([("sort", "-views")], "index field views of type posts: outpost types index posts views"),
                ([("filter", "record.tag == \"a\""), ("sort", "-views")], "outpost types index posts tag views"),
                ([("sort", "views"), ("page", "1")], "outpost types index posts views"),
                ([("filter", "record.views > 3 || record.tag == \"a\"")], "tests no field at the top level"),
            ]
            for (parameters, text) in cases {
                let reply = try await Self.list(base, "posts", parameters)
                #expect(reply.status == 400, "\(parameters)")
                let error = try reply.json()["error"]
                #expect(error?["code"]?.stringValue == "index_required", "\(parameters)")
                #expect(
                    error?["message"]?.stringValue?.contains(text) == true,
                    "\(parameters): \(error?["message"]?.stringValue ?? "")")
            }
            let details = try await Self.list(base, "posts", [("sort", "-views")]).json()["error"]?["details"]
            #expect(details?["fields"] == ["views"])
            #expect(details?["command"]?.stringValue == "outpost types index posts views")
            // A small type, plain lists, and the equality filters run as before.
            for (type, parameters) in [
                ("small", [("filter", "record.views > 3"), ("sort", "-views")]), ("posts", []), ("posts", [("sort", "-created")]),
                ("posts", [("views", "3")]), ("posts", [("sort", "id")]),
            ] {
                let reply = try await Self.list(base, type, parameters)
                #expect(reply.status == 200, "\(type) \(parameters): \(String(decoding: reply.body, as: UTF8.self))")
            }
            #expect(try await Self.list(base, "posts", [("views", "3")]).json()["results"]?.arrayValue?.count == 1)
        }
    }

    @Test("an index declared in storage serves the list on a running server; pages are in order")
    func declaredIndexServes() async throws {
        try await withLiveServer(configure: Self.configure) { server, _ in
            let base = server.baseURL
            try await Self.seed(base, "posts", count: 9)
            let storage = try await server.openStorage()
            do {
                try await storage.createRecordIndex(try RecordIndex(type: "posts", fields: ["views"]))
                try await storage.createRecordIndex(try RecordIndex(type: "posts", fields: ["tag", "views"]))
                try await storage.close()
            } catch {
                try? await storage.close()
                throw error
            }
            let sorted = try await Self.walk(base, "posts", [("filter", "record.views > 3"), ("sort", "-views")])
            #expect(sorted.compactMap { $0["views"]?.intValue } == [24, 21, 18, 15, 12, 9, 6])
            let tagged = try await Self.walk(base, "posts", [("filter", "record.tag == \"a\""), ("sort", "-views")])
            #expect(tagged.compactMap { $0["views"]?.intValue } == [24, 18, 12, 6, 0])
            let byTime = try await Self.walk(base, "posts", [("filter", "record.views >= 21")])
            #expect(byTime.compactMap { $0["views"]?.intValue } == [21, 24])
            // Not served: a filter on another field with the default order.
            #expect(try await Self.list(base, "posts", [("filter", "record.title == null")]).status == 400)
        }
    }

    @Test("indexes in the rules file are built at start; another instance and a restart without them still use them")
    func rulesFileIndexes() async throws {
        let rules = try AccessRuleSet(
            json: Data(
                #"""
                {"types": {"*": {"create": "true"}, "posts": {"read": "true", "indexes": [["views"], ["tag", "views"]]}}}
                """#.utf8))
        #expect(
            rules.indexes == [
                try RecordIndex(type: "posts", fields: ["views"]), try RecordIndex(type: "posts", fields: ["tag", "views"]),
            ])
        let first = try await LiveServer.start { configuration in
            Self.configure(&configuration)
            configuration.accessRules = rules
        }
        do {
            try await Self.seed(first.baseURL, "posts", count: 8)
            let parameters = [("filter", "record.views > 3"), ("sort", "-views")]
            #expect(try await Self.walk(first.baseURL, "posts", parameters).count == 6)
            // A second server on the same database, whose rules declare no index.
            var configuration = ServerConfiguration(
                host: "127.0.0.1", port: 0, databasePath: first.folder.appendingPathComponent("test.sqlite").path,
                logger: Logger(label: "outpost.test.second"))
            configuration.logger.logLevel = .critical
            configuration.accessRules = try LiveServer.permissiveRules()
            Self.configure(&configuration)
            first.shareDatabase(with: &configuration)
            let second = try await OutpostServer(configuration: configuration).start()
            await first.running.stop()
            let ids = try await Self.walk(second.baseURL, "posts", parameters).compactMap { $0["views"]?.intValue }
            await second.stop()
            #expect(ids == [21, 18, 15, 12, 9, 6])
            let storage = try await first.openStorage()
            let declared = try await storage.recordIndexes(type: "posts")
            try await storage.close()
            #expect(declared.map(\.fields) == [["tag", "views"], ["views"]])
        } catch {
            await first.stop()
            throw error
        }
        await first.stop()
    }

    @Test("a rules file with a bad index is refused with a message naming the place and what to write")
    func badRulesFileIndexes() throws {
        let cases: [(String, String)] = [
            (#"{"types": {"posts": {"indexes": [["views'); DROP TABLE records; --"]]}}}"#, "types.posts.indexes"),
            (#"{"types": {"posts": {"indexes": [["a", "b", "c", "d"]]}}}"#, "1 to 3 fields"),
            (#"{"types": {"posts": {"indexes": ["views"]}}}"#, "each a list of 1–3 field names"),
            (#"{"types": {"*": {"indexes": [["views"]]}}}"#, "belong to a record type"),
            (#"{"types": {"posts": {"indexes": [["id"]]}}}"#, "indexed already"),
            (#"{"types": {"posts": {"indexes": [[1]]}}}"#, "field names"),
        ]
        for (json, text) in cases {
            let error = #expect(throws: AccessRuleError.self, "\(json)") {
                try AccessRuleSet(json: Data(json.utf8), file: "rules.json")
            }
            #expect(error?.message.contains(text) == true, "\(json): \(error?.message ?? "")")
            #expect(error?.message.hasPrefix("rules.json: ") == true)
        }
        // Files without indexes stay valid.
        #expect(try AccessRuleSet(json: Data(#"{"types": {"posts": {"read": "true"}}}"#.utf8)).indexes.isEmpty)
    }
}
