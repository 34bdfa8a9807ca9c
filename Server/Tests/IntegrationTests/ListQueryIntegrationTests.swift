import Foundation
import HTTPTypes
import Outpost
import OutpostExpressions
import OutpostServer
import OutpostTestSupport
import Testing

/// `?filter=EXPR` and `?sort=FIELDS` on a live server: a list equals the expression evaluated in
/// Swift over every record, in the order asked for, across keyset and numbered pages; bad input is
/// refused with a position. Runs on PostgreSQL with `OUTPOST_TEST_LIVE_BACKEND=postgres`.
@Suite("List filters and sorts on a live server", .closesWhatItOpens, .timeLimit(.minutes(5)))
struct ListQueryIntegrationTests {
    static let longTitle = String(repeating: "x", count: 120)
    static let viewsPool: [JSONValue?] = [
        0, 1, 2, 2.5, -3, 10, 11, 100, "10", "abc", true, false, .null, nil, [1], ["a": 1],
    ]
    static let tagPool: [JSONValue?] = ["a", "b", "c", "ab", "", nil, 1, .null]
    static let titlePool: [JSONValue?] = [
        "Intro", "intro", "Intro to SQL", "Ünïcode", "zeta", "Alpha", "alpha beta", "'; DROP TABLE records; --",
        "\"quoted\" \\ back", "emoji 🎉", .string(longTitle + "b"), .string(longTitle + "a"), nil,
    ]
    static let flagPool: [JSONValue?] = [true, false, nil, "true"]

    static func query(_ path: String, _ parameters: [(String, String)]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-_.")
        let query = parameters.map { "\($0)=\($1.addingPercentEncoding(withAllowedCharacters: allowed)!)" }
        return path + "?" + query.joined(separator: "&")
    }

    static func get(_ base: URL, _ parameters: [(String, String)]) async throws -> ClientResponse {
        try await PrivateRecordsTests.send(base, .get, query("/records/items", parameters))
    }

    /// Creates `count` records with random fields; answers them in creation order.
    static func seed(_ base: URL, count: Int, random: inout SeededGenerator) async throws -> [JSONValue] {
        var records: [JSONValue] = []
        for _ in 0..<count {
            var fields: [String: JSONValue] = [:]
            for (name, pool) in [("views", viewsPool), ("tag", tagPool), ("title", titlePool), ("flag", flagPool)] {
                if let value = pool.randomElement(using: &random)! { fields[name] = value }
            }
            let created = try await PrivateRecordsTests.send(base, .post, "/records/items", body: .object(fields))
            #expect(created.status == 201)
            records.append(try created.json())
        }
        return records
    }

    // MARK: The oracle: the expression language's evaluator and the documented order.

    static func matches(_ condition: Condition, _ record: JSONValue) -> Bool {
        guard case .object(var fields) = record else { return false }
        fields["created_at"] = nil
        fields["updated_at"] = nil
        return condition.decide(in: ExpressionEnvironment(["record": ExpressionValue(.object(fields))]))
    }

    /// `(rank, number, text)`: null or missing, booleans, numbers, strings (first 100 scalars, by
    /// code point), arrays and objects.
    static func orderValue(_ value: JSONValue?) -> (Int, Double, [UInt32]) {
        switch value {
        case nil, .null?: (0, 0, [])
        case .bool(let flag)?: (1, flag ? 1 : 0, [])
        case .int(let number)?: (2, Double(number), [])
        case .double(let number)?: (2, number, [])
        case .largeInteger(let digits)?: (2, Double(digits)!, [])
        case .string(let text)?: (3, 0, text.unicodeScalars.prefix(100).map(\.value))
        case .array?, .object?: (4, 0, [])
        }
    }

    static func less(_ a: (Int, Double, [UInt32]), _ b: (Int, Double, [UInt32])) -> Bool? {
        if a.0 != b.0 { return a.0 < b.0 }
        if a.1 != b.1 { return a.1 < b.1 }
        if a.2 != b.2 { return a.2.lexicographicallyPrecedes(b.2) }
        return nil
    }

    /// The records in the order `sort` asks for (`created`/`-created`: creation order).
    static func sorted(_ records: [JSONValue], by sort: String) -> [JSONValue] {
        if sort == "created" { return records }
        if sort == "-created" { return records.reversed() }
        var keys = sort.split(separator: ",").map { part in
            (name: String(part.hasPrefix("-") ? part.dropFirst() : part), descending: part.hasPrefix("-"))
        }
        if !keys.contains(where: { $0.name == "id" }) { keys.append(("id", false)) }
        return records.sorted { a, b in
            for key in keys {
                let order = less(orderValue(a[key.name]), orderValue(b[key.name]))
                if let order { return order != key.descending }
            }
            return false
        }
    }

    // MARK: Random filters

    static func literal(_ random: inout SeededGenerator) -> String {
        [
            "0", "2", "10", "2.5", "-3", "\"a\"", "\"Intro\"", "\"10\"", "\"x\"", "\"'; DROP TABLE records; --\"", "true",
            "false", "null", "\"\"", "\"Ü\"",
        ].randomElement(using: &random)!
    }

    static func comparison(_ random: inout SeededGenerator) -> String {
        let field = "record." + ["views", "tag", "title", "flag", "missing"].randomElement(using: &random)!
        switch Int.random(in: 0..<10, using: &random) {
        case 0: return "\(field) in [\(literal(&random)), \(literal(&random)), \(literal(&random))]"
        case 1: return "\(field) ^= \(["\"I\"", "\"Intro\"", "\"a\"", "\"x\"", "\"\""].randomElement(using: &random)!)"
        default:
            let op = ["==", "!=", "<", "<=", ">", ">="].randomElement(using: &random)!
            return Bool.random(using: &random) ? "\(field) \(op) \(literal(&random))" : "\(literal(&random)) \(op) \(field)"
        }
    }

    static func filter(_ random: inout SeededGenerator, depth: Int = 0) -> String {
        guard depth < 2, Int.random(in: 0..<3, using: &random) > 0 else { return comparison(&random) }
        switch Int.random(in: 0..<5, using: &random) {
        case 0: return "!(\(filter(&random, depth: depth + 1)))"
        case 1, 2: return "(\(filter(&random, depth: depth + 1))) && (\(filter(&random, depth: depth + 1)))"
        default: return "(\(filter(&random, depth: depth + 1))) || (\(filter(&random, depth: depth + 1)))"
        }
    }

    /// The first rounds' filters: everything, and the empty prefix (true for every string).
    static let fixedFilters = ["true", "record.tag ^= \"\"", "!(record.title ^= \"\")"]

    static let sorts = [
        "-views,title", "title", "tag,-views", "views", "-title,tag,views", "created", "-created", "flag,-id", "tag,title",
        "-tag,flag,-views",
    ]

    /// Every page of a keyset walk, then the same pages walked back from the last with `prev_cursor`.
    static func walk(_ base: URL, _ parameters: [(String, String)]) async throws -> (forward: [[String]], backward: [[String]]) {
        var pages: [[String]] = []
        var cursors: [String?] = []
        var cursor: String?
        repeat {
            let reply = try await get(base, parameters + (cursor.map { [("cursor", $0)] } ?? []))
            #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
            let page = try reply.json()
            pages.append(page["results"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? [])
            cursors.append(page["prev_cursor"]?.stringValue)
            cursor = page["next_cursor"]?.stringValue
        } while cursor != nil && pages.count < 100
        var backward: [[String]] = []
        var previous = cursors.last ?? nil
        while let cursorValue = previous, backward.count < 100 {
            let page = try await get(base, parameters + [("cursor", cursorValue)]).json()
            backward.insert(page["results"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? [], at: 0)
            previous = page["prev_cursor"]?.stringValue
        }
        return (pages, backward)
    }

    @Test("random filters and sorts: keyset and numbered pages equal the evaluator over every record, in order")
    func differential() async throws {
        try await withAuthFixture { fixture in
            let base = fixture.server.baseURL
            // `OUTPOST_TEST_SEED` replays a failing run.
            let seed =
                ProcessInfo.processInfo.environment["OUTPOST_TEST_SEED"].flatMap { UInt64($0) }
                ?? UInt64.random(in: 0...UInt64.max)
            var random = SeededGenerator(state: seed)
            let records = try await Self.seed(base, count: 48, random: &random)
            for round in 0..<14 {
                let source = Self.fixedFilters.indices.contains(round) ? Self.fixedFilters[round] : Self.filter(&random)
                let sort = Self.sorts[round % Self.sorts.count]
                let condition = try Condition(parsing: source, roots: ["record"])
                let expected = Self.sorted(records.filter { Self.matches(condition, $0) }, by: sort).compactMap {
                    $0["id"]?.stringValue
                }
                let parameters = [("filter", source), ("sort", sort), ("limit", "5")]
                let (forward, backward) = try await Self.walk(base, parameters)
                #expect(forward.flatMap { $0 } == expected, "seed \(seed), filter \(source), sort \(sort)")
                #expect(forward.allSatisfy { $0.count <= 5 })
                #expect(backward == Array(forward.dropLast()), "seed \(seed), filter \(source), sort \(sort)")
                var numbered: [String] = []
                for page in 1...max(1, (expected.count + 4) / 5) {
                    let reply = try await Self.get(
                        base, [("filter", source), ("sort", sort), ("page", String(page)), ("per_page", "5")]
                    ).json()
                    #expect(reply["total"]?.intValue == expected.count, "seed \(seed), filter \(source)")
                    numbered += reply["results"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
                }
                #expect(numbered == expected, "seed \(seed), filter \(source), sort \(sort)")
            }
        }
    }

    @Test("a filter that does not parse is 400 invalid_filter with the error's code and position")
    func badSyntax() async throws {
        try await withAuthFixture { fixture in
            let base = fixture.server.baseURL
            let cases: [(String, String, Int?)] = [
                ("record.views >", "unexpected_token", 14),
                ("record.views == )", "unexpected_token", 16),
                ("caller.user == \"u1\"", "unknown_root", 0),
                ("request.body.a == 1", "unknown_root", 0),
                ("record.title == \"open", "unterminated_string", 16),
                ("record.a\" == 1", "unterminated_string", 8),
                ("1 < record.a < 3", "chained_comparison", nil),
                (String(repeating: "(", count: 40) + "true" + String(repeating: ")", count: 40), "too_deep", nil),
                ("record.title == \"" + String(repeating: "a", count: 5000) + "\"", "too_long", nil),
                ("record.a in [" + Array(repeating: "1", count: 101).joined(separator: ",") + "]", "too_many_elements", nil),
            ]
            for (source, code, offset) in cases {
                let reply = try await Self.get(base, [("filter", source)])
                #expect(reply.status == 400, "\(source.prefix(60))")
                let error = try reply.json()["error"]
                #expect(error?["code"] == "invalid_filter")
                #expect(error?["details"]?["code"]?.stringValue == code, "\(source.prefix(60))")
                if let offset { #expect(error?["details"]?["offset"]?.intValue == offset, "\(source.prefix(60))") }
                if code != "too_long" {
                    #expect(error?["details"]?["column"]?.intValue != nil)
                }
                #expect(error?["message"]?.stringValue?.isEmpty == false)
                if code == "unknown_root" {
                    #expect(error?["message"]?.stringValue?.contains("reads the record only") == true)
                }
            }
        }
    }

    @Test("filters the list cannot run are refused: comparing fields, created_at, a translation past its bound")
    func unsupported() async throws {
        try await withAuthFixture { fixture in
            let base = fixture.server.baseURL
            // Each `== null` of a negated part asks both of its truth values: the translation doubles.
            var doubling = "record.a == 1"
            for _ in 0..<14 { doubling = "(\(doubling)) == null" }
            let cases: [(String, String)] = [
                ("record.a == record.b", "unsupported_expression"),
                ("record.created_at > \"2026\"", "unsupported_expression"),
                ("\"a\" in record.tags", "unsupported_expression"),
                (doubling, "too_complex"),
            ]
            for (source, code) in cases {
                let reply = try await Self.get(base, [("filter", source)])
                #expect(reply.status == 400, "\(source.prefix(60))")
                #expect(try reply.json()["error"]?["details"]?["code"]?.stringValue == code, "\(source.prefix(60))")
            }
        }
    }

    @Test("SQL in literals and names is data: it matches itself and breaks nothing")
    func sqlLookingInput() async throws {
        try await withAuthFixture { fixture in
            let base = fixture.server.baseURL
            let evil = "'; DROP TABLE records; --"
            for title in [evil, "fine", "\" OR 1=1 --"] {
                let created = try await PrivateRecordsTests.send(base, .post, "/records/items", body: ["title": .string(title)])
                #expect(created.status == 201)
            }
            let found = try await Self.get(base, [("filter", "record.title == \"'; DROP TABLE records; --\"")]).json()
            #expect(found["results"]?.arrayValue?.map { $0["title"] } == [.string(evil)])
            let quoted = try await Self.get(base, [("filter", #"record.title == "\" OR 1=1 --""#)]).json()
            #expect(quoted["results"]?.arrayValue?.count == 1)
            for sort in ["title;DROP TABLE records", "a\"b", "title,", "-", "a,b,c,d", "title,title", "--title"] {
                let reply = try await Self.get(base, [("sort", sort)])
                #expect(reply.status == 400, "\(sort)")
                #expect(try reply.json()["error"]?["code"] == "invalid_sort")
            }
            // A field name that is only odd, not a key word: sorted like any other (all missing).
            let odd = try await Self.get(base, [("sort", "-select,from_")]).json()
            #expect(odd["results"]?.arrayValue?.count == 3)
            let all = try await Self.get(base, [("page", "1")]).json()
            #expect(all["total"] == 3)
        }
    }

    @Test("a cursor belongs to its sort and filter: used with another, 400 invalid_cursor")
    func cursorBinding() async throws {
        try await withAuthFixture { fixture in
            let base = fixture.server.baseURL
            for views in 0..<6 {
                _ = try await PrivateRecordsTests.send(base, .post, "/records/items", body: ["views": .int(views)])
            }
            let first = try await Self.get(base, [("sort", "-views"), ("filter", "record.views > 0"), ("limit", "2")]).json()
            #expect(first["results"]?.arrayValue?.map { $0["views"] } == [5, 4])
            let cursor = try #require(first["next_cursor"]?.stringValue)
            let next = try await Self.get(
                base, [("sort", "-views"), ("filter", "record.views>0"), ("limit", "2"), ("cursor", cursor)]
            ).json()
            #expect(next["results"]?.arrayValue?.map { $0["views"] } == [3, 2])
            for parameters in [
                [("sort", "views"), ("filter", "record.views > 0")], [("sort", "-views"), ("filter", "record.views > 1")],
                [("sort", "-views")], [("sort", "-views,title"), ("filter", "record.views > 0")],
            ] {
                let reply = try await Self.get(base, parameters + [("cursor", cursor)])
                #expect(reply.status == 400)
                #expect(try reply.json()["error"]?["code"] == "invalid_cursor")
            }
            // The `next` link repeats the filter and the sort.
            let link = try #require(first["next"]?.stringValue)
            let url = try #require(URL(string: link))
            let followed = try await PrivateRecordsTests.send(base, .get, url.path + "?" + (url.query ?? ""))
            #expect(try followed.json()["results"]?.arrayValue?.map { $0["views"] } == [3, 2])
        }
    }

    struct Item: Decodable, Sendable {
        var id: String
        var views: Int
        var title: String
    }

    @Test("the client's ListRequest sends filter and sort; items() walks the filtered, sorted list")
    func clientListRequest() async throws {
        try await withLiveServer { server, client in
            for (views, title) in [(3, "c"), (9, "a"), (12, "b"), (12, "a"), (40, "z")] {
                let created = try await PrivateRecordsTests.send(
                    server.baseURL, .post, "/records/items", body: ["views": .int(views), "title": .string(title)])
                #expect(created.status == 201)
            }
            let store = client.entities(.outpost)
            let request = ListRequest(resourcePath: "records/items", of: Item.self, pageSize: 2)
                .filter("record.views > 5 && record.title != \"z\"").sorted(by: "-views", "title")
            var seen: [String] = []
            for try await item in store.items(request) { seen.append("\(item.views)\(item.title)") }
            #expect(seen == ["12a", "12b", "9a"])
            let numbered = ListRequest(
                resourcePath: "records/items", of: Item.self, pageSize: 2, pagination: .outpostPageNumbers, page: 2
            ).filter("record.views > 5").sorted(by: "title", "-views")
            let page = try await store.page(numbered)
            #expect(page.items.map { "\($0.views)\($0.title)" } == ["12b", "40z"])
            #expect(page.info.totalItems == 4)
        }
    }
}
