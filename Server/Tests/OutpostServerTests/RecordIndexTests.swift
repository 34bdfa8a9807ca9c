import Foundation
@_spi(OutpostInternal) import OutpostCore
import OutpostExpressions
import OutpostServerTesting
import OutpostTestSupport
import Testing

@testable import OutpostServer

/// Declared indexes of record types on each backend: built idempotently, kept in storage, and
/// read by the planner for a filtered, sorted keyset page (EXPLAIN), then dropped.
@Suite("Record indexes", .closesWhatItOpens, .timeLimit(.minutes(5)))
struct RecordIndexTests {
    static let backends = ScratchDatabase.backends

    /// Creates `count` records of `type` in batches: `views` = `i * 7 % 1000`, `tag` = `t<i % 10>`.
    static func seed(_ storage: any Storage, type: String, count: Int) async throws {
        if let postgres = storage as? PostgresStorage, count > 1000 {
            // Many rows at once, so the planner's statistics are those of a large table.
            try await postgres.execute(
                """
                INSERT INTO records (type, id, owner, body, version, created_at, updated_at)
                SELECT \(type), \(type) || i, NULL,
                       '{"tag":"t' || (i % 10) || '","title":"title ' || i || '","views":' || (i * 7 % 1000) || '}',
                       1, 1700000000000 + i, 1700000000000 + i
                FROM generate_series(0, \(Int64(count - 1))) AS i
                """)
            return
        }
        for start in stride(from: 0, to: count, by: 500) {
            let writes = (start..<min(count, start + 500)).map { i in
                RecordBatchWrite.create(type: type, owner: nil, isPrivate: false) {
                    ["views": .int(i * 7 % 1000), "tag": .string("t\(i % 10)"), "title": .string("title \(i)")]
                }
            }
            _ = try await storage.writeRecords(writes, key: nil, lifetime: .seconds(60)) { _ in
                StoredResponse(status: 200, headers: [], body: Data())
            }
        }
    }

    static func query(filter: String, sort: String) throws -> RecordQuery {
        var query = RecordQuery(type: "posts", limit: 20)
        query.filter = try ListFilter(parsing: filter).predicate
        query.order = try RecordRoutes.order(sort)
        return query
    }

    /// The plan of the first page of `query` after `position`, as the backend explains it.
    static func plan(_ storage: any Storage, _ query: RecordQuery, from position: RecordPosition?) async throws -> String {
        let order = try #require(query.order)
        if let sqlite = storage as? SQLiteStorage {
            let (sql, binds) = sqlite.orderedSQL(query, order: order, from: position, backwards: false, limit: query.limit + 1)
            // A fresh text on the connection that changed the schema: an EXPLAIN reads no table, so
            // SQLite neither prepares a kept one again nor notices on another connection that the
            // schema changed (a query does both).
            return try await sqlite.writer.query("EXPLAIN QUERY PLAN /* \(UUID().uuidString) */ " + sql, binds).compactMap {
                $0.column("detail")?.string
            }
            .joined(separator: "\n")
        }
        let postgres = try #require(storage as? PostgresStorage)
        var statement = PostgresStorage.orderedStatement(
            query, order: order, from: position, backwards: false, limit: query.limit + 1)
        statement.sql = "EXPLAIN " + statement.sql
        return try await postgres.rows(statement.query).map { try $0["QUERY PLAN"].decode(String.self) }
            .joined(separator: "\n")
    }

    /// Whether `plan` reads `index` and sorts nothing itself.
    static func reads(_ plan: String, _ index: RecordIndex) -> Bool {
        plan.contains(index.name) && !plan.contains("TEMP B-TREE") && !plan.contains("Sort Key")
    }

    @Test(
        "a declared index serves filtered, sorted keyset pages (EXPLAIN), answers the same records, and drops",
        arguments: backends)
    func plannerReadsIndex(_ backend: ScratchDatabase.Backend) async throws {
        try await StorageConformanceTests().withStorage(backend) { storage, _ in
            let postgres = storage is PostgresStorage
            try await Self.seed(storage, type: "posts", count: postgres ? 100_000 : 3000)
            try await Self.seed(storage, type: "others", count: postgres ? 20_000 : 500)
            let views = try RecordIndex(type: "posts", fields: ["views"])
            let tagViews = try RecordIndex(type: "posts", fields: ["tag", "views"])
            for index in [views, views, tagViews] { try await storage.createRecordIndex(index) }
            #expect(try await storage.recordIndexes(type: "posts") == [tagViews, views])
            #expect(try await storage.recordIndexes(type: "others").isEmpty)
            #expect(try await storage.recordIndexes(type: nil).count == 2)
            if let postgres = storage as? PostgresStorage { try await postgres.execute("ANALYZE records") }

            let cases: [(String, String, RecordIndex)] = [
                ("record.views > 900", "-views", views),
                ("record.views < 100 && record.title != null", "-views", views),
                ("record.tag == \"t7\"", "-views", tagViews),
            ]
            for (filter, sort, index) in cases {
                let query = try Self.query(filter: filter, sort: sort)
                let first = try await storage.listRecords(query, from: nil, backwards: false)
                #expect(first.count == 21, "\(filter)")
                let last = try #require(first.prefix(20).last)
                let position = RecordPosition(values: try RecordOrderValue.values(of: last, keys: query.order!))
                for start in [nil, position] {
                    let plan = try await Self.plan(storage, query, from: start)
                    #expect(Self.reads(plan, index), "\(backend) \(filter) \(sort): \(plan)")
                }
                // The page is the evaluator's order: views descending (or ascending), then id.
                let values = try first.map { try $0.fields["views"]?.intValue ?? -1 }
                #expect(values == (sort == "-views" ? values.sorted(by: >) : values.sorted()))
                let second = try await storage.listRecords(query, from: position, backwards: false)
                #expect(second.first.map { record in first.prefix(20).contains { $0.id == record.id } } == false)
                #expect(second.first?.id == first.last?.id)
            }

            #expect(try await storage.dropRecordIndex(views))
            #expect(try await storage.dropRecordIndex(views) == false)
            #expect(try await storage.recordIndexes(type: "posts") == [tagViews])
            let plan = try await Self.plan(storage, try Self.query(filter: "record.views > 900", sort: "-views"), from: nil)
            #expect(!plan.contains(views.name))
        }
    }

    @Test("the bounded count stops one record past its limit and counts only what the caller may list", arguments: backends)
    func boundedCount(_ backend: ScratchDatabase.Backend) async throws {
        try await StorageConformanceTests().withStorage(backend) { storage, _ in
            try await Self.seed(storage, type: "posts", count: 30)
            for index in 0..<7 {
                _ = try await storage.createRecord(
                    type: "posts", fields: ["n": .int(index)], owner: "hidden-owner", isPrivate: true)
            }
            #expect(try await storage.countRecords(RecordQuery(type: "posts"), upTo: 11) == 11)
            #expect(try await storage.countRecords(RecordQuery(type: "posts"), upTo: 100) == 30)
            #expect(try await storage.countRecords(RecordQuery(type: "posts", viewer: "someone"), upTo: 100) == 30)
            #expect(try await storage.countRecords(RecordQuery(type: "posts", viewer: "hidden-owner"), upTo: 100) == 37)
            var owned = RecordQuery(type: "posts")
            owned.access = try RecordPredicate.compile(
                try Condition(parsing: "record.owner == caller.user", roots: ["record", "caller"]),
                caller: RuleCaller(signedIn: true, user: "hidden-owner"))
            #expect(try await storage.countRecords(owned, upTo: 100) == 7)
            // Filters and order do not narrow the count: it is of what the caller may list at all.
            var filtered = RecordQuery(type: "posts", filters: [("tag", .string("t1"))])
            filtered.order = [RecordOrderKey(.field("views"), descending: true)]
            #expect(try await storage.countRecords(filtered, upTo: 100) == 30)
            #expect(try await storage.countRecords(RecordQuery(type: "none"), upTo: 100) == 0)
        }
    }

    @Test("field names are checked before they reach SQL: bad names, reserved names, too many fields")
    func validation() throws {
        let bad: [(String, [String])] = [
            ("posts", []), ("posts", ["a", "b", "c", "d"]), ("posts", ["views'); DROP TABLE records; --"]),
            ("posts", ["a\"b"]), ("posts", ["-views"]), ("posts", [""]), ("posts", [String(repeating: "x", count: 65)]),
            ("posts", ["id"]), ("posts", ["created_at"]), ("posts", ["views", "views"]), ("po sts", ["views"]),
            ("posts", ["a.b"]), ("posts", ["ü"]),
        ]
        for (type, fields) in bad {
            let error = #expect(throws: ServerError.self, "\(type) \(fields)") { try RecordIndex(type: type, fields: fields) }
            #expect(error?.code == "invalid_index")
            #expect(error?.status == .badRequest)
        }
        let index = try RecordIndex(type: String(repeating: "t", count: 64), fields: ["a-b", "c_d", "E9"])
        #expect(index.name.count <= 63)
        #expect(index.name == (try RecordIndex(type: index.type, fields: index.fields)).name)
        #expect(index.name != (try RecordIndex(type: index.type, fields: ["c_d", "a-b", "E9"])).name)
    }

    @Test("which index serves which list")
    func serving() throws {
        let views = try RecordIndex(type: "posts", fields: ["views"])
        let viewsTitle = try RecordIndex(type: "posts", fields: ["views", "title"])
        let tagViews = try RecordIndex(type: "posts", fields: ["tag", "views"])
        func query(_ filter: String?, _ sort: String?) throws -> RecordQuery {
            var query = RecordQuery(type: "posts")
            query.filter = try filter.map { try ListFilter(parsing: $0).predicate }
            query.order = try sort.map { try RecordRoutes.order($0) }
            return query
        }
        #expect(RecordRoutes.serves(views, try query(nil, "-views")))
        #expect(RecordRoutes.serves(viewsTitle, try query(nil, "-views")))
        #expect(RecordRoutes.serves(viewsTitle, try query(nil, "views,title")))
        #expect(!RecordRoutes.serves(viewsTitle, try query(nil, "views,-title")))
        #expect(!RecordRoutes.serves(views, try query(nil, "title")))
        #expect(!RecordRoutes.serves(views, try query(nil, "created,views")))
        #expect(RecordRoutes.serves(views, try query("record.views > 3", nil)))
        #expect(RecordRoutes.serves(views, try query("record.views > 3 && record.tag == \"a\"", nil)))
        #expect(!RecordRoutes.serves(views, try query("record.views > 3 || record.tag == \"a\"", nil)))
        #expect(!RecordRoutes.serves(views, try query("record.tag == \"a\"", nil)))
        #expect(RecordRoutes.serves(tagViews, try query("record.tag == \"a\"", "-views")))
        #expect(!RecordRoutes.serves(tagViews, try query("record.tag > \"a\"", "-views")))
        #expect(RecordRoutes.serves(views, try query("record.tag == \"a\"", "-views")))
    }

    @Test("index_required names the fields and the command")
    func indexRequiredMessage() throws {
        var query = RecordQuery(type: "posts")
        query.filter = try ListFilter(parsing: "record.tag == \"t7\" && record.views > 2").predicate
        query.order = try RecordRoutes.order("-views")
        let error = RecordRoutes.indexRequired(query, limit: 10)
        #expect(error.code == "index_required")
        #expect(error.message.contains("outpost types index posts tag views"))
        query.order = nil
        #expect(
            RecordRoutes.indexRequired(query, limit: 10).message.contains(
                "index field tag of type posts: outpost types index posts tag"))
        query.filter = try ListFilter(parsing: "record.tag == \"a\" || record.views > 2").predicate
        #expect(RecordRoutes.indexRequired(query, limit: 10).message.contains("tests no field at the top level"))
    }
}
