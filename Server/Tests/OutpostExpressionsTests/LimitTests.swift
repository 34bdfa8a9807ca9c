import OutpostExpressions
import Testing

@Suite("Limits")
struct LimitTests {
    @Test("the defaults")
    func defaults() {
        let limits = ExpressionLimits()
        #expect(limits.maxSourceBytes == 4096)
        #expect(limits.maxDepth == 32)
        #expect(limits.maxNodes == 256)
        #expect(limits.maxListElements == 100)
        #expect(limits.maxPathComponents == 8)
    }

    @Test("source length in UTF-8 bytes")
    func sourceLength() throws {
        let limits = ExpressionLimits(maxSourceBytes: 20)
        #expect(try parse("\"" + String(repeating: "a", count: 18) + "\"", limits: limits).node != .null)
        let error = try #require(parsingError("\"" + String(repeating: "é", count: 10) + "\"", limits: limits))
        #expect(error.code == .tooLong)
        #expect(error.position == ExpressionError.Position(offset: 20, column: 11))
        #expect(error.message.contains("22 bytes"))
    }

    @Test("nesting depth counts parentheses, lists, ! and binary operators")
    func depth() throws {
        let limits = ExpressionLimits(maxDepth: 4)
        #expect(throws: Never.self) { try parse("(((1)))", limits: limits) }
        #expect(parsingError("((((1))))", limits: limits)?.code == .tooDeep)
        #expect(throws: Never.self) { try parse("!!!true", limits: limits) }
        #expect(parsingError("!!!!true", limits: limits)?.code == .tooDeep)
        #expect(throws: Never.self) { try parse("[[[1]]]", limits: limits) }
        #expect(parsingError("[[[[1]]]]", limits: limits)?.code == .tooDeep)
        #expect(throws: Never.self) { try parse("1 == 1 && 2 == 2 || true", limits: limits) }
        #expect(parsingError("1 == 1 && 2 == 2 && 3 == 3 || true", limits: limits)?.code == .tooDeep)
        #expect(parsingError("!(1 == [[1]])", limits: limits)?.code == .tooDeep)
        let error = try #require(parsingError("  ((((1))))", limits: limits))
        #expect(error.position == ExpressionError.Position(offset: 5, column: 6), "at the '(' one level too deep")
    }

    @Test("100 000 '(' or '!' end in tooDeep, not a stack overflow", arguments: ["(", "!", "[", "!("])
    func deepNesting(opener: String) throws {
        let source = String(repeating: opener, count: 100_000) + "true"
        let roomy = ExpressionLimits(maxSourceBytes: 1_000_000)
        let error = try #require(parsingError(source, limits: roomy))
        #expect(error.code == .tooDeep)
        #expect(try #require(error.position).offset < 64)
        #expect(parsingError(source)?.code == .tooLong, "with default limits the length is refused first")
    }

    @Test("a long flat chain is bounded by the node count, not the stack")
    func longChain() throws {
        let source = Array(repeating: "true", count: 20_000).joined(separator: "||")
        let error = try #require(parsingError(source, limits: .init(maxSourceBytes: 1_000_000, maxDepth: 100_000)))
        #expect(error.code == .tooManyNodes)
    }

    @Test("node count")
    func nodes() throws {
        let limits = ExpressionLimits(maxNodes: 5)
        #expect(throws: Never.self) { try parse("record.a == 1 && true", limits: limits) }
        let error = try #require(parsingError("record.a == 1 && !true", limits: limits))
        #expect(error.code == .tooManyNodes)
        #expect(error.position?.offset == 14, "at the operator that made the sixth node")
        #expect(parsingError("[1, 2, 3, 4, 5]", limits: limits)?.code == .tooManyNodes)
    }

    @Test("list elements")
    func listElements() throws {
        let limits = ExpressionLimits(maxListElements: 3)
        #expect(throws: Never.self) { try parse("[1, 2, 3]", limits: limits) }
        let error = try #require(parsingError("[1, 2, 3, 4]", limits: limits))
        #expect(error.code == .tooManyElements)
        #expect(error.position == ExpressionError.Position(offset: 10, column: 11))
        #expect(error.message.contains("column 1 has more than 3 elements"))
        let hundred = "[" + (1...100).map(String.init).joined(separator: ",") + "]"
        #expect(throws: Never.self) { try parse(hundred) }
        let hundredOne = "[" + (1...101).map(String.init).joined(separator: ",") + "]"
        #expect(parsingError(hundredOne)?.code == .tooManyElements)
    }

    @Test("path length")
    func pathLength() throws {
        #expect(throws: Never.self) { try parse("record.a.b.c.d.e.f.g") }
        let error = try #require(parsingError("1 == record.a.b.c.d.e.f.g.h"))
        #expect(error.code == .pathTooLong)
        #expect(error.position == ExpressionError.Position(offset: 5, column: 6))
        #expect(error.message.contains("9 names"))
    }
}
