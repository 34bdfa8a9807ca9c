/// Base64 with the URL and file name safe alphabet and no padding (RFC 4648 §5): the one codec of
/// the package for tokens, PKCE, cursors, JWK members and JWT parts.
@_spi(OutpostInternal) public enum Base64URL {
    /// `bytes` encoded, without padding.
    @_spi(OutpostInternal) public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var out: [UInt8] = []
        append(bytes, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// `bytes` encoded without padding, appended to `out`, in one pass.
    @_spi(OutpostInternal) public static func append(_ bytes: some Collection<UInt8>, to out: inout [UInt8]) {
        let alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
        alphabet.withUTF8Buffer { alphabet in
            out.reserveCapacity(out.count + (bytes.count * 4 + 2) / 3)
            var group: UInt32 = 0
            var count = 0
            for byte in bytes {
                group = group << 8 | UInt32(byte)
                count += 1
                if count == 3 {
                    out.append(alphabet[Int(group >> 18)])
                    out.append(alphabet[Int(group >> 12 & 63)])
                    out.append(alphabet[Int(group >> 6 & 63)])
                    out.append(alphabet[Int(group & 63)])
                    group = 0
                    count = 0
                }
            }
            if count > 0 {
                group <<= 8 * UInt32(3 - count)
                out.append(alphabet[Int(group >> 18)])
                out.append(alphabet[Int(group >> 12 & 63)])
                if count == 2 { out.append(alphabet[Int(group >> 6 & 63)]) }
            }
        }
    }

    /// The bytes of unpadded base64url text, or `nil` when it holds another character (padding,
    /// `+` and `/` included) or has a length no encoding produces (a remainder of one character).
    @_spi(OutpostInternal) public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = text.utf8
        guard utf8.count % 4 != 1 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count * 3 / 4)
        var group: UInt32 = 0
        var count = 0
        for character in utf8 {
            guard let value = value(of: character) else { return nil }
            group = group << 6 | UInt32(value)
            count += 1
            if count == 4 {
                bytes.append(UInt8(group >> 16))
                bytes.append(UInt8(group >> 8 & 0xff))
                bytes.append(UInt8(group & 0xff))
                group = 0
                count = 0
            }
        }
        switch count {
        case 2: bytes.append(UInt8(group >> 4))
        case 3:
            bytes.append(UInt8(group >> 10))
            bytes.append(UInt8(group >> 2 & 0xff))
        default: break
        }
        return bytes
    }

    private static func value(of character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): return 62
        case UInt8(ascii: "_"): return 63
        default: return nil
        }
    }
}
