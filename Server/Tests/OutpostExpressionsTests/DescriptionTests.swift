import OutpostExpressions
import Testing

@Suite("Canonical description")
struct DescriptionTests {
    @Test(
        "prints canonical source",
        arguments: [
            ("record.a==1&&record.b", "record.a == 1 && record.b"),
            ("((record.a))", "record.a"),
            ("(record.a || record.b) && record.c", "(record.a || record.b) && record.c"),
            ("(record.a && record.b) || record.c", "record.a && record.b || record.c"),
            ("record.a || (record.b || record.c)", "record.a || (record.b || record.c)"),
            ("(record.a || record.b) || record.c", "record.a || record.b || record.c"),
            ("record.a && (record.b && record.c)", "record.a && (record.b && record.c)"),
            ("(record.a == record.b) == true", "(record.a == record.b) == true"),
            ("true == (record.a < record.b)", "true == (record.a < record.b)"),
            ("!(record.a == 1)", "!(record.a == 1)"),
            ("(!record.a) == 1", "!record.a == 1"),
            ("!(!(true))", "!!true"),
            ("! ( record.a && true )", "!(record.a && true)"),
            ("[ 1 ,2,  [ ] ]", "[1, 2, []]"),
            ("[(1 == 1), (true || false)]", "[1 == 1, true || false]"),
            ("1.0", "1"),
            ("-0.0", "0"),
            ("1e2", "100"),
            ("0.1", "0.1"),
            ("1.5e300", "1.5e+300"),
            ("123456789012345678", "1.2345678901234568e+17"),
            ("\"\\u0041\\u00e9\"", "\"Aé\""),
            ("\"q\\\"b\\\\s\\n\\t\\u0001\\u007f\"", "\"q\\\"b\\\\s\\n\\t\\u0001\\u007F\""),
            ("record.a in[1]", "record.a in [1]"),
            ("record.title^=\"x\"", "record.title ^= \"x\""),
        ])
    func canonical(source: String, expected: String) throws {
        let expression = try parse(source)
        #expect(expression.description == expected)
        #expect(try parse(expression.description) == expression)
    }

    @Test("values print as JSON-like text")
    func values() {
        #expect(ExpressionValue.null.description == "null")
        #expect(ExpressionValue.number(2).description == "2")
        #expect(ExpressionValue.number(-1.25).description == "-1.25")
        #expect(ExpressionValue.string("a\"b").description == "\"a\\\"b\"")
        #expect(ExpressionValue.array([1, "x", [true]]).description == "[1, \"x\", [true]]")
        #expect(ExpressionValue.object(["b": 1, "a": .null]).description == "{\"a\": null, \"b\": 1}")
    }

    @Test("a tree built in code prints and parses back")
    func builtInCode() throws {
        let node = Condition.Node.binary(
            .and, .binary(.equal, path("record.status"), .string("open")),
            .binary(.in, path("caller.user"), .list([.string("u1"), .string("u2")])))
        let expression = Condition(node)
        #expect(expression.description == "record.status == \"open\" && caller.user in [\"u1\", \"u2\"]")
        #expect(try parse(expression.description) == expression)
    }
}
