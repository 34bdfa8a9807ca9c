/// Percent-encoding on UTF-8 bytes, the way the x-callback-url rules ask for it: every UTF-8 byte
/// outside the unreserved set `A-Z a-z 0-9 - . _ ~` becomes `%XX` with upper-case hex.
///
/// Decoding happens in ``CallbackParser``, while it scans: `%XX` (either case of hex) becomes the
/// byte `XX`, exactly once; `+` stays a plus; a `%` that is not followed by two hex digits is kept
/// as it is; bytes that do not form valid UTF-8 after decoding become U+FFFD.
enum PercentEncoding {
    @inline(__always)
    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// Percent-encodes everything but the unreserved characters, with upper-case hex.
    static func encode(_ text: String) -> String {
        let hex: [UInt8] = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isUnreserved(byte) {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Percent-encodes each `/`-separated segment of a path, keeping the slashes.
    static func encodePath(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false)
            .map { encode(String($0)) }
            .joined(separator: "/")
    }
}
