/// A token of expression source, with its byte range.
struct ExpressionToken: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        case null, `true`, `false`
        case number(Double)
        case string(String)
        case path([String])
        case binary(Condition.BinaryOperator)
        case not, leftParen, rightParen, leftBracket, rightBracket, comma, end
    }

    var kind: Kind
    /// Offset of the first byte.
    var start: Int
    /// Offset one past the last byte.
    var end: Int
}

/// Splits source into tokens on demand, one pass over its UTF-8 bytes: each byte is looked at a
/// bounded number of times, so lexing is linear in the source.
struct ExpressionLexer {
    let source: String
    private let bytes: [UInt8]
    private var offset = 0

    init(source: String) {
        self.source = source
        self.bytes = Array(source.utf8)
    }

    var byteCount: Int { bytes.count }

    /// The source text of a token, shortened to `limit` characters with `…`.
    func text(of token: ExpressionToken, limit: Int = 40) -> String {
        let text = String(decoding: bytes[token.start..<token.end], as: UTF8.self)
        return text.count > limit ? String(text.prefix(limit)) + "…" : text
    }

    /// An error at `offset`; `message` receives the column.
    func error(_ code: ExpressionError.Code, at offset: Int, _ message: (Int) -> String) -> ExpressionError {
        let position = ExpressionError.Position(offset: offset, in: source)
        return ExpressionError(code: code, message: message(position.column), position: position)
    }

    mutating func next() throws(ExpressionError) -> ExpressionToken {
        while offset < bytes.count, Self.isWhitespace(bytes[offset]) { offset += 1 }
        let start = offset
        guard offset < bytes.count else { return ExpressionToken(kind: .end, start: start, end: start) }
        let byte = bytes[offset]
        let following: UInt8? = offset + 1 < bytes.count ? bytes[offset + 1] : nil

        func single(_ kind: ExpressionToken.Kind) -> ExpressionToken {
            ExpressionToken(kind: kind, start: start, end: start + 1)
        }
        func double(_ op: Condition.BinaryOperator) -> ExpressionToken {
            ExpressionToken(kind: .binary(op), start: start, end: start + 2)
        }

        switch byte {
        case UInt8(ascii: "("):
            offset += 1
            return single(.leftParen)
        case UInt8(ascii: ")"):
            offset += 1
            return single(.rightParen)
        case UInt8(ascii: "["):
            offset += 1
            return single(.leftBracket)
        case UInt8(ascii: "]"):
            offset += 1
            return single(.rightBracket)
        case UInt8(ascii: ","):
            offset += 1
            return single(.comma)
        case UInt8(ascii: "!"):
            if following == UInt8(ascii: "=") {
                offset += 2
                return double(.notEqual)
            }
            offset += 1
            return single(.not)
        case UInt8(ascii: "<"), UInt8(ascii: ">"):
            let orEqual = following == UInt8(ascii: "=")
            let op: Condition.BinaryOperator =
                byte == UInt8(ascii: "<") ? (orEqual ? .lessOrEqual : .less) : (orEqual ? .greaterOrEqual : .greater)
            offset += orEqual ? 2 : 1
            return ExpressionToken(kind: .binary(op), start: start, end: offset)
        case UInt8(ascii: "="), UInt8(ascii: "^"), UInt8(ascii: "&"), UInt8(ascii: "|"):
            let (second, op): (UInt8, Condition.BinaryOperator) =
                switch byte {
                case UInt8(ascii: "="): (UInt8(ascii: "="), .equal)
                case UInt8(ascii: "^"): (UInt8(ascii: "="), .startsWith)
                case UInt8(ascii: "&"): (UInt8(ascii: "&"), .and)
                default: (UInt8(ascii: "|"), .or)
                }
            guard following == second else {
                throw error(.unexpectedCharacter, at: start) { column in
                    "'\(Character(Unicode.Scalar(byte)))' alone at column \(column) is not an operator; write '\(op.rawValue)'"
                }
            }
            offset += 2
            return double(op)
        case UInt8(ascii: "\""):
            return try string()
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try number()
        default:
            if Self.isIdentifierStart(byte) { return try path() }
            throw unexpectedCharacter(at: start)
        }
    }

    private func unexpectedCharacter(at start: Int) -> ExpressionError {
        let scalar = String(decoding: bytes[start...].prefix(4), as: UTF8.self).unicodeScalars.first ?? "\u{FFFD}"
        let shown =
            scalar.value < 0x20 || scalar.value == 0x7F
            ? "U+" + String(scalar.value, radix: 16, uppercase: true) : "'\(scalar)'"
        return error(.unexpectedCharacter, at: start) { column in
            "unexpected character \(shown) at column \(column); write paths such as record.status, literals, "
                + "and the operators == != < <= > >= in ^= && || ! ( ) [ ]"
        }
    }

    // MARK: - Strings

    private mutating func string() throws(ExpressionError) -> ExpressionToken {
        let start = offset
        offset += 1
        var decoded: [UInt8] = []
        while offset < bytes.count {
            let byte = bytes[offset]
            switch byte {
            case UInt8(ascii: "\""):
                offset += 1
                return ExpressionToken(
                    kind: .string(String(decoding: decoded, as: UTF8.self)), start: start, end: offset)
            case UInt8(ascii: "\\"):
                try escape(into: &decoded)
            case 0..<0x20, 0x7F:
                throw error(.unexpectedCharacter, at: offset) { column in
                    "control character U+\(String(byte, radix: 16, uppercase: true)) in a string at column \(column); "
                        + "write it as \\n, \\t or \\uXXXX"
                }
            default:
                decoded.append(byte)
                offset += 1
            }
        }
        throw error(.unterminatedString, at: start) { column in
            "the string starting at column \(column) has no closing '\"'; end it with a double quote"
        }
    }

    /// Reads the escape at `offset` (a backslash) and appends its UTF-8 bytes.
    private mutating func escape(into decoded: inout [UInt8]) throws(ExpressionError) {
        let start = offset
        guard offset + 1 < bytes.count else {
            throw error(.unterminatedString, at: start) { column in
                "the source ends inside an escape at column \(column); finish the string with a double quote"
            }
        }
        let letter = bytes[offset + 1]
        offset += 2
        switch letter {
        case UInt8(ascii: "\""): decoded.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): decoded.append(UInt8(ascii: "\\"))
        case UInt8(ascii: "n"): decoded.append(UInt8(ascii: "\n"))
        case UInt8(ascii: "t"): decoded.append(UInt8(ascii: "\t"))
        case UInt8(ascii: "u"):
            var value = try hexQuad(escapeStart: start)
            if (0xD800...0xDBFF).contains(value) {
                // A high surrogate must be followed by `\u` and a low surrogate.
                guard offset + 1 < bytes.count, bytes[offset] == UInt8(ascii: "\\"),
                    bytes[offset + 1] == UInt8(ascii: "u")
                else { throw invalidSurrogate(at: start) }
                offset += 2
                let low = try hexQuad(escapeStart: offset - 2)
                guard (0xDC00...0xDFFF).contains(low) else { throw invalidSurrogate(at: start) }
                value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
            }
            guard let scalar = Unicode.Scalar(value) else { throw invalidSurrogate(at: start) }
            UTF8.encode(scalar) { decoded.append($0) }
        default:
            throw error(.invalidEscape, at: start) { column in
                "unknown escape at column \(column); write \\\" \\\\ \\n \\t or \\uXXXX with four hex digits"
            }
        }
    }

    /// Reads four hex digits at `offset`.
    private mutating func hexQuad(escapeStart: Int) throws(ExpressionError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard offset < bytes.count, let digit = Self.hexValue(bytes[offset]) else {
                throw error(.invalidEscape, at: escapeStart) { column in
                    "the \\u escape at column \(column) needs four hex digits; write it like \\u00e9"
                }
            }
            value = value << 4 | digit
            offset += 1
        }
        return value
    }

    private func invalidSurrogate(at start: Int) -> ExpressionError {
        error(.invalidEscape, at: start) { column in
            "the \\u escape at column \(column) is not a Unicode scalar; write a character above U+FFFF "
                + "as a surrogate pair such as \\uD83D\\uDE00, or write it directly"
        }
    }

    // MARK: - Numbers

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, not followed by a letter, digit, `_` or `.`.
    private mutating func number() throws(ExpressionError) -> ExpressionToken {
        let start = offset
        if bytes[offset] == UInt8(ascii: "-") { offset += 1 }
        func digits() -> Int {
            let first = offset
            while offset < bytes.count, Self.isDigit(bytes[offset]) { offset += 1 }
            return offset - first
        }
        var valid = true
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "0") {
            offset += 1
            if offset < bytes.count, Self.isDigit(bytes[offset]) { valid = false }
        } else if digits() == 0 {
            valid = false
        }
        if valid, offset < bytes.count, bytes[offset] == UInt8(ascii: ".") {
            offset += 1
            if digits() == 0 { valid = false }
        }
        if valid, offset < bytes.count, bytes[offset] | 0x20 == UInt8(ascii: "e") {
            offset += 1
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-") {
                offset += 1
            }
            if digits() == 0 { valid = false }
        }
        // Take the rest of a word such as `1abc` or `1.2.3` into the error, not the next token.
        while offset < bytes.count, Self.isIdentifierPart(bytes[offset]) || bytes[offset] == UInt8(ascii: ".") {
            valid = false
            offset += 1
        }
        let text = String(decoding: bytes[start..<offset], as: UTF8.self)
        guard valid, let value = Double(text), value.isFinite else {
            let shown = text.count > 40 ? String(text.prefix(40)) + "…" : text
            let range = valid ? " is out of range" : ""
            throw error(.invalidNumber, at: start) { column in
                "invalid number '\(shown)' at column \(column)\(range); write numbers like 0, 12, -3.5 or 1e6"
            }
        }
        return ExpressionToken(kind: .number(value), start: start, end: offset)
    }

    // MARK: - Paths and keywords

    private mutating func path() throws(ExpressionError) -> ExpressionToken {
        let start = offset
        var components: [String] = []
        while true {
            let first = offset
            offset += 1
            while offset < bytes.count, Self.isIdentifierPart(bytes[offset]) { offset += 1 }
            components.append(String(decoding: bytes[first..<offset], as: UTF8.self))
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: ".") else { break }
            guard offset + 1 < bytes.count, Self.isIdentifierStart(bytes[offset + 1]) else {
                throw error(.unexpectedCharacter, at: offset + 1) { column in
                    "expected a name after '.' at column \(column); paths are names joined by dots, such as record.status"
                }
            }
            offset += 1
        }
        let kind: ExpressionToken.Kind =
            switch components.count == 1 ? components[0] : "" {
            case "null": .null
            case "true": .true
            case "false": .false
            case "in": .binary(.in)
            default: .path(components)
            }
        return ExpressionToken(kind: kind, start: start, end: offset)
    }

    // MARK: - Bytes

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private static func isIdentifierStart(_ byte: UInt8) -> Bool {
        (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "z")) || byte == UInt8(ascii: "_")
    }

    private static func isIdentifierPart(_ byte: UInt8) -> Bool {
        isIdentifierStart(byte) || isDigit(byte)
    }

    private static func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }
}
