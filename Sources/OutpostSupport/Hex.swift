/// Lower-case hexadecimal text of bytes, and bytes of hexadecimal text: the one hex codec of the
/// package (digests, ETags, file checksums, token hashes).
@_spi(OutpostInternal) public enum Hex {
    /// `bytes` as lower-case hex, two digits a byte, written in one pass.
    @_spi(OutpostInternal) public static func string(_ bytes: some Sequence<UInt8>) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(bytes.underestimatedCount * 2)
        append(bytes, to: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// `bytes` as lower-case hex, appended to `text`.
    @_spi(OutpostInternal) public static func append(_ bytes: some Sequence<UInt8>, to text: inout [UInt8]) {
        let digits: StaticString = "0123456789abcdef"
        digits.withUTF8Buffer { digits in
            for byte in bytes {
                text.append(digits[Int(byte >> 4)])
                text.append(digits[Int(byte & 0x0f)])
            }
        }
    }

    /// The bytes of hex text (either case), or `nil` when it has an odd length or a non-hex character.
    @_spi(OutpostInternal) public static func bytes(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = text.utf8
        guard utf8.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var high: UInt8?
        for character in utf8 {
            guard let value = value(of: character) else { return nil }
            if let first = high {
                bytes.append(first << 4 | value)
                high = nil
            } else {
                high = value
            }
        }
        return bytes
    }

    /// The value of one hex digit (`0`–`9`, `a`–`f`, `A`–`F`), or `nil`.
    @_spi(OutpostInternal) public static func value(of digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
