import Foundation
@_spi(OutpostInternal) import OutpostCore
import OutpostTestSupport
import Testing

/// The JSON value parser against Foundation's `JSONSerialization` on the same bytes: seeded random
/// documents, and the same documents with random bytes inserted, deleted or replaced. Both must
/// accept or refuse each input alike, and what both accept must be the same value.
///
/// The generator leaves out what the two read differently by design: `\u` escapes of surrogates
/// (only valid pairs would be comparable, and a mutation splits them) and exponents beyond a
/// `Double`'s range (Foundation answers infinity, the parser refuses). Mutations insert no `e`,
/// `E` or `u`, so they cannot make either, and no NUL byte: Foundation on Linux reads one as the
/// end of the text (`4\0x` is 4 to it). Foundation also takes a comma before a closing bracket
/// (`[1,]`), which RFC 8259 does not allow and the parser refuses: such a document counts as
/// agreement when only Foundation accepts it.
@Suite("JSON parser against JSONSerialization")
struct JSONDifferentialTests {
    typealias Seeded = SeededGenerator

    static func whitespace(_ random: inout Seeded) -> String {
        ["", "", "", " ", "\n", "\t ", "\r\n  "].randomElement(using: &random)!
    }

    static func string(_ random: inout Seeded) -> String {
        let pieces = ["a", "Z", "0", " ", "é", "中", "😀", "\\\"", "\\\\", "\\/", "\\n", "\\t", "\\u00e9", "\\u4e2D", "-", "_"]
        return "\"" + (0..<Int.random(in: 0...6, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
            + "\""
    }

    static func number(_ random: inout Seeded) -> String {
        switch Int.random(in: 0..<5, using: &random) {
        case 0: return String(Int.random(in: -1_000_000_000_000_000...1_000_000_000_000_000, using: &random))
        case 1: return String(Int.random(in: -9...99, using: &random))
        case 2: return "\(Int.random(in: -999...999, using: &random)).\(Int.random(in: 0...99_999, using: &random))"
        case 3: return "\(Int.random(in: 1...9, using: &random))e\(Int.random(in: -30...30, using: &random))"
        default: return "-0.\(Int.random(in: 0...999, using: &random))E+\(Int.random(in: 0...9, using: &random))"
        }
    }

    static func document(_ random: inout Seeded, depth: Int = 0) -> String {
        let kind = depth >= 5 ? Int.random(in: 0..<4, using: &random) : Int.random(in: 0..<6, using: &random)
        let w = { (random: inout Seeded) in whitespace(&random) }
        switch kind {
        case 0: return ["null", "true", "false"].randomElement(using: &random)!
        case 1: return number(&random)
        case 2, 3: return string(&random)
        case 4:
            let items = (0..<Int.random(in: 0...4, using: &random)).map { _ in
                w(&random) + document(&random, depth: depth + 1) + w(&random)
            }
            return "[" + items.joined(separator: ",") + "]"
        default:
            let items = (0..<Int.random(in: 0...4, using: &random)).map { index in
                w(&random) + "\"k\(index)\"" + w(&random) + ":" + w(&random) + document(&random, depth: depth + 1)
            }
            return "{" + items.joined(separator: ",") + w(&random) + "}"
        }
    }

    static func mutated(_ text: String, _ random: inout Seeded) -> [UInt8] {
        var bytes = Array(text.utf8)
        let alphabet = Array("{}[]\",:0123456789-+. \\atfnlrsx/\u{1}\u{1f}".utf8) + [0xC3, 0xA9, 0xFF]
        for _ in 0..<Int.random(in: 1...3, using: &random) {
            let at = Int.random(in: 0...bytes.count, using: &random)
            switch Int.random(in: 0..<3, using: &random) {
            case 0: bytes.insert(alphabet.randomElement(using: &random)!, at: at)
            case 1: if at < bytes.count { bytes.remove(at: at) }
            default: if at < bytes.count { bytes[at] = alphabet.randomElement(using: &random)! }
            }
        }
        return bytes
    }

    /// Whether `ours` is the value Foundation read as `theirs`.
    static func same(_ ours: JSONValue, _ theirs: Any) -> Bool {
        switch ours {
        case .null: return theirs is NSNull
        case .bool(let value): return (theirs as? Bool) == value
        case .int(let value):
            guard let number = theirs as? NSNumber else { return false }
            return number.int64Value == Int64(value) || number.doubleValue == Double(value)
        case .double(let value):
            guard let number = theirs as? NSNumber else { return false }
            return number.doubleValue == value || abs(number.doubleValue - value) <= abs(value) * 1e-15
        case .largeInteger(let text):
            guard let number = theirs as? NSNumber, let value = Double(text) else { return false }
            return abs(number.doubleValue - value) <= abs(value) * 1e-15
        case .string(let value): return (theirs as? String) == value
        case .array(let values):
            guard let array = theirs as? [Any], array.count == values.count else { return false }
            return zip(values, array).allSatisfy { same($0, $1) }
        case .object(let members):
            guard let object = theirs as? [String: Any], object.count == members.count else { return false }
            return members.allSatisfy { key, value in object[key].map { same(value, $0) } ?? false }
        }
    }

    /// Whether `bytes` has a comma followed only by whitespace and then `]` or `}`, outside strings.
    static func hasTrailingComma(_ bytes: [UInt8]) -> Bool {
        var inString = false
        var escaped = false
        var afterComma = false
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
            case UInt8(ascii: "\""):
                inString = true
                afterComma = false
            case UInt8(ascii: ","): afterComma = true
            case UInt8(ascii: "]"), UInt8(ascii: "}"): if afterComma { return true }
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): break
            default: afterComma = false
            }
        }
        return false
    }

    /// Runs both parsers on `bytes`; returns a description of any disagreement.
    static func disagreement(_ bytes: [UInt8]) -> String? {
        let data = Data(bytes)
        let ours = try? JSONValue(parsing: data, maxDepth: JSONValue.defaultMaxParsingDepth)
        let theirs = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        let text = String(decoding: bytes, as: UTF8.self).debugDescription
        switch (ours, theirs) {
        case (nil, nil): return nil
        case (let ours?, nil): return "only the parser accepts \(text): \(ours)"
        case (nil, let theirs?):
            return hasTrailingComma(bytes) ? nil : "only JSONSerialization accepts \(text): \(theirs)"
        case (let ours?, let theirs?): return same(ours, theirs) ? nil : "\(text) reads as \(ours) and as \(theirs)"
        }
    }

    @Test("valid documents read the same", arguments: [1, 2, 3, 4])
    func validDocuments(seed: UInt64) {
        var random = Seeded(state: seed)
        var accepted = 0
        for _ in 0..<500 {
            let text = Self.whitespace(&random) + Self.document(&random) + Self.whitespace(&random)
            if let problem = Self.disagreement(Array(text.utf8)) {
                Issue.record(Comment(rawValue: problem))
            } else if (try? JSONValue(parsing: Data(text.utf8), maxDepth: 512)) != nil {
                accepted += 1
            }
        }
        #expect(accepted == 500, "every generated document is valid JSON")
    }

    @Test("mutated documents are accepted or refused alike", arguments: [11, 12, 13, 14, 15, 16])
    func mutatedDocuments(seed: UInt64) {
        var random = Seeded(state: seed)
        var refused = 0
        for _ in 0..<1_000 {
            let bytes = Self.mutated(Self.document(&random), &random)
            if let problem = Self.disagreement(bytes) {
                Issue.record(Comment(rawValue: problem))
            } else if (try? JSONValue(parsing: Data(bytes), maxDepth: 512)) == nil {
                refused += 1
            }
        }
        // Most mutations break a document: the comparison covered both outcomes.
        #expect(refused > 100 && refused < 1_000)
    }
}
