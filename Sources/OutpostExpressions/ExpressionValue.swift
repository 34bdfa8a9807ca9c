/// A value that an expression reads, writes as a literal, or produces.
///
/// Objects can only come from an ``ExpressionContext`` (a record's JSON body, say); the language has
/// no object literal. Numbers are `Double`s, so `1` and `1.0` are the same value.
public enum ExpressionValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([ExpressionValue])
    case object([String: ExpressionValue])
}

extension ExpressionValue: CustomStringConvertible {
    /// JSON-like text: `null`, `true`, `2`, `1.5`, `"text"`, `[1, "a"]`, `{"key": 1}` with keys
    /// sorted. Everything but an object is also valid expression source for the same value.
    public var description: String {
        var renderer = ExpressionValueRenderer(limit: .max)
        renderer.render(self)
        return renderer.output
    }
}

extension ExpressionValue: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension ExpressionValue: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
}

extension ExpressionValue: ExpressibleByFloatLiteral {
    public init(floatLiteral value: Double) { self = .number(value) }
}

extension ExpressionValue: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
}

extension ExpressionValue: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: ExpressionValue...) { self = .array(elements) }
}

extension ExpressionValue: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, ExpressionValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

/// Writes values and literals as text, stopping after `limit` characters with `…`.
struct ExpressionValueRenderer {
    /// Objects with more keys than this are summarized rather than sorted and written.
    static let largestSortedObject = 1000
    /// Values nested deeper than this are written as `…`.
    static let deepestNesting = 16

    let limit: Int
    private(set) var output = ""
    private var written = 0
    private var truncated = false

    init(limit: Int) { self.limit = limit }

    mutating func render(_ value: ExpressionValue) { render(value, depth: 0) }

    private mutating func render(_ value: ExpressionValue, depth: Int) {
        guard !truncated else { return }
        switch value {
        case .null: append("null")
        case .bool(let flag): append(flag ? "true" : "false")
        case .number(let number): append(ExpressionText.number(number))
        case .string(let text): append(ExpressionText.quoted(text))
        case .array(let elements):
            if depth >= Self.deepestNesting {
                append("[…]")
                return
            }
            append("[")
            for (index, element) in elements.enumerated() {
                if truncated { return }
                if index > 0 { append(", ") }
                render(element, depth: depth + 1)
            }
            append("]")
        case .object(let fields):
            if depth >= Self.deepestNesting {
                append("{…}")
                return
            }
            if fields.count > Self.largestSortedObject {
                append("{… \(fields.count) keys}")
                return
            }
            append("{")
            for (index, key) in fields.keys.sorted().enumerated() {
                if truncated { return }
                if index > 0 { append(", ") }
                append(ExpressionText.quoted(key))
                append(": ")
                render(fields[key]!, depth: depth + 1)
            }
            append("}")
        }
    }

    private mutating func append(_ text: String) {
        guard !truncated else { return }
        let count = text.count
        if written + count <= limit {
            output += text
            written += count
        } else {
            output += text.prefix(max(0, limit - written))
            output += "…"
            truncated = true
        }
    }
}

/// The canonical spelling of literals, shared by values and expressions.
enum ExpressionText {
    /// Integral numbers below 2^53 without a fraction (`3`), others in Swift's shortest
    /// round-tripping form (`0.1`, `1e+20`), which the lexer reads back to the same `Double`.
    static func number(_ number: Double) -> String {
        if number.isFinite, number == number.rounded(.towardZero), abs(number) < 9_007_199_254_740_992 {
            return String(Int64(number))
        }
        return "\(number)"
    }

    /// A double-quoted string with `\"`, `\\`, `\n`, `\t` and `\uXXXX` for other control characters.
    static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    let hex = String(scalar.value, radix: 16, uppercase: true)
                    result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        result += "\""
        return result
    }
}
