/// RFC 3986 percent-encoding of UTF-8 text: every byte outside the unreserved set
/// `A-Z a-z 0-9 - . _ ~` becomes `%XX` with upper-case hex. The one encoder of x-callback-url
/// parameters and of the server's form and query text.
@_spi(OutpostInternal) public enum PercentEncoding {
    /// RFC 3986's unreserved characters: ASCII letters and digits, `-`, `.`, `_` and `~`.
    @inline(__always)
    @_spi(OutpostInternal) public static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// `text`'s UTF-8 bytes appended to `out`, each byte outside the unreserved set as `%XX`.
    @_spi(OutpostInternal) public static func append(_ text: String, to out: inout [UInt8]) {
        let hex: StaticString = "0123456789ABCDEF"
        hex.withUTF8Buffer { hex in
            for byte in text.utf8 {
                if isUnreserved(byte) {
                    out.append(byte)
                } else {
                    out.append(UInt8(ascii: "%"))
                    out.append(hex[Int(byte >> 4)])
                    out.append(hex[Int(byte & 0x0f)])
                }
            }
        }
    }

    /// `text` percent-encoded: everything but the unreserved characters escaped.
    @_spi(OutpostInternal) public static func encode(_ text: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        append(text, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
