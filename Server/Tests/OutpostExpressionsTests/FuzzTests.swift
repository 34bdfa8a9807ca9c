import OutpostExpressions
import Testing

@Suite("Fuzzing")
struct FuzzTests {
    /// Parses `source`; a failure must be an ExpressionError pointing inside the source (or at its end).
    func checkParses(_ source: String, limits: ExpressionLimits = .init()) -> Condition? {
        do {
            return try Condition(parsing: source, roots: allRoots, limits: limits)
        } catch {
            let position = error.position
            #expect(position != nil, "\(error)")
            if let position {
                #expect(position.offset >= 0 && position.offset <= source.utf8.count, "\(error) in \(source)")
                #expect(position.column >= 1 && position.column <= source.count + 1, "\(error) in \(source)")
            }
            #expect(!error.message.isEmpty)
            return nil
        }
    }

    @Test("random bytes never crash the parser")
    func randomBytes() {
        var random = SplitMix64(seed: 0x5EED_0001)
        let alphabet = Array("()[]!=<>^&|,.\"\\-+eE0123456789 \t\nabcdefrtuinl_#é😀".utf8)
        for round in 0..<3000 {
            let length = Int.random(in: 0...40, using: &random)
            var bytes: [UInt8] = []
            for _ in 0..<length {
                // Half arbitrary bytes, half bytes of the language.
                bytes.append(
                    round.isMultiple(of: 2)
                        ? UInt8.random(in: 0...255, using: &random) : alphabet.randomElement(using: &random)!)
            }
            let source = String(decoding: bytes, as: UTF8.self)
            _ = checkParses(source)
            _ = checkParses(source, limits: ExpressionLimits(maxDepth: 3, maxNodes: 5, maxListElements: 2))
        }
    }

    @Test("random token soups either parse and round-trip or fail with a position")
    func tokenSoup() throws {
        var random = SplitMix64(seed: 0x5EED_0002)
        let tokens = [
            "(", ")", "[", "]", ",", "!", "==", "!=", "<", "<=", ">", ">=", "in", "^=", "&&", "||", "true", "false",
            "null", "1", "-2.5", "1e3", "\"a\"", "\"\\u00e9\"", "\"", "record.a", "caller.roles", "request.b.c", "x",
            "record.", "=", "&", "01",
        ]
        var parsed = 0
        for _ in 0..<5000 {
            let count = Int.random(in: 1...12, using: &random)
            let source = (0..<count).map { _ in tokens.randomElement(using: &random)! }
                .joined(separator: Bool.random(using: &random) ? " " : "")
            if let expression = checkParses(source) {
                parsed += 1
                #expect(try parse(expression.description) == expression, "\(source) → \(expression)")
            }
        }
        #expect(parsed > 100, "the soup should contain valid expressions too")
    }

    @Test("random valid trees print canonical source that parses back to them")
    func roundTrip() throws {
        var random = SplitMix64(seed: 0x5EED_0003)
        for _ in 0..<3000 {
            let node = Self.randomNode(depth: 5, using: &random)
            let expression = Condition(node)
            let text = expression.description
            let reparsed = try Condition(
                parsing: text, roots: allRoots, limits: ExpressionLimits(maxSourceBytes: 1_000_000, maxNodes: 10_000))
            #expect(reparsed == expression, "\(text)")
            #expect(reparsed.description == text)
        }
    }

    static func randomNode(depth: Int, using random: inout SplitMix64) -> Condition.Node {
        let leaf = depth == 0 || Int.random(in: 0..<3, using: &random) == 0
        if leaf {
            switch Int.random(in: 0..<6, using: &random) {
            case 0: return .null
            case 1: return .bool(Bool.random(using: &random))
            case 2: return .number(randomNumber(using: &random))
            case 3: return .string(randomString(using: &random))
            default:
                let roots = ["caller", "record", "request"]
                let names = ["a", "b_1", "in", "true", "null", "_x", "Status"]
                let keys = (0..<Int.random(in: 0...3, using: &random)).map { _ in names.randomElement(using: &random)! }
                return .path(ExpressionPath(root: roots.randomElement(using: &random)!, keys: keys))
            }
        }
        switch Int.random(in: 0..<4, using: &random) {
        case 0:
            let count = Int.random(in: 0...3, using: &random)
            return .list((0..<count).map { _ in randomNode(depth: depth - 1, using: &random) })
        case 1:
            return .not(randomNode(depth: depth - 1, using: &random))
        default:
            return .binary(
                Condition.BinaryOperator.allCases.randomElement(using: &random)!,
                randomNode(depth: depth - 1, using: &random), randomNode(depth: depth - 1, using: &random))
        }
    }

    static func randomNumber(using random: inout SplitMix64) -> Double {
        switch Int.random(in: 0..<4, using: &random) {
        case 0: return Double(Int.random(in: -1000...1000, using: &random))
        case 1: return Double.random(in: -1...1, using: &random)
        case 2: return Double.random(in: -1e300...1e300, using: &random)
        default:
            let value = Double(bitPattern: random.next())
            return value.isFinite ? value : 0
        }
    }

    static func randomString(using random: inout SplitMix64) -> String {
        let pieces: [Unicode.Scalar] = ["a", "Z", " ", "\"", "\\", "\n", "\t", "\u{0}", "\u{1F}", "\u{7F}", "é", "😀", "\u{301}"]
        var text = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0...6, using: &random) { text.append(pieces.randomElement(using: &random)!) }
        return String(text)
    }
}
