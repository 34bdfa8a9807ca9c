import Foundation
import GRDB
import OutpostCore
import OutpostExpressions
import Testing

@testable import OutpostSync

@Suite struct LocalQueryTests {
    /// Records with fields of every JSON type, some missing.
    static let samples: [[String: JSONValue]] = [
        ["views": 3, "title": "Intro", "tag": "a"],
        ["views": 12, "title": "Intro to SQL", "tag": "b"],
        ["views": 12.5, "title": "Zebra"],
        ["views": "many", "title": .null, "tag": "a"],
        ["views": true, "flags": ["x", "y"]],
        ["views": false, "nested": ["deep": 1]],
        [:],
    ]

    static let filters = [
        "record.views > 10", "record.views <= 3", "record.title ^= \"Intro\"", "record.title != null",
        "record.tag in [\"a\", \"b\"]", "!(record.views == 12) && record.tag == \"a\"",
        "record.views == true || record.views == false",
        "record.nested.deep == 1", "record.missing == null", "record.id ^= \"local-\"",
        // Terms SQLite narrows by: booleans read as 0 and 1, numbers before text, flipped sides.
        "record.views == 1", "record.views == 0", "10 < record.views", "3 >= record.views",
        "record.views in [12, \"many\", 1]", "record.title >= \"Intro\"", "record.title ^= \"\"",
        "record.tag == \"a\" && record.views > 2", "record.views < \"z\"", "record.flags == \"[\\\"x\\\",\\\"y\\\"]\"",
        "record.id in [\"x\"] || record.views >= 3",
    ]

    /// The ids of `records` the evaluator alone selects with `filter`.
    static func evaluated(_ records: [SyncedRecord], _ filter: String) throws -> Set<String> {
        let condition = try Condition(parsing: filter, roots: ["record"])
        return Set(
            records.filter { record in
                var root = record.fields.mapValues(LocalQuery.expressionValue)
                root["id"] = .string(record.id)
                return condition.decide(in: ExpressionEnvironment(["record": .object(root)]))
            }.map(\.id))
    }

    @Test(arguments: [false, true])
    func filtersSelectWhatTheEvaluatorDecides(indexed: Bool) async throws {
        try await withStore { store, _ in
            for fields in Self.samples { try await store.create("posts", fields: fields) }
            if indexed {
                try await store.index("posts", on: ["views"])
                try await store.index("posts", on: ["title", "tag"])
            }
            let all = try await store.query("posts")
            for filter in Self.filters {
                let condition = try Condition(parsing: filter, roots: ["record"])
                let expected = Set(
                    all.filter { record in
                        var root = record.fields.mapValues(LocalQuery.expressionValue)
                        root["id"] = .string(record.id)
                        return condition.decide(in: ExpressionEnvironment(["record": .object(root)]))
                    }.map(\.id))
                let answer = Set(try await store.query("posts", filter: filter).map(\.id))
                #expect(answer == expected, "filter \(filter)")
            }
            #expect(try await store.query("posts", filter: "record.views > 10").count == 2)
        }
    }

    @Test func randomFiltersOverRandomRecordsMatchTheEvaluator() async throws {
        var random = SystemRandomNumberGenerator()
        let values: [JSONValue] = [0, 1, 2, 2.5, -1, "a", "ab", "b", "", true, false, .null, ["a"], ["k": 1]]
        let literals = ["0", "1", "2", "2.5", "-1", "\"a\"", "\"ab\"", "\"b\"", "\"\"", "true", "null"]
        let fields = ["x", "y", "id"]
        let operators = ["==", "!=", "<", "<=", ">", ">=", "^="]
        try await withStore { store, _ in
            for _ in 0..<60 {
                var record: [String: JSONValue] = [:]
                for field in ["x", "y"] where Bool.random(using: &random) {
                    record[field] = values.randomElement(using: &random)
                }
                try await store.create("items", fields: record)
            }
            try await store.index("items", on: ["x"])
            let all = try await store.query("items")
            for _ in 0..<200 {
                let terms = (0..<Int.random(in: 1...3, using: &random)).map { _ in
                    let field = "record." + fields.randomElement(using: &random)!
                    let literal = literals.randomElement(using: &random)!
                    if Int.random(in: 0..<5, using: &random) == 0 {
                        return "\(field) in [\(literal), \(literals.randomElement(using: &random)!)]"
                    }
                    let op = operators.randomElement(using: &random)!
                    return Bool.random(using: &random) ? "\(field) \(op) \(literal)" : "\(literal) \(op) \(field)"
                }
                let filter = terms.joined(separator: Bool.random(using: &random) ? " && " : " || ")
                let answer = Set(try await store.query("items", filter: filter).map(\.id))
                #expect(answer == (try Self.evaluated(all, filter)), "filter \(filter)")
            }
        }
    }

    @Test func aFilterOnAnIndexedFieldReadsThroughTheIndex() async throws {
        try await withStore { store, _ in
            try await store.index("posts", on: ["views"])
            try await store.index("posts", on: ["views"])
            let prefilter = LocalPrefilter(try Condition(parsing: "record.views > 10 && record.a != 1", roots: ["record"]))
            let plan = try await store.database.read { db in
                try Row.fetchAll(
                    db,
                    sql: "EXPLAIN QUERY PLAN SELECT * FROM records WHERE type = ? AND state != 'deleted'" + prefilter.sql,
                    arguments: ["posts"] + prefilter.arguments
                ).map { $0["detail"] as String }
            }
            #expect(plan.contains { $0.contains("USING INDEX records:posts:views") }, "\(plan)")
            await #expect(throws: SyncError.self) { try await store.index("posts", on: ["a'b"]) }
            await #expect(throws: SyncError.self) { try await store.index("posts", on: []) }
        }
    }

    @Test func sortOrdersByTypeThenValueThenId() async throws {
        try await withStore { store, _ in
            for fields in Self.samples { try await store.create("posts", fields: fields) }
            let ascending: [JSONValue] = [.null, false, true, 3, 12, 12.5, "many"]
            let views = try await store.query("posts", sort: "views").map { $0.fields["views"] ?? .null }
            #expect(views == ascending)
            let descending = try await store.query("posts", sort: "-views").map { $0.fields["views"] ?? .null }
            #expect(descending == Array(ascending.reversed()))
        }
    }

    @Test func tiesAreBrokenById() async throws {
        try await withStore { store, _ in
            for _ in 0..<5 { try await store.create("posts", fields: ["rank": 1]) }
            let ids = try await store.query("posts", sort: "-rank").map(\.id)
            #expect(ids == ids.sorted())
        }
    }

    @Test func aSecondKeyOrdersWithinTheFirst() async throws {
        try await withStore { store, _ in
            try await store.create("posts", fields: ["group": 1, "title": "b"])
            try await store.create("posts", fields: ["group": 1, "title": "a"])
            try await store.create("posts", fields: ["group": 0, "title": "c"])
            let titles = try await store.query("posts", sort: "-group,title").map { $0.fields["title"] }
            #expect(titles == ["a", "b", "c"])
        }
    }

    @Test func badFiltersAndSortsSayWhatToChange() async throws {
        try await withStore { store, _ in
            await #expect(throws: SyncError.self) { try await store.query("posts", filter: "record.views >") }
            await #expect(throws: SyncError.self) { try await store.query("posts", sort: "a,b,c,d") }
            await #expect(throws: SyncError.self) { try await store.query("posts", sort: "bad field") }
            await #expect(throws: SyncError.self) { try await store.query("no/type") }
        }
    }
}
