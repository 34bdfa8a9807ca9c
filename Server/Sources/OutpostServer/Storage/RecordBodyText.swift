@_spi(OutpostInternal) import OutpostCore

/// The stored text of a record's fields, written by hand: the bytes `JSONValue.jsonString()`
/// writes (compact, keys in UTF-8 byte order, `/` unescaped), without `JSONEncoder`, whose
/// boxing of every value and key cost about a tenth of a POST's CPU.
///
/// Stored bodies keep one canonical form, so equal fields give equal text whichever way they were
/// written. Numbers are written exactly: an integer beyond `Int` as its digits, a floating-point
/// number in its shortest form as `JSONEncoder` writes it (`1.5`, `1e-07`, `100` for `100.0`). A
/// value JSON cannot hold (a non-finite double, digits that are no integer: only plugin code can
/// make them) throws, so no record is ever stored as text that does not read back.
enum RecordBodyText {
    /// The canonical JSON text of `fields` as an object.
    ///
    /// - Throws: 500 `unstorable_record` when a value cannot be written as JSON.
    static func text(_ fields: [String: JSONValue]) throws -> String {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        guard appendObject(fields, to: &out) else {
            throw ServerError(
                .internalServerError, code: "unstorable_record",
                message:
                    "The record holds a number JSON cannot hold (not finite, or digits that are no integer), set by plugin code; "
                    + "it was not written")
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `value`'s text; `false` (the text unfinished) when it holds a number JSON cannot
    /// hold. Nesting is bounded by the parser that made the value.
    static func append(_ value: JSONValue, to out: inout [UInt8]) -> Bool {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let flag): out.append(contentsOf: flag ? "true".utf8 : "false".utf8)
        case .int(let number): out.append(contentsOf: String(number).utf8)
        case .double(let number):
            guard number.isFinite else { return false }
            // `JSONEncoder`'s form: the shortest text that reads back as the same double, without `.0`.
            var text = number.description
            if text.hasSuffix(".0") { text.removeLast(2) }
            out.append(contentsOf: text.utf8)
        case .largeInteger(let digits):
            guard isInteger(digits) else { return false }
            out.append(contentsOf: digits.utf8)
        case .string(let text): appendString(text, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (offset, item) in items.enumerated() {
                if offset > 0 { out.append(UInt8(ascii: ",")) }
                guard append(item, to: &out) else { return false }
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members): return appendObject(members, to: &out)
        }
        return true
    }

    private static func appendObject(_ members: [String: JSONValue], to out: inout [UInt8]) -> Bool {
        out.append(UInt8(ascii: "{"))
        // JSONEncoder's `.sortedKeys` orders keys by their UTF-8 bytes.
        let sorted = members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        for (offset, member) in sorted.enumerated() {
            if offset > 0 { out.append(UInt8(ascii: ",")) }
            appendString(member.key, to: &out)
            out.append(UInt8(ascii: ":"))
            guard append(member.value, to: &out) else { return false }
        }
        out.append(UInt8(ascii: "}"))
        return true
    }

    /// A JSON string literal as `JSONEncoder` writes it: `"` and `\` escaped, control characters
    /// as `\b \t \n \f \r` or `\u00xx` (lowercase hex), everything else as it is.
    static func appendString(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): out.append(contentsOf: #"\\"#.utf8)
            case 0x08: out.append(contentsOf: #"\b"#.utf8)
            case 0x09: out.append(contentsOf: #"\t"#.utf8)
            case 0x0A: out.append(contentsOf: #"\n"#.utf8)
            case 0x0C: out.append(contentsOf: #"\f"#.utf8)
            case 0x0D: out.append(contentsOf: #"\r"#.utf8)
            case 0..<0x20:
                out.append(contentsOf: #"\u00"#.utf8)
                out.append(hexDigit(byte >> 4))
                out.append(hexDigit(byte & 0x0F))
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// An optional `-`, then decimal digits without a leading zero: a JSON integer literal.
    static func isInteger(_ text: String) -> Bool {
        var digits = Substring(text).utf8
        if digits.first == UInt8(ascii: "-") { digits = digits.dropFirst() }
        guard let first = digits.first, first != UInt8(ascii: "0") || digits.count == 1 else { return false }
        return digits.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }
}
