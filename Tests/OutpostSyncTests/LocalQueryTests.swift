import Foundation
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
    ]

    @Test func filtersSelectWhatTheEvaluatorDecides() async throws {
        try await withStore { store, _ in
            for fields in Self.samples { try await store.create("posts", fields: fields) }
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
