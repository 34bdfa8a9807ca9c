import Foundation
import OutpostCore
import Testing

@testable import OutpostSync

@Suite struct RecordRowsTests {
    static func randomValue(_ random: inout SystemRandomNumberGenerator, depth: Int = 0) -> JSONValue {
        let scalars: [Unicode.Scalar] = ["a", "\"", "\\", "\n", "\u{0}", "\u{1F}", "\u{7F}", "é", "\u{2028}", "😀", "/"]
        switch Int.random(in: 0..<(depth > 2 ? 6 : 8), using: &random) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &random))
        case 2: return .int(Int.random(in: Int.min...Int.max, using: &random))
        case 3: return .double([0.1, -2.5e-300, 1e20, 123456.789, -0.0].randomElement(using: &random)!)
        case 4: return .largeInteger("123456789012345678901234567890")
        case 5:
            var text = ""
            for _ in 0..<Int.random(in: 0..<8, using: &random) {
                text.unicodeScalars.append(scalars.randomElement(using: &random)!)
            }
            return .string(text)
        case 6: return .array((0..<Int.random(in: 0..<4, using: &random)).map { _ in randomValue(&random, depth: depth + 1) })
        default:
            var object: [String: JSONValue] = [:]
            for index in 0..<Int.random(in: 0..<4, using: &random) {
                object["k\(index)\(["", "\"", "é"].randomElement(using: &random)!)"] = randomValue(&random, depth: depth + 1)
            }
            return .object(object)
        }
    }

    @Test func encodedFieldsParseBackToTheSameValues() throws {
        var random = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            var fields: [String: JSONValue] = [:]
            for index in 0..<Int.random(in: 0..<6, using: &random) { fields["f\(index)"] = Self.randomValue(&random) }
            let text = try RecordRows.encode(fields)
            #expect(try RecordRows.decode(text) == fields, "\(text)")
            // Equal fields give equal text, whatever the dictionaries' order.
            #expect(try RecordRows.encode(Dictionary(uniqueKeysWithValues: fields.map { ($0, $1) }.reversed())) == text)
        }
        #expect(throws: SyncError.self) { try RecordRows.encode(["x": .double(.nan)]) }
        #expect(try RecordRows.encode(["a": "\u{1}\"\\\n"]) == #"{"a":"\u0001\"\\\n"}"#)
    }
}
