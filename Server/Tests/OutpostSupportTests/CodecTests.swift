import Foundation
@_spi(OutpostInternal) import OutpostSupport
import OutpostTestSupport
import Testing

@Suite("Hex, base64url and civil dates")
struct CodecTests {
    @Test("hex round-trips any bytes and refuses odd lengths and non-hex characters")
    func hex() {
        var random = SeededGenerator(state: 7)
        for length in 0..<64 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            let text = Hex.string(bytes)
            #expect(text == bytes.map { String(format: "%02x", $0) }.joined())
            #expect(Hex.bytes(text) == bytes)
            #expect(Hex.bytes(text.uppercased()) == bytes)
        }
        for bad in ["a", "abc", "0g", "-1", " 0"] { #expect(Hex.bytes(bad) == nil, "\(bad)") }
    }

    @Test("base64url is Foundation's base64 with the URL alphabet and no padding, both ways")
    func base64URL() {
        var random = SeededGenerator(state: 8)
        for length in 0..<64 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            let expected = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.encode(bytes) == expected)
            #expect(Base64URL.decode(expected) == bytes)
        }
        for bad in ["a", "abcde", "ab==", "a+b/", "ab c"] { #expect(Base64URL.decode(bad) == nil, "\(bad)") }
    }

    @Test("civil dates round-trip over five thousand years and match known days")
    func civilDates() {
        #expect(CivilDate.days(year: 1970, month: 1, day: 1) == 0)
        #expect(CivilDate.days(year: 2000, month: 3, day: 1) == 11_017)
        #expect(CivilDate.date(days: -1) == (1969, 12, 31))
        #expect(CivilDate.date(days: 19_782) == (2024, 2, 29))
        for days in stride(from: Int64(-1_000_000), through: 1_000_000, by: 997) {
            let date = CivilDate.date(days: days)
            #expect(CivilDate.days(year: date.year, month: date.month, day: date.day) == days)
        }
    }
}
