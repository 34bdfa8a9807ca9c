public import Foundation

/// Untyped JSON: what a lambda returns, what a handler takes, what a middleware sees.
///
/// Integers and floating-point numbers are kept apart, so `42` round-trips as `42` and not `42.0`.
/// An integer outside `Int`'s range is kept exactly, as its digits (``largeInteger(_:)``), rather
/// than rounded to a `Double`. Objects compare by content; their key order is not significant (encoding sorts keys when the
/// encoder asks for it).
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    /// An integer literal outside `Int`'s range, e.g. `18446744073709551616`, kept as its decimal
    /// digits (with a leading `-` when negative) so that it round-trips exactly.
    case largeInteger(String)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])
}

extension JSONValue {
    /// The value for `key` when this is an object, otherwise `nil`.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let object) = self else { return nil }
        return object[key]
    }

    /// The element at `index` when this is an array and the index is in range, otherwise `nil`.
    public subscript(index: Int) -> JSONValue? {
        guard case .array(let array) = self, array.indices.contains(index) else { return nil }
        return array[index]
    }

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var intValue: Int? {
        switch self {
        case .int(let value): return value
        case .double(let value) where value.rounded() == value && abs(value) < 9.0e15: return Int(value)
        default: return nil
        }
    }

    public var doubleValue: Double? {
        switch self {
        case .int(let value): return Double(value)
        case .double(let value): return value
        case .largeInteger(let digits): return Double(digits)
        default: return nil
        }
    }

    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The exact value of a number (an ``int(_:)``, a ``largeInteger(_:)`` or a ``double(_:)``).
    public var decimalValue: Decimal? {
        switch self {
        case .int(let value): return Decimal(value)
        case .largeInteger(let digits): return Decimal(string: digits, locale: Locale(identifier: "en_US_POSIX"))
        case .double(let value): return Decimal(value)
        default: return nil
        }
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    public var objectValue: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }

    public var isNull: Bool { self == .null }
}

// MARK: - Codable

extension JSONValue: Codable {
    /// Reads any JSON value through a `Decoder`.
    ///
    /// The `Decoder` API cannot say which kind of value comes next, so kinds are tried in turn, and
    /// each wrong guess costs a thrown error. They are tried in the order that makes typical
    /// records cheapest: strings (most fields, no wrong guess), integers, objects, arrays, then
    /// floating-point numbers and booleans. Where the bytes are at hand, ``init(parsing:)`` reads
    /// them in one pass with no guessing; ``OutpostClient`` does so for untyped responses and pages.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode(Int.self) {
            self = .int(value)
        } else if let value = try? container.decode([String: JSONValue].self) {
            self = .object(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else if let value = try? container.decode(Double.self) {
            self = Self.largeInteger(near: value, in: container) ?? .double(value)
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "Not a JSON value.")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .largeInteger(let digits):
            guard Self.isInteger(digits), let decimal = Decimal(string: digits, locale: Locale(identifier: "en_US_POSIX")) else {
                throw EncodingError.invalidValue(
                    digits, .init(codingPath: encoder.codingPath, debugDescription: "'\(digits)' is not an integer literal."))
            }
            try container.encode(decimal)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

extension JSONValue {
    /// An integer literal too large for `Int` (which the decoder offers only as the `Double`
    /// `value`), read again exactly; `nil` when the number was written as a floating-point one.
    ///
    /// JSON decoders do not show the literal, but `Decimal` keeps up to 38 digits: a whole number
    /// with no trailing zeros (`18446744073709551616`), or with more digits than a `Double` holds,
    /// was an integer literal; `6.022e23` or `1e19` stays a `Double`.
    fileprivate static func largeInteger(near value: Double, in container: any SingleValueDecodingContainer) -> JSONValue? {
        guard value.isFinite, value.rounded() == value, abs(value) >= 9.2e18,
            let exact = try? container.decode(Decimal.self), exact.exponent >= 0
        else { return nil }
        let significantDigits = "\(exact.significand)".count
        guard exact.exponent == 0 || significantDigits > 17 else { return nil }
        let digits = exact.description  // `Decimal.description` is not localized: `-9223372036854775809`
        return isInteger(digits) ? .largeInteger(digits) : nil
    }

    fileprivate static func isInteger(_ text: String) -> Bool {
        let digits = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
        return !digits.isEmpty && digits.allSatisfy { $0.isASCII && $0.isNumber }
    }
}

// MARK: - Bytes

extension JSONValue {
    /// Parses JSON text in linear time. Top-level scalars are accepted; nesting is limited to
    /// ``defaultMaxParsingDepth``.
    ///
    /// - Throws: `DecodingError` when the bytes are not JSON.
    public init(parsing data: Data) throws {
        try self.init(parsing: data, maxDepth: Self.defaultMaxParsingDepth)
    }

    /// Compact JSON text with sorted keys, so equal values give equal bytes.
    ///
    /// For display: a non-finite double, which JSON cannot hold, makes the whole text `null`.
    /// Request bodies use ``encoded(pretty:)``, which throws instead.
    public func jsonData(pretty: Bool = false) -> Data {
        (try? encoded(pretty: pretty)) ?? Data("null".utf8)
    }

    /// Compact JSON text with sorted keys, so equal values give equal bytes.
    ///
    /// - Throws: `EncodingError` when the value holds a non-finite double (`nan`, `infinity`),
    ///   which JSON cannot hold.
    public func encoded(pretty: Bool = false) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting =
            pretty ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }

    /// The JSON text of this value.
    public func jsonString(pretty: Bool = false) -> String {
        String(decoding: jsonData(pretty: pretty), as: UTF8.self)
    }

    /// Converts any `Encodable` value into untyped JSON.
    public init(encoding value: some Encodable, encoder: JSONEncoder = JSONEncoder()) throws {
        let data = try encoder.encode(value)
        self = try JSONValue(parsing: data)
    }

    /// Decodes this untyped JSON as a typed value.
    public func decode<T: Decodable>(_ type: T.Type, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        try decoder.decode(T.self, from: jsonData())
    }
}

extension JSONValue: CustomStringConvertible {
    public var description: String { jsonString() }
}

// MARK: - Literals

extension JSONValue: ExpressibleByNilLiteral {
    public init(nilLiteral: ()) { self = .null }
}

extension JSONValue: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension JSONValue: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int) { self = .int(value) }
}

extension JSONValue: ExpressibleByFloatLiteral {
    public init(floatLiteral value: Double) { self = .double(value) }
}

extension JSONValue: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
}

extension JSONValue: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
}

extension JSONValue: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
