/// Percent-decoding and -encoding on UTF-8 bytes, the way the x-callback-url rules ask for it.
///
/// Decoding: `%XX` (either case of hex) becomes the byte `XX`, exactly once; `+` stays a plus;
/// a `%` that is not followed by two hex digits is kept as it is; bytes that do not form valid
/// UTF-8 after decoding become U+FFFD. Encoding: every UTF-8 byte outside the unreserved set
/// `A-Z a-z 0-9 - . _ ~` becomes `%XX` with upper-case hex.
enum PercentEncoding {
    @inline(__always)
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte &- UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte &- UInt8(ascii: "A") &+ 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte &- UInt8(ascii: "a") &+ 10
        default: return nil
        }
    }

    /// Decodes `bytes[range]`. Never traps, whatever the bytes.
    /// `escaped` says whether the range may contain `%`; when `false` the bytes are taken as they are.
    static func decode(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, escaped: Bool) -> String {
        if range.isEmpty { return "" }
        let slice = UnsafeBufferPointer(rebasing: bytes[range])
        guard escaped else {
            return String(decoding: slice, as: UTF8.self)
        }
        // Decoding never makes the text longer; small results need no heap allocation.
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: slice.count) { out in
            var read = 0
            var written = 0
            let count = slice.count
            while read < count {
                let byte = slice[read]
                if byte == UInt8(ascii: "%"), read + 2 < count,
                    let high = hexValue(slice[read + 1]), let low = hexValue(slice[read + 2])
                {
                    out[written] = high &<< 4 | low
                    read += 3
                } else {
                    out[written] = byte
                    read += 1
                }
                written += 1
            }
            return String(decoding: UnsafeBufferPointer(rebasing: out[0..<written]), as: UTF8.self)
        }
    }

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
