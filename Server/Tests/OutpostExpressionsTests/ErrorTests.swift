import OutpostExpressions
import Testing

@Suite("Parse errors")
struct ErrorTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var source: String
        var code: ExpressionError.Code
        var offset: Int
        var column: Int
        /// Text the message must contain.
        var mentions: String
        var testDescription: String { source }
    }

    static let cases: [Case] = [
        Case(source: "", code: .emptyExpression, offset: 0, column: 1, mentions: "empty"),
        Case(source: "   ", code: .emptyExpression, offset: 0, column: 1, mentions: "such as"),
        Case(source: "record.a ==", code: .unexpectedToken, offset: 11, column: 12, mentions: "after '=='"),
        Case(
            source: "record.a == ", code: .unexpectedToken, offset: 12, column: 13,
            mentions: "expected a value after '==' at column 13, found the end of the expression; write a string"),
        Case(source: "record.a == )", code: .unexpectedToken, offset: 12, column: 13, mentions: "found ')'"),
        Case(source: "== 1", code: .unexpectedToken, offset: 0, column: 1, mentions: "expected a value at column 1"),
        Case(source: "(record.a", code: .unexpectedToken, offset: 9, column: 10, mentions: "to close the '(' at column 1"),
        Case(source: "record.a)", code: .unexpectedToken, offset: 8, column: 9, mentions: "unmatched ')'"),
        Case(source: "record.a 1", code: .unexpectedToken, offset: 9, column: 10, mentions: "after a complete expression"),
        Case(source: "[1, 2", code: .unexpectedToken, offset: 5, column: 6, mentions: "',' or ']'"),
        Case(source: "[1 2]", code: .unexpectedToken, offset: 3, column: 4, mentions: "',' or ']'"),
        Case(source: "[1,]", code: .unexpectedToken, offset: 3, column: 4, mentions: "expected a value"),
        Case(source: "()", code: .unexpectedToken, offset: 1, column: 2, mentions: "after '('"),
        Case(source: "record.a # 1", code: .unexpectedCharacter, offset: 9, column: 10, mentions: "'#'"),
        Case(source: "record.a = 1", code: .unexpectedCharacter, offset: 9, column: 10, mentions: "write '=='"),
        Case(source: "true & false", code: .unexpectedCharacter, offset: 5, column: 6, mentions: "write '&&'"),
        Case(source: "true | false", code: .unexpectedCharacter, offset: 5, column: 6, mentions: "write '||'"),
        Case(source: "record.a ^ \"x\"", code: .unexpectedCharacter, offset: 9, column: 10, mentions: "write '^='"),
        Case(source: "\"é\" == é", code: .unexpectedCharacter, offset: 8, column: 8, mentions: "'é'"),
        Case(source: "record.", code: .unexpectedCharacter, offset: 7, column: 8, mentions: "after '.'"),
        Case(source: "record..a", code: .unexpectedCharacter, offset: 7, column: 8, mentions: "after '.'"),
        Case(source: "record.a == \"open", code: .unterminatedString, offset: 12, column: 13, mentions: "no closing"),
        Case(source: "\"ab\\", code: .unterminatedString, offset: 3, column: 4, mentions: "escape"),
        Case(source: "\"a\nb\"", code: .unexpectedCharacter, offset: 2, column: 3, mentions: "U+A"),
        Case(source: "\"a\\qb\"", code: .invalidEscape, offset: 2, column: 3, mentions: "\\uXXXX"),
        Case(source: "\"\\u12\"", code: .invalidEscape, offset: 1, column: 2, mentions: "four hex digits"),
        Case(source: "\"\\uD83D\"", code: .invalidEscape, offset: 1, column: 2, mentions: "surrogate"),
        Case(source: "\"\\uDE00\"", code: .invalidEscape, offset: 1, column: 2, mentions: "surrogate"),
        Case(source: "\"\\uD83D\\u0041\"", code: .invalidEscape, offset: 1, column: 2, mentions: "surrogate"),
        Case(source: "01", code: .invalidNumber, offset: 0, column: 1, mentions: "'01'"),
        Case(source: "1.", code: .invalidNumber, offset: 0, column: 1, mentions: "write numbers like"),
        Case(source: "1e", code: .invalidNumber, offset: 0, column: 1, mentions: "'1e'"),
        Case(source: "record.a == -", code: .invalidNumber, offset: 12, column: 13, mentions: "'-'"),
        Case(source: "1abc", code: .invalidNumber, offset: 0, column: 1, mentions: "'1abc'"),
        Case(source: "1.2.3", code: .invalidNumber, offset: 0, column: 1, mentions: "'1.2.3'"),
        Case(source: ".5", code: .unexpectedCharacter, offset: 0, column: 1, mentions: "'.'"),
        Case(source: "1e999", code: .invalidNumber, offset: 0, column: 1, mentions: "out of range"),
        Case(source: "user.id == 1", code: .unknownRoot, offset: 0, column: 1, mentions: "caller, record, request"),
        Case(source: "record.a < 1 < 2", code: .chainedComparison, offset: 13, column: 14, mentions: "do not chain"),
        Case(source: "record.a == record.b == true", code: .chainedComparison, offset: 21, column: 22, mentions: "&&"),
        Case(source: "1 in [1] in [true]", code: .chainedComparison, offset: 9, column: 10, mentions: "parentheses"),
    ]

    @Test("code, byte offset, column and message", arguments: cases)
    func reportsError(_ testCase: Case) throws {
        let error = try #require(parsingError(testCase.source))
        #expect(error.code == testCase.code)
        #expect(error.position == ExpressionError.Position(offset: testCase.offset, column: testCase.column))
        #expect(error.message.contains(testCase.mentions), "\(error.message)")
        #expect(error.message.contains("; "), "a message says what to do after '; ': \(error.message)")
        #expect(error.description == error.message)
    }

    @Test("the documented example message")
    func exampleMessage() throws {
        let error = try #require(parsingError("record.a ==)"))
        #expect(
            error.message
                == "expected a value after '==' at column 12, found ')'; write a string, number, true, false, null, "
                + "a list or a path such as record.status")
    }

    @Test("columns count characters, offsets count bytes")
    func columnsAndOffsets() throws {
        // "é" is two bytes and one character; "👍🏽" is eight bytes and one character.
        let error = try #require(parsingError("\"é👍🏽\" == #"))
        #expect(error.position == ExpressionError.Position(offset: 16, column: 9))
        #expect(ExpressionError.Position(offset: 3, in: "é👍🏽") == ExpressionError.Position(offset: 3, column: 2))
        #expect(ExpressionError.Position(offset: 10, in: "é👍🏽") == ExpressionError.Position(offset: 10, column: 3))
    }

    @Test("codes are an open set with stable names")
    func codes() {
        #expect(ExpressionError.Code.tooDeep.rawValue == "too_deep")
        #expect(ExpressionError.Code(rawValue: "too_deep") == .tooDeep)
        #expect(ExpressionError.Code(rawValue: "something_new").description == "something_new")
    }
}
