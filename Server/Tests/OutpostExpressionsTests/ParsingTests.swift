import OutpostExpressions
import Testing

@Suite("Parsing")
struct ParsingTests {
    @Test(
        "literals",
        arguments: [
            ("null", Condition.Node.null),
            ("true", .bool(true)),
            ("false", .bool(false)),
            ("0", .number(0)),
            ("-0", .number(0)),
            ("42", .number(42)),
            ("-3.25", .number(-3.25)),
            ("1e3", .number(1000)),
            ("2.5E-2", .number(0.025)),
            ("1e+2", .number(100)),
            ("\"\"", .string("")),
            ("\"héllo\"", .string("héllo")),
        ])
    func literals(source: String, expected: Condition.Node) throws {
        #expect(try parse(source).node == expected)
    }

    @Test(
        "string escapes",
        arguments: [
            (#""a\"b""#, "a\"b"),
            (#""a\\b""#, "a\\b"),
            (#""a\nb""#, "a\nb"),
            (#""a\tb""#, "a\tb"),
            (#""\u00e9""#, "é"),
            (#""\u00E9\u0041""#, "éA"),
            (#""\uD83D\uDE00""#, "😀"),
            (#""\u0000""#, "\u{0}"),
        ])
    func escapes(source: String, expected: String) throws {
        #expect(try parse(source).node == .string(expected))
    }

    @Test("paths of one or more names")
    func paths() throws {
        #expect(try parse("caller").node == .path(ExpressionPath(root: "caller")))
        #expect(
            try parse("record.address.city").node
                == .path(ExpressionPath(root: "record", keys: ["address", "city"])))
        #expect(try parse("request.body._x9").node == path("request.body._x9"))
        // Keywords are names after a dot.
        #expect(try parse("record.in.true").node == path("record.in.true"))
    }

    @Test("lists")
    func lists() throws {
        #expect(try parse("[]").node == .list([]))
        #expect(try parse("[\"a\", \"b\", 1]").node == .list([.string("a"), .string("b"), .number(1)]))
        #expect(try parse("[[1], record.x]").node == .list([.list([.number(1)]), path("record.x")]))
        #expect(
            try parse("[record.a == 1, !true]").node
                == .list([.binary(.equal, path("record.a"), .number(1)), .not(.bool(true))]))
    }

    @Test("each binary operator", arguments: Condition.BinaryOperator.allCases)
    func binaryOperators(op: Condition.BinaryOperator) throws {
        let source = "record.a \(op.rawValue) record.b"
        #expect(try parse(source).node == .binary(op, path("record.a"), path("record.b")))
        // Spacing does not matter except around `in`.
        let tight = op == .in ? source : "record.a\(op.rawValue)record.b"
        #expect(try parse(tight).node == .binary(op, path("record.a"), path("record.b")))
    }

    @Test("! and parentheses")
    func notAndParentheses() throws {
        #expect(try parse("!record.a").node == .not(path("record.a")))
        #expect(try parse("!!true").node == .not(.not(.bool(true))))
        #expect(try parse("((record.a))").node == path("record.a"))
        #expect(try parse(" \t\n( 1 )\r\n").node == .number(1))
    }

    @Test("precedence: ! binds tighter than comparisons, which bind tighter than && and ||")
    func precedence() throws {
        let a = path("record.a")
        let b = path("record.b")
        let c = path("record.c")
        let d = path("record.d")
        #expect(try parse("record.a || record.b && record.c").node == .binary(.or, a, .binary(.and, b, c)))
        #expect(try parse("record.a && record.b || record.c").node == .binary(.or, .binary(.and, a, b), c))
        #expect(
            try parse("record.a == 1 && record.b != 2").node
                == .binary(.and, .binary(.equal, a, .number(1)), .binary(.notEqual, b, .number(2))))
        #expect(try parse("!record.a == record.b").node == .binary(.equal, .not(a), b))
        #expect(try parse("!(record.a == record.b)").node == .not(.binary(.equal, a, b)))
        #expect(
            try parse("record.a in [1] || record.b ^= \"x\"").node
                == .binary(.or, .binary(.in, a, .list([.number(1)])), .binary(.startsWith, b, .string("x"))))
        #expect(try parse("(record.a || record.b) && record.c").node == .binary(.and, .binary(.or, a, b), c))
        #expect(
            try parse("record.a || record.b || record.c || record.d").node
                == .binary(.or, .binary(.or, .binary(.or, a, b), c), d),
            "|| is left-associative")
        #expect(try parse("record.a && record.b && record.c").node == .binary(.and, .binary(.and, a, b), c))
        #expect(try parse("(record.a < record.b) == true").node == .binary(.equal, .binary(.less, a, b), .bool(true)))
    }

    @Test("roots are chosen by the caller")
    func roots() throws {
        #expect(try Condition(parsing: "record.status == \"open\"", roots: ["record"]).paths.count == 1)
        let error = parsingError("caller.user == \"u1\"", roots: ["record"])
        #expect(error?.code == .unknownRoot)
        #expect(error?.message.contains("'caller'") == true)
        #expect(try Condition(parsing: "1 == 1", roots: []).node == .binary(.equal, .number(1), .number(1)))
    }

    @Test("paths lists each path once, in order")
    func pathsProperty() throws {
        let expression = try parse(
            "record.owner == caller.user || (record.owner in [caller.user, record.x] && !caller.signed_in)")
        #expect(
            expression.paths.map(\.description) == ["record.owner", "caller.user", "record.x", "caller.signed_in"])
        #expect(try parse("1 == 2").paths.isEmpty)
    }

    @Test("equal trees whatever the spelling")
    func spellingDoesNotMatter() throws {
        #expect(try parse("(record.a==1)&&(record.b)") == parse("record.a == 1 && record.b"))
        #expect(try parse("1.0") == parse("1"))
        #expect(try parse("\"\\u0041\"") == parse("\"A\""))
        #expect(try parse("record.a == 1") != parse("record.a == 2"))
    }
}
