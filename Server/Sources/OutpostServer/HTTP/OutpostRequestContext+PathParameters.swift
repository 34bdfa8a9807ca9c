import Hummingbird
@_spi(OutpostInternal) import OutpostSupport

/// Path parameters, percent-decoded once.
///
/// The router matches the path as it arrived and hands each `{parameter}` over still
/// percent-encoded: a client that encodes `hello:someone` sends `hello%3Asomeone`. Every route reads
/// its parameters here, so each is decoded exactly once and in one way. The router splits the path at
/// `/` before anything is decoded, so `%2F` stays inside its segment and becomes a `/` in the value,
/// which each route's name rules then refuse.
extension OutpostRequestContext {
    /// The path parameter `name`, percent-decoded (RFC 3986 §2.1: `%XX` is one byte, `+` is itself),
    /// or `nil` when the route has no such parameter.
    ///
    /// - Throws: ``ServerError`` 400 `invalid_path_encoding` when a `%` is not followed by two hex
    ///   digits or the decoded bytes are not UTF-8.
    func pathParameter(_ name: String) throws -> String? {
        guard let raw = parameters.get(name) else { return nil }
        guard let decoded = Self.percentDecoded(raw) else {
            throw ServerError.badRequest(
                "invalid_path_encoding",
                "The path's \(name) segment is not valid percent-encoding: each '%' must be followed by two hex digits, "
                    + "and the bytes must be UTF-8 (e.g. ':' is %3A, '/' is %2F)",
                details: ["parameter": .string(name)])
        }
        return decoded
    }

    /// `text` with each `%XX` turned into its byte, or `nil` when a `%` is not followed by two hex
    /// digits or the result is not UTF-8. One pass; text without `%` is returned as it is.
    static func percentDecoded(_ text: String) -> String? {
        guard text.utf8.contains(UInt8(ascii: "%")) else { return text }
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            guard byte == UInt8(ascii: "%") else {
                out.append(byte)
                index += 1
                continue
            }
            guard index + 2 < bytes.count, let high = Hex.value(of: bytes[index + 1]),
                let low = Hex.value(of: bytes[index + 2])
            else { return nil }
            out.append(high << 4 | low)
            index += 3
        }
        return String(validating: out, as: UTF8.self)
    }
}
