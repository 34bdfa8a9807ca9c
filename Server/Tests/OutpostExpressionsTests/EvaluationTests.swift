import OutpostExpressions
import Testing

@Suite("Evaluation")
struct EvaluationTests {
    static let environment = ExpressionEnvironment([
        "caller": [
            "signed_in": true, "user": "u1", "client": "app", "scopes": ["read", "write"], "roles": ["editor"],
        ],
        "record": [
            "owner": "u1", "status": "open", "title": "Introduction", "count": 3, "ratio": 0.5, "archived": false,
            "tags": ["a", "b"], "address": ["city": "Lyon", "zip": "69001"], "nothing": .null,
        ],
        "request": ["body": ["title": "New"]],
    ])

    func value(_ source: String) throws -> ExpressionValue {
        try parse(source).evaluate(in: Self.environment)
    }

    @Test("paths walk objects; a missing path is null")
    func paths() throws {
        #expect(try value("record.address.city") == "Lyon")
        #expect(try value("request.body.title") == "New")
        #expect(try value("caller.roles") == ["editor"])
        #expect(try value("record.missing") == .null)
        #expect(try value("record.status.deeper") == .null, "a key inside a string is missing")
        #expect(try value("record.missing == null") == true)
        #expect(try value("record.nothing == null") == true)
        #expect(try value("request.missing.deeper == null") == true)
        #expect(try Condition(parsing: "record.x", roots: ["record"]).evaluate(in: ExpressionEnvironment()) == .null)
    }

    @Test("literals evaluate to themselves")
    func literals() throws {
        #expect(try value("null") == .null)
        #expect(try value("[1, \"a\", [true]]") == [1, "a", [true]])
        #expect(try value("[record.count, record.missing]") == [3, .null])
        #expect(try value("-2.5e1") == -25)
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var source: String
        var expected: Bool
        var testDescription: String { "\(source) → \(expected)" }
        init(_ source: String, _ expected: Bool) {
            self.source = source
            self.expected = expected
        }
    }

    static let equality: [Row] = [
        Row("1 == 1.0", true), Row("1 == 2", false), Row("1 != 2", true), Row("1 != 1", false),
        Row("\"a\" == \"a\"", true), Row("\"a\" == \"A\"", false), Row("true == true", true), Row("true == false", false),
        Row("null == null", true), Row("null != null", false),
        Row("1 == \"1\"", false), Row("1 != \"1\"", true), Row("true == 1", false), Row("null == false", false),
        Row("0 == false", false), Row("\"\" == null", false), Row("[] == null", false),
        Row("[1, \"a\"] == [1.0, \"a\"]", true), Row("[1, 2] == [2, 1]", false), Row("[1] == [1, 1]", false),
        Row("[[1], []] == [[1], []]", true), Row("record.tags == [\"a\", \"b\"]", true),
        Row("record.address == record.address", true), Row("record.address == request.body", false),
        Row("\"\\u00e9\" == \"e\\u0301\"", false),  // no Unicode normalization
        Row("record.owner == caller.user", true), Row("record.owner != caller.user", false),
    ]

    static let ordering: [Row] = [
        Row("1 < 2", true), Row("2 < 1", false), Row("1 < 1", false), Row("1 <= 1", true), Row("2 <= 1", false),
        Row("2 > 1", true), Row("1 > 1", false), Row("1 >= 1", true), Row("0 >= 1", false), Row("-1 < 0", true),
        Row("\"a\" < \"b\"", true), Row("\"b\" < \"a\"", false), Row("\"a\" < \"ab\"", true), Row("\"a\" <= \"a\"", true),
        Row("\"B\" < \"a\"", true), Row("\"z\" < \"é\"", true), Row("\"é\" >= \"z\"", true),
        Row("\"\\uFFFF\" < \"😀\"", true),  // scalar order, not UTF-16 order
        // Any other pair is false, for every operator.
        Row("1 < \"2\"", false), Row("1 >= \"1\"", false), Row("null < 1", false), Row("null >= null", false),
        Row("true > false", false), Row("true >= true", false), Row("[1] < [2]", false), Row("[1] <= [1]", false),
        Row("record.missing < 1", false), Row("record.missing >= 1", false), Row("record.count > 2", true),
        Row("record.ratio < 1", true),
    ]

    static let membership: [Row] = [
        Row("\"editor\" in caller.roles", true), Row("\"admin\" in caller.roles", false),
        Row("1 in [1, 2]", true), Row("1.0 in [\"1\", 1]", true), Row("3 in [1, 2]", false), Row("1 in []", false),
        Row("null in [null]", true), Row("[1] in [[1], [2]]", true), Row("record.status in [\"open\", \"closed\"]", true),
        // The right side must be an array.
        Row("\"a\" in \"abc\"", false), Row("\"a\" in null", false), Row("\"a\" in record.missing", false),
        Row("\"city\" in record.address", false), Row("1 in 1", false),
        Row("record.title ^= \"Intro\"", true), Row("record.title ^= \"intro\"", false), Row("\"abc\" ^= \"\"", true),
        Row("\"ab\" ^= \"abc\"", false), Row("record.missing ^= \"\"", false), Row("1 ^= \"1\"", false),
        Row("\"1\" ^= 1", false), Row("[\"a\"] ^= \"a\"", false),
    ]

    static let logic: [Row] = [
        Row("true && true", true), Row("true && false", false), Row("false && true", false), Row("false && false", false),
        Row("true || true", true), Row("true || false", true), Row("false || true", true), Row("false || false", false),
        // Non-booleans count as false.
        Row("1 && true", false), Row("true && \"yes\"", false), Row("null || true", true), Row("1 || 0", false),
        Row("record.missing || record.missing", false), Row("true && record.missing", false),
        Row("record.missing != true", true), Row("!(1 < \"2\")", true),
    ]

    static let negation: [(String, ExpressionValue)] = [
        ("!false", true), ("!true", false), ("!!true", true), ("!!false", false), ("!record.archived", true),
        // `!` of anything but a boolean is null, so no number of `!` turns a missing value into true.
        ("!null", .null), ("!0", .null), ("!\"\"", .null), ("![]", .null), ("!record.missing", .null),
        ("!!record.missing", .null), ("!!!record.missing", .null), ("!record.missing == null", true),
    ]

    @Test("== and !=", arguments: equality)
    func equalityTable(row: Row) throws {
        #expect(try value(row.source) == .bool(row.expected))
    }

    @Test("< <= > >=", arguments: ordering)
    func orderingTable(row: Row) throws {
        #expect(try value(row.source) == .bool(row.expected))
    }

    @Test("in and ^=", arguments: membership)
    func membershipTable(row: Row) throws {
        #expect(try value(row.source) == .bool(row.expected))
    }

    @Test("&& || !", arguments: logic)
    func logicTable(row: Row) throws {
        #expect(try value(row.source) == .bool(row.expected))
    }

    @Test("! swaps true and false; anything else becomes null", arguments: negation)
    func negationTable(source: String, expected: ExpressionValue) throws {
        #expect(try value(source) == expected)
    }

    @Test("comparisons with NaN from a context are false")
    func notANumber() throws {
        let context = ExpressionEnvironment(["record": ["x": .number(.nan)]])
        for source in ["record.x == record.x", "record.x < 1", "record.x >= 1", "record.x in [record.x]"] {
            #expect(try Condition(parsing: source, roots: ["record"]).evaluate(in: context) == false, "\(source)")
        }
    }

    @Test("&& and || skip the right operand when the left decides")
    func shortCircuit() throws {
        let huge = ExpressionEnvironment(["record": ["big": .array(Array(repeating: 0, count: 50_000))]])
        let skipped = try Condition(parsing: "false && 1 in record.big", roots: ["record"])
        #expect(try skipped.evaluate(in: huge, budget: 10) == false)
        let skippedOr = try Condition(parsing: "true || 1 in record.big", roots: ["record"])
        #expect(try skippedOr.evaluate(in: huge, budget: 10) == true)
        let evaluated = try Condition(parsing: "true && 1 in record.big", roots: ["record"])
        #expect(throws: ExpressionError.self) { try evaluated.evaluate(in: huge, budget: 10) }
    }

    @Test("the budget counts nodes and compared elements")
    func budget() throws {
        let context = ExpressionEnvironment(["record": ["list": .array((0..<1000).map { .number(Double($0)) })]])
        let expression = try Condition(parsing: "999 in record.list", roots: ["record"])
        // 3 nodes, then one step per element compared.
        #expect(try expression.evaluate(in: context, budget: 1003) == true)
        #expect(throws: ExpressionError.self) { try expression.evaluate(in: context, budget: 1002) }
        do {
            _ = try expression.evaluate(in: context, budget: 500)
            Issue.record("expected the budget to be exceeded")
        } catch {
            #expect(error.code == .evaluationBudgetExceeded)
            #expect(error.position == nil)
            #expect(error.message.contains("500 steps"))
        }
        #expect(!expression.decide(in: context, budget: 500), "an exceeded budget denies")
        #expect(expression.decide(in: context))

        let nested = ExpressionEnvironment([
            "record": ["a": .array(Array(repeating: [1, 2, 3], count: 3000))]
        ])
        let equality = try Condition(parsing: "record.a == record.a", roots: ["record"])
        #expect(throws: ExpressionError.self) { try equality.evaluate(in: nested) }
        #expect(try equality.evaluate(in: nested, budget: 100_000) == true)
    }

    @Test("deeply nested values from a context compare without recursion")
    func deepValues() throws {
        var deep = ExpressionValue.number(1)
        for _ in 0..<5000 { deep = .array([deep]) }
        let context = ExpressionEnvironment(["record": ["a": deep, "b": deep]])
        let expression = try Condition(parsing: "record.a == record.b", roots: ["record"])
        #expect(try expression.evaluate(in: context, budget: 1_000_000) == true)
        #expect(!expression.decide(in: context, budget: 1000), "one step per level")
    }

    @Test("decide is true only for exactly true")
    func decide() throws {
        let decisions: [(String, Bool)] = [
            ("true", true), ("record.owner == caller.user", true), ("false", false), ("null", false), ("1", false),
            ("\"true\"", false), ("[true]", false), ("record.missing", false), ("caller.signed_in", true),
            ("record.address", false), ("!record.missing", false), ("!!record.missing", false),
            ("record.missing == caller.missing", true),
        ]
        for (source, expected) in decisions {
            #expect(try parse(source).decide(in: Self.environment) == expected, "\(source)")
        }
    }

    @Test("a custom context")
    func customContext() throws {
        struct Lookup: ExpressionContext {
            func value(at path: ExpressionPath) -> ExpressionValue {
                path.root == "record" && path.keys == ["id"] ? "r42" : .null
            }
        }
        #expect(try parse("record.id == \"r42\"").decide(in: Lookup()))
        #expect(try !parse("record.other == \"r42\"").decide(in: Lookup()))
    }
}
