import Foundation
import OutpostExpressions
import OutpostTestSupport
import OutpostTesting
import Testing

@testable import OutpostCore

struct Article: Entity, Equatable {
    static let resourcePath = "records/articles"
    var id: String?
    var title: String
    var subtitle: String?
    var views: Int
    var score: Double
    var tag: String
    var draft: Bool
    var status: Status

    enum Status: String, Codable, Sendable, RecordFieldValue { case open, closed }

    static let titleField = RecordField(\Article.title, "title")
    static let subtitleField = RecordField(\Article.subtitle, "subtitle")
    static let viewsField = RecordField(\Article.views, "views")
    static let scoreField = RecordField(\Article.score, "score")
    static let tagField = RecordField(\Article.tag, "tag")
    static let draftField = RecordField(\Article.draft, "draft")
    static let statusField = RecordField(\Article.status, "status")
    static let cityField = RecordField<Article, String>("address", "city")
}

/// The expression a filter renders, or the test fails.
private func text(_ filter: RecordFilter<Article>) throws -> String {
    try filter.expression()
}

/// Parses `source` with the server's parser, as a list filter reads it.
private func parsed(_ source: String) throws -> Condition {
    try Condition(parsing: source, roots: ["record"])
}

@Suite("Typed record filters and sorts")
struct RecordFilterTests {
    // MARK: Rendering

    @Test("comparisons, in, prefix and null tests render as the protocol writes them")
    func rendering() throws {
        #expect(try text(Article.viewsField > 10) == "record.views > 10")
        #expect(try text(Article.viewsField >= -3) == "record.views >= -3")
        #expect(try text(Article.scoreField < 2.5) == "record.score < 2.5")
        #expect(try text(Article.titleField <= "m") == #"record.title <= "m""#)
        #expect(try text(Article.titleField == "Hi") == #"record.title == "Hi""#)
        #expect(try text(Article.draftField != true) == "record.draft != true")
        #expect(try text(Article.subtitleField == nil) == "record.subtitle == null")
        #expect(try text(Article.viewsField != nil) == "record.views != null")
        #expect(try text(Article.subtitleField > "a") == #"record.subtitle > "a""#)
        #expect(try text(Article.tagField.in(["a", "b"])) == #"record.tag in ["a", "b"]"#)
        #expect(try text(Article.tagField.in([])) == "record.tag in []")
        #expect(try text(Article.subtitleField.in(["x", nil])) == #"record.subtitle in ["x", null]"#)
        #expect(try text(Article.titleField.hasPrefix("Intro")) == #"record.title ^= "Intro""#)
        #expect(try text(Article.subtitleField.hasPrefix("Intro")) == #"record.subtitle ^= "Intro""#)
        #expect(try text(Article.statusField == .open) == #"record.status == "open""#)
        #expect(try text(Article.cityField == "Lyon") == #"record.address.city == "Lyon""#)
        #expect(try text(RecordField<Article, Int64>("big") == Int64.max) == "record.big == 9223372036854775807")
        #expect(
            try text(Article.viewsField > 10 && Article.tagField.in(["a", "b"]))
                == #"record.views > 10 && record.tag in ["a", "b"]"#)
        #expect((Article.viewsField > 1).description == "record.views > 1")
    }

    @Test("parentheses appear exactly where the language's precedence needs them")
    func precedence() throws {
        let a = Article.viewsField == 1
        let b = Article.viewsField == 2
        let c = Article.viewsField == 3
        #expect(try text(a && b || c) == "record.views == 1 && record.views == 2 || record.views == 3")
        #expect(try text(a || b && c) == "record.views == 1 || record.views == 2 && record.views == 3")
        #expect(try text((a || b) && c) == "(record.views == 1 || record.views == 2) && record.views == 3")
        #expect(try text(a && (b || c)) == "record.views == 1 && (record.views == 2 || record.views == 3)")
        #expect(try text(a && (b && c)) == "record.views == 1 && (record.views == 2 && record.views == 3)")
        #expect(try text(a || (b || c)) == "record.views == 1 || (record.views == 2 || record.views == 3)")
        #expect(try text(!a) == "!(record.views == 1)")
        #expect(try text(!(!a)) == "!!(record.views == 1)")
        #expect(try text(!(a && b)) == "!(record.views == 1 && record.views == 2)")
        #expect(try text(!a || b) == "!(record.views == 1) || record.views == 2")
        // Each renders the canonical source of what the server parses: the same tree, the same text.
        for filter in [a && b || c, (a || b) && c, a && (b && c), !(a || !b) && c] {
            let source = try text(filter)
            #expect(try parsed(source).description == source)
        }
        // And the tree the server reads is the one built: `(a || b) && c` is an `&&` of an `||`.
        let tree = try parsed(try text((a || b) && c)).node
        guard case .binary(.and, .binary(.or, _, _), _) = tree else {
            Issue.record("expected (a || b) && c, parsed \(tree)")
            return
        }
    }

    @Test("string literals escape quotes, backslashes and control characters, and read back unchanged")
    func escaping() throws {
        #expect(try text(Article.titleField == #"say "hi" \ bye"#) == #"record.title == "say \"hi\" \\ bye""#)
        #expect(
            try text(Article.titleField == "a\nb\tc\r\u{0}\u{7F}\u{85}\u{2028}")
                == #"record.title == "a\nb\tc\u000D\u0000\u007F\u0085\u2028""#)
        #expect(try text(Article.titleField == "été 😀") == "record.title == \"été 😀\"")
        let samples = [
            "", "\"", "\\", "\\\"", "\\u0041", "\u{1}\u{1F}", "e\u{301}", "\u{FEFF}", "😀🇫🇷", "line\r\nbreak", "\u{10FFFF}",
            "]) || record.id != null || (\"",
        ]
        for sample in samples {
            let source = try text(Article.titleField == sample)
            guard case .binary(.equal, _, .string(let read)) = try parsed(source).node else {
                Issue.record("\(source) did not parse as a comparison with a string")
                continue
            }
            #expect(Array(read.unicodeScalars) == Array(sample.unicodeScalars), "\(source)")
        }
    }

    @Test("numbers are JSON numbers that read back to the same value; NaN and infinity are refused")
    func numbers() throws {
        #expect(try text(Article.scoreField == 1e20) == "record.score == 1e20")
        #expect(try text(Article.scoreField == 1.5e-7) == "record.score == 1.5e-07")
        #expect(try text(Article.scoreField == -0.0) == "record.score == 0")
        #expect(try text(Article.scoreField == 3) == "record.score == 3")
        #expect(try text(Article.viewsField == Int.min) == "record.views == \(Int.min)")
        let values: [Double] = [
            0.1, -2.5, 1e20, 1e-7, 9_007_199_254_740_994, 123_456_789.125, .leastNonzeroMagnitude, .greatestFiniteMagnitude,
            -.greatestFiniteMagnitude, .ulpOfOne,
        ]
        for value in values {
            let source = try text(Article.scoreField == value)
            guard case .binary(.equal, _, .number(let read)) = try parsed(source).node else {
                Issue.record("\(source) did not parse as a comparison with a number")
                continue
            }
            #expect(read == value, "\(source)")
        }
        for value in [Double.nan, .infinity, -.infinity] {
            #expect(throws: OutpostError.self) { try (Article.scoreField > value).expression() }
            #expect((Article.scoreField > value).description.hasPrefix("<invalid filter"))
        }
    }

    @Test("field names the language cannot write are refused; nested fields are paths")
    func fieldNames() throws {
        for name in ["first-name", "", "1st", "a.b", "é", "a b"] {
            let error = #expect(throws: OutpostError.self) { try (RecordField<Article, Int>(name) == 1).expression() }
            #expect(error?.code == .invalidRequest)
        }
        let deep = RecordField<Article, Int>("a", "b", "c", "d", "e", "f", "g")
        #expect(try text(deep == 1) == "record.a.b.c.d.e.f.g == 1")
        #expect(throws: OutpostError.self) {
            try (RecordField<Article, Int>("a", "b", "c", "d", "e", "f", "g", "h") == 1).expression()
        }
        // Keywords are names after a dot.
        #expect(try parsed(try text(RecordField<Article, Int>("in", "null") == 1)).description == "record.in.null == 1")
    }

    // MARK: Lists and streams

    @Test("a list sends the typed filter and sort as filter= and sort=")
    func listQuery() async throws {
        let server = FakeRecordsServer()
        let transport = server.transport()
        let store = transport.client().entities()
        let request = ListRequest(Article.self)
            .filter(Article.viewsField > 10 && Article.tagField.in(["a", "b"]))
            .sorted(by: Article.viewsField.descending, Article.titleField.ascending, .created.reversed)
        _ = try await store.page(request)
        #expect(transport.requests.count == 1)
        #expect(transport.requests[0].query["filter"] == #"record.views > 10 && record.tag in ["a", "b"]"#)
        #expect(transport.requests[0].query["sort"] == "-views,title,-created")
        // The typed and string forms replace each other.
        let replaced = request.filter("record.views == 1").sorted(by: RecordSortKey.id)
        #expect(replaced.query.filter { $0.name == "filter" }.map(\.value) == ["record.views == 1"])
        #expect(replaced.query.filter { $0.name == "sort" }.map(\.value) == ["id"])
        #expect(RecordSortKey<Article>.updated.description == "updated")
        #expect(Article.cityField.descending.description == "-address.city")
    }

    @Test("a filter or sort that cannot be rendered fails the list before anything is sent")
    func invalidListQuery() async throws {
        let server = FakeRecordsServer()
        let transport = server.transport()
        let store = transport.client().entities()
        let badFilter = ListRequest(Article.self).filter(Article.scoreField > .nan)
        let filterError = await #expect(throws: OutpostError.self) { try await store.page(badFilter) }
        #expect(filterError?.code == .invalidRequest)
        #expect(filterError?.method == "GET")
        let badSort = ListRequest(Article.self).sorted(by: Article.cityField.ascending)
        let sortError = await #expect(throws: OutpostError.self) {
            for try await _ in store.items(badSort) {}
        }
        #expect(sortError?.code == .invalidRequest)
        #expect(transport.requests.isEmpty)
        // A string filter in its place makes the list valid again.
        _ = try await store.page(badFilter.filter("record.score > 1"))
        #expect(transport.requests.count == 1)
    }

    @Test("a typed change stream sends its filter, and one that cannot be rendered throws without connecting")
    func changeStream() async throws {
        let transport = ScriptedTransport { _, _ in ScriptedTransport.reply(404, json: ["error": ["code": "not_found"]]) }
        let store = transport.client(baseURL: "http://scripted.test").entities()
        let once = RetryPolicy(maxAttempts: 1)
        let invalid = store.changes(of: Article.self, filter: Article.scoreField == .infinity, retry: once)
        let error = await #expect(throws: OutpostError.self) {
            for try await _ in invalid {}
        }
        #expect(error?.code == .invalidRequest)
        #expect(transport.requests.isEmpty)

        let valid = store.changes(of: Article.self, filter: Article.titleField.hasPrefix("Intro"), retry: once)
        await #expect(throws: OutpostError.self) {
            for try await _ in valid {}
        }
        #expect(transport.requests.first?.query["filter"] == #"record.title ^= "Intro""#)
        #expect(transport.requests.first?.path == "/records/articles/changes")
    }

    // MARK: Property

    @Test("random filters render to text the server's parser reads back and evaluates as the filter does")
    func randomFiltersEvaluateAlike() throws {
        var random = SeededGenerator(state: 0x5EED_F11E)
        let records = (0..<40).map { _ in RandomRecords.record(&random) }
        for round in 0..<400 {
            let filter = RandomRecords.filter(&random, depth: 4)
            let source = try filter.expression()
            let condition: Condition
            do {
                condition = try parsed(source)
            } catch {
                Issue.record("round \(round): \(source) does not parse: \(error)")
                continue
            }
            // The server reads the very tree that was built, whatever the spelling.
            #expect(condition.node == RandomRecords.node(of: filter.node), "round \(round): \(source)")
            for record in records {
                let expected = RandomRecords.evaluate(filter.node, on: record)
                let actual = condition.decide(in: ExpressionEnvironment(["record": record]))
                #expect(actual == expected, "round \(round): \(source) on \(record)")
            }
        }
    }
}

/// Random records and filter trees over a few fields, and a direct evaluation of a filter's tree
/// with the semantics docs/PROTOCOL.md gives ("Types and operators").
enum RandomRecords {
    static let names: [[String]] = [["a"], ["b"], ["title"], ["address", "city"]]
    static let strings = [
        "", "a", "ab", "b", "Intro", "Intro to", "é", "e\u{301}", "\"", "\\", "\n", "\u{0}", "😀", "Z", "\u{7F}", "a b",
    ]
    static let numbers: [Double] = [0, 1, -1, 2.5, 10, 1e20, 1e-7, -0.5, 9_007_199_254_740_994]

    static func pick<T>(_ values: [T], _ random: inout SeededGenerator) -> T {
        values[Int(random.next(below: UInt64(values.count)))]
    }

    static func literal(_ random: inout SeededGenerator) -> JSONValue {
        switch random.next(below: 6) {
        case 0: .null
        case 1: .bool(random.next(below: 2) == 0)
        case 2: .int(Int(random.next(below: 21)) - 10)
        case 3: .double(pick(numbers, &random))
        default: .string(pick(strings, &random))
        }
    }

    static func value(_ random: inout SeededGenerator) -> ExpressionValue {
        switch random.next(below: 8) {
        case 0: .null
        case 1: .bool(random.next(below: 2) == 0)
        case 2: .number(Double(Int(random.next(below: 21)) - 10))
        case 3: .number(pick(numbers, &random))
        case 4: .array([.string(pick(strings, &random))])
        default: .string(pick(strings, &random))
        }
    }

    static func record(_ random: inout SeededGenerator) -> ExpressionValue {
        var fields: [String: ExpressionValue] = [:]
        for name in ["a", "b", "title"] where random.next(below: 5) != 0 { fields[name] = value(&random) }
        switch random.next(below: 3) {
        case 0: fields["address"] = .object(["city": value(&random)])
        case 1: fields["address"] = value(&random)
        default: break
        }
        return .object(fields)
    }

    static func filter(_ random: inout SeededGenerator, depth: Int) -> RecordFilter<Article> {
        if depth == 0 || random.next(below: 3) == 0 {
            let path = pick(names, &random)
            if random.next(below: 5) == 0 {
                let values = (0..<random.next(below: 4)).map { _ in literal(&random) }
                return RecordFilter(.isIn(path, values))
            }
            let op = pick(RecordFilter<Article>.Operator.allCases, &random)
            return RecordFilter(.test(path, op, literal(&random)))
        }
        switch random.next(below: 3) {
        case 0: return !filter(&random, depth: depth - 1)
        case 1: return filter(&random, depth: depth - 1) && filter(&random, depth: depth - 1)
        default: return filter(&random, depth: depth - 1) || filter(&random, depth: depth - 1)
        }
    }

    static func evaluate(_ node: RecordFilter<Article>.Node, on record: ExpressionValue) -> Bool {
        switch node {
        case .test(let path, let op, let literal):
            let left = lookUp(path, in: record)
            let right = value(of: literal)
            switch op {
            case .equal: return equal(left, right)
            case .notEqual: return !equal(left, right)
            case .startsWith:
                guard case .string(let text) = left, case .string(let prefix) = right else { return false }
                return Array(text.unicodeScalars).starts(with: Array(prefix.unicodeScalars))
            case .less, .lessOrEqual, .greater, .greaterOrEqual:
                guard let order = order(left, right) else { return false }
                switch op {
                case .less: return order < 0
                case .lessOrEqual: return order <= 0
                case .greater: return order > 0
                default: return order >= 0
                }
            }
        case .isIn(let path, let literals):
            let left = lookUp(path, in: record)
            return literals.contains { equal(left, value(of: $0)) }
        case .not(let operand): return !evaluate(operand, on: record)
        case .and(let left, let right): return evaluate(left, on: record) && evaluate(right, on: record)
        case .or(let left, let right): return evaluate(left, on: record) || evaluate(right, on: record)
        }
    }

    /// The syntax tree of the language for a filter's tree.
    static func node(of node: RecordFilter<Article>.Node) -> Condition.Node {
        func path(_ names: [String]) -> Condition.Node { .path(ExpressionPath(root: "record", keys: names)) }
        func literal(_ value: JSONValue) -> Condition.Node {
            switch value {
            case .bool(let flag): .bool(flag)
            case .int(let number): .number(Double(number))
            case .double(let number): .number(number)
            case .string(let text): .string(text)
            default: .null
            }
        }
        switch node {
        case .test(let names, let op, let value):
            return .binary(Condition.BinaryOperator(rawValue: op.rawValue)!, path(names), literal(value))
        case .isIn(let names, let values): return .binary(.in, path(names), .list(values.map(literal)))
        case .not(let operand): return .not(self.node(of: operand))
        case .and(let left, let right): return .binary(.and, self.node(of: left), self.node(of: right))
        case .or(let left, let right): return .binary(.or, self.node(of: left), self.node(of: right))
        }
    }

    static func lookUp(_ path: [String], in record: ExpressionValue) -> ExpressionValue {
        var current = record
        for name in path {
            guard case .object(let fields) = current, let next = fields[name] else { return .null }
            current = next
        }
        return current
    }

    static func value(of literal: JSONValue) -> ExpressionValue {
        switch literal {
        case .null: .null
        case .bool(let flag): .bool(flag)
        case .int(let number): .number(Double(number))
        case .double(let number): .number(number)
        case .string(let text): .string(text)
        default: .null
        }
    }

    /// Same type and value; strings by Unicode scalars, without normalization.
    static func equal(_ a: ExpressionValue, _ b: ExpressionValue) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case (.bool(let x), .bool(let y)): x == y
        case (.number(let x), .number(let y)): x == y
        case (.string(let x), .string(let y)): Array(x.unicodeScalars) == Array(y.unicodeScalars)
        case (.array(let x), .array(let y)): x.count == y.count && zip(x, y).allSatisfy { equal($0, $1) }
        default: false
        }
    }

    /// -1, 0 or 1 between two numbers or two strings (by code point), else `nil`.
    static func order(_ a: ExpressionValue, _ b: ExpressionValue) -> Int? {
        switch (a, b) {
        case (.number(let x), .number(let y)): return x < y ? -1 : x == y ? 0 : 1
        case (.string(let x), .string(let y)):
            let (p, q) = (x.unicodeScalars.map(\.value), y.unicodeScalars.map(\.value))
            return p.lexicographicallyPrecedes(q) ? -1 : p == q ? 0 : 1
        default: return nil
        }
    }
}
