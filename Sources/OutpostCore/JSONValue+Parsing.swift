public import Foundation

extension JSONValue {
    /// Whether ``init(parsing:)`` reads text as `decoder` would decode a `JSONValue` from it: no key
    /// strategy (a `[String: JSONValue]` keeps its keys either way, but this stays on the safe
    /// side) and no JSON5.
    static func parsesAsDecoder(_ decoder: JSONDecoder) -> Bool {
        guard case .useDefaultKeys = decoder.keyDecodingStrategy, !decoder.allowsJSON5 else { return false }
        return true
    }

    /// The nesting depth ``init(parsing:maxDepth:)`` accepts unless told otherwise (Foundation's own limit).
    public static let defaultMaxParsingDepth = 512

    /// Parses JSON text (RFC 8259) in one pass, in time linear in its length. Top-level scalars are accepted.
    ///
    /// Numbers without a fraction or exponent that fit an `Int` become ``int(_:)``; other numbers ``double(_:)``.
    ///
    /// - Parameters:
    ///   - data: The JSON text, UTF-8.
    ///   - maxDepth: Arrays and objects nested deeper than this are refused.
    /// - Throws: `DecodingError.dataCorrupted` saying what is wrong and at which byte.
    public init(parsing data: Data, maxDepth: Int) throws {
        self = try data.withUnsafeBytes { bytes in
            var parser = JSONTextParser(bytes: bytes, maxDepth: maxDepth)
            return try parser.parseDocument()
        }
    }

    /// Parses JSON text as ``init(parsing:maxDepth:)`` does, within `limits`, in the same single
    /// pass: an object with more keys than ``JSONParsingLimits/maxKeysPerObject``, or (with
    /// ``JSONParsingLimits/exactNumbers``) a number that would not read back with the value it
    /// was written with, throws ``JSONLimitExceeded`` naming where it is.
    ///
    /// - Throws: ``JSONLimitExceeded``, or `DecodingError.dataCorrupted` when the text is not JSON.
    @_spi(OutpostInternal)
    public init(parsing data: Data, limits: JSONParsingLimits) throws {
        self = try data.withUnsafeBytes { bytes in
            var parser = JSONTextParser(bytes: bytes, maxDepth: limits.maxDepth)
            parser.maxKeys = limits.maxKeysPerObject
            parser.exactNumbers = limits.exactNumbers
            return try parser.parseDocument()
        }
    }

    /// The deepest nesting of arrays and objects in `data`, scanning no further than one level past
    /// `limit`: linear in the length, and cheap enough to run before any parsing. Brackets inside
    /// strings (escapes included) do not count. It does not validate the text.
    public static func nestingDepth(of data: Data, stoppingAfter limit: Int) -> Int {
        data.withUnsafeBytes { bytes in
            var depth = 0
            var deepest = 0
            var inString = false
            var escaped = false
            for byte in bytes {
                if inString {
                    if escaped {
                        escaped = false
                    } else if byte == UInt8(ascii: "\\") {
                        escaped = true
                    } else if byte == UInt8(ascii: "\"") {
                        inString = false
                    }
                    continue
                }
                switch byte {
                case UInt8(ascii: "\""): inString = true
                case UInt8(ascii: "["), UInt8(ascii: "{"):
                    depth += 1
                    if depth > deepest {
                        deepest = depth
                        if deepest > limit { return deepest }
                    }
                case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
                default: break
                }
            }
            return deepest
        }
    }
}

/// A recursive-descent JSON parser over raw bytes. Recursion is bounded by `maxDepth`; every byte is
/// looked at a constant number of times.
struct JSONTextParser {
    let bytes: UnsafeRawBufferPointer
    let maxDepth: Int
    /// Keys per object past which ``JSONLimitExceeded/Reason/tooManyKeys(_:)`` is thrown.
    var maxKeys = Int.max
    /// Whether a number that does not read back with its written value is refused.
    var exactNumbers = false
    var index = 0
    var depth = 0

    init(bytes: UnsafeRawBufferPointer, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    mutating func parseDocument() throws -> JSONValue {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        guard index == bytes.count else { throw failure("unexpected text after the JSON value") }
        return value
    }

    func failure(_ what: String) -> DecodingError {
        DecodingError.dataCorrupted(
            DecodingError.Context(
                codingPath: [], debugDescription: "The given data was not valid JSON: \(what) at byte \(index)."))
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    mutating func parseValue() throws -> JSONValue {
        guard index < bytes.count else { throw failure("unexpected end of data") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw failure("unexpected character")
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw failure("unexpected end of data") }
        let matches = literal.withUTF8Buffer { expected in
            (0..<count).allSatisfy { bytes[index + $0] == expected[$0] }
        }
        guard matches else { throw failure("invalid literal") }
        index += count
    }

    mutating func enter() throws {
        depth += 1
        guard depth <= maxDepth else { throw failure("arrays and objects nested deeper than \(maxDepth)") }
    }

    mutating func parseArray() throws -> JSONValue {
        try enter()
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            do {
                elements.append(try parseValue())
            } catch var limit as JSONLimitExceeded {
                limit.path.insert(.index(elements.count), at: 0)
                throw limit
            }
            skipWhitespace()
            guard index < bytes.count else { throw failure("unexpected end of data in an array") }
            let byte = bytes[index]
            index += 1
            if byte == UInt8(ascii: ",") { continue }
            if byte == UInt8(ascii: "]") { break }
            index -= 1
            throw failure("expected ',' or ']' in an array")
        }
        depth -= 1
        return .array(elements)
    }

    mutating func parseObject() throws -> JSONValue {
        try enter()
        index += 1
        var object: [String: JSONValue] = [:]
        var members = 0
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object(object)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw failure("expected a string key") }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw failure("expected ':' after a key") }
            index += 1
            skipWhitespace()
            members += 1
            if members > maxKeys { throw JSONLimitExceeded(.tooManyKeys(maxKeys), path: []) }
            do {
                object[key] = try parseValue()
            } catch var limit as JSONLimitExceeded {
                limit.path.insert(.key(key), at: 0)
                throw limit
            }
            skipWhitespace()
            guard index < bytes.count else { throw failure("unexpected end of data in an object") }
            let byte = bytes[index]
            index += 1
            if byte == UInt8(ascii: ",") { continue }
            if byte == UInt8(ascii: "}") { break }
            index -= 1
            throw failure("expected ',' or '}' in an object")
        }
        depth -= 1
        return .object(object)
    }

    mutating func parseString() throws -> String {
        index += 1
        let start = index
        // Fast path: no escapes.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let text = try decodeUTF8(UnsafeRawBufferPointer(rebasing: bytes[start..<index]))
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw failure("unescaped control character in a string") }
            index += 1
        }
        var scalars = [UInt8](UnsafeRawBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return try scalars.withUnsafeBytes { try decodeUTF8($0) }
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw failure("unexpected end of data in an escape") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): scalars.append(0x22)
                case UInt8(ascii: "\\"): scalars.append(0x5C)
                case UInt8(ascii: "/"): scalars.append(0x2F)
                case UInt8(ascii: "b"): scalars.append(0x08)
                case UInt8(ascii: "f"): scalars.append(0x0C)
                case UInt8(ascii: "n"): scalars.append(0x0A)
                case UInt8(ascii: "r"): scalars.append(0x0D)
                case UInt8(ascii: "t"): scalars.append(0x09)
                case UInt8(ascii: "u"): appendUTF8(try parseUnicodeEscape(), to: &scalars)
                default:
                    index -= 1
                    throw failure("invalid escape")
                }
            default:
                if byte < 0x20 { throw failure("unescaped control character in a string") }
                scalars.append(byte)
                index += 1
            }
        }
        throw failure("unterminated string")
    }

    /// After `\u`: four hex digits, and a low surrogate's `\uXXXX` when the first is a high surrogate.
    mutating func parseUnicodeEscape() throws -> Unicode.Scalar {
        let first = try parseHex4()
        if (0xD800...0xDBFF).contains(first) {
            guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                throw failure("a high surrogate without its low surrogate")
            }
            index += 2
            let second = try parseHex4()
            guard (0xDC00...0xDFFF).contains(second) else { throw failure("a high surrogate without its low surrogate") }
            let value = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            guard let scalar = Unicode.Scalar(value) else { throw failure("invalid unicode escape") }
            return scalar
        }
        guard let scalar = Unicode.Scalar(first) else { throw failure("a lone low surrogate") }
        return scalar
    }

    mutating func parseHex4() throws -> UInt32 {
        guard bytes.count - index >= 4 else { throw failure("unexpected end of data in a unicode escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("invalid hex digit in a unicode escape")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    func appendUTF8(_ scalar: Unicode.Scalar, to buffer: inout [UInt8]) {
        buffer.append(contentsOf: String(scalar).utf8)
    }

    func decodeUTF8(_ raw: UnsafeRawBufferPointer) throws -> String {
        // Pure ASCII cannot be invalid; anything else is validated, never repaired.
        if raw.allSatisfy({ $0 < 0x80 }) { return String(decoding: raw, as: UTF8.self) }
        guard let text = String(bytes: raw, encoding: .utf8) else { throw failure("invalid UTF-8 in a string") }
        return text
    }

    mutating func parseNumber() throws -> JSONValue {
        let start = index
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count else { throw failure("unexpected end of data in a number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else if isDigit(at: index) {
            while isDigit(at: index) { index += 1 }
        } else {
            throw failure("invalid number")
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard isDigit(at: index) else { throw failure("invalid number: digits must follow '.'") }
            while isDigit(at: index) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard isDigit(at: index) else { throw failure("invalid number: digits must follow the exponent") }
            while isDigit(at: index) { index += 1 }
        }
        let literal = UnsafeRawBufferPointer(rebasing: bytes[start..<index])
        let text = String(decoding: literal, as: UTF8.self)
        // An integer literal outside Int's range keeps its digits rather than being rounded to a Double.
        if isInteger {
            if let value = Int(text) { return .int(value) }
            // Kept exactly as digits; with exact numbers, only within a 64-bit float's range, which
            // every reader (and every database's numeric comparison) can still order and compare.
            if exactNumbers, !(Double(text)?.isFinite ?? false) {
                throw JSONLimitExceeded(.inexactNumber(text), path: [])
            }
            return .largeInteger(text)
        }
        guard let value = Double(text), value.isFinite else {
            if exactNumbers { throw JSONLimitExceeded(.inexactNumber(text), path: []) }
            throw failure("number out of range")
        }
        if exactNumbers {
            // The stored text is the double's shortest form: it must denote the number written.
            var shortest = value.description
            let same = shortest.withUTF8 { DecimalNumber(literal) == DecimalNumber(UnsafeRawBufferPointer($0)) }
            guard same else { throw JSONLimitExceeded(.inexactNumber(text), path: []) }
        }
        return .double(value)
    }

    func isDigit(at position: Int) -> Bool {
        position < bytes.count && (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position])
    }
}

/// Bounds on JSON text beyond its nesting, checked while it is parsed (``JSONValue/init(parsing:limits:)``).
@_spi(OutpostInternal)
public struct JSONParsingLimits: Sendable, Hashable {
    /// Arrays and objects nested deeper than this are refused.
    public var maxDepth: Int
    /// An object with more members than this is refused (a repeated key counts each time).
    public var maxKeysPerObject: Int
    /// Refuses a number that would not read back with the value it was written with: an integer
    /// beyond a 64-bit float's range, or a number with a fraction or exponent whose nearest 64-bit
    /// float, written in its shortest form, denotes another decimal value (more than 17
    /// significant digits, an underflow to zero, an overflow).
    public var exactNumbers: Bool

    public init(maxDepth: Int, maxKeysPerObject: Int = .max, exactNumbers: Bool = false) {
        self.maxDepth = maxDepth
        self.maxKeysPerObject = maxKeysPerObject
        self.exactNumbers = exactNumbers
    }
}

/// JSON text that parses but exceeds a ``JSONParsingLimits`` bound, and where.
@_spi(OutpostInternal)
public struct JSONLimitExceeded: Error, Sendable, Hashable {
    public enum Reason: Sendable, Hashable {
        /// An object has more members than the limit, which this holds.
        case tooManyKeys(Int)
        /// A number, as written, would not read back with its value.
        case inexactNumber(String)
    }

    /// One step from the document to the offending value.
    public enum PathComponent: Sendable, Hashable {
        case key(String)
        case index(Int)
    }

    public var reason: Reason
    /// From the document to the value (the object, for ``Reason/tooManyKeys(_:)``); empty for the document itself.
    public var path: [PathComponent]

    public init(_ reason: Reason, path: [PathComponent]) {
        self.reason = reason
        self.path = path
    }

    /// ``path`` as a JSON Pointer (RFC 6901): `""` for the document, `/items/0/price` below it.
    public var pointer: String {
        var text = ""
        for component in path {
            text += "/"
            switch component {
            case .key(let key): text += key.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
            case .index(let index): text += String(index)
            }
        }
        return text
    }
}

/// The decimal value of a JSON number literal (or of a `Double`'s description, which has the same
/// shape), normalised so that equal values compare equal: sign, significant digits without leading
/// or trailing zeros, and the power of ten of the last digit. Zero has no sign and no digits.
struct DecimalNumber: Equatable {
    var negative = false
    var digits: [UInt8] = []
    var scale = 0

    init(_ text: UnsafeRawBufferPointer) {
        var index = 0
        if index < text.count, text[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        var fractionDigits = 0
        var inFraction = false
        while index < text.count {
            let byte = text[index]
            if byte == UInt8(ascii: ".") {
                inFraction = true
            } else if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                if !(digits.isEmpty && byte == UInt8(ascii: "0")) { digits.append(byte) }
                if inFraction { fractionDigits += 1 }
            } else {
                break
            }
            index += 1
        }
        var exponent = 0
        if index < text.count, text[index] == UInt8(ascii: "e") || text[index] == UInt8(ascii: "E") {
            index += 1
            var exponentNegative = false
            if index < text.count, text[index] == UInt8(ascii: "+") || text[index] == UInt8(ascii: "-") {
                exponentNegative = text[index] == UInt8(ascii: "-")
                index += 1
            }
            while index < text.count, text[index] >= UInt8(ascii: "0") && text[index] <= UInt8(ascii: "9") {
                // Past a million the value is far outside any float's range either way.
                exponent = min(exponent * 10 + Int(text[index] - UInt8(ascii: "0")), 1_000_000)
                index += 1
            }
            if exponentNegative { exponent = -exponent }
        }
        var trailingZeros = 0
        while let last = digits.last, last == UInt8(ascii: "0") {
            digits.removeLast()
            trailingZeros += 1
        }
        if digits.isEmpty {
            negative = false
            return
        }
        scale = exponent - fractionDigits + trailingZeros
    }
}
