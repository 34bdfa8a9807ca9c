import Foundation
import Hummingbird
@_spi(OutpostInternal) import OutpostSupport

/// `application/x-www-form-urlencoded` as the WHATWG URL standard reads it, for query strings and
/// form bodies alike: `&` separates pairs, the first `=` splits name from value, `+` is a space,
/// `%XX` is a byte (a `%` not followed by two hex digits stays as it is), and the bytes are UTF-8.
///
/// Bounded and linear: one pass over the bytes, at most ``maxParameters`` pairs, a query string of
/// at most ``maxQueryBytes``. A name sent twice is refused, since RFC 6749 §3.1 forbids repeated
/// parameters and a second value is a classic way to smuggle one past a check.
enum URLEncodedForm {
    static let maxParameters = 256
    static let maxQueryBytes = 16 * 1024

    /// Parses `bytes` into a dictionary.
    ///
    /// - Throws: ``ServerError`` 400 `too_many_parameters` or `duplicate_parameter`.
    static func parse(_ bytes: some Collection<UInt8>, maxParameters: Int = maxParameters) throws -> [String: String] {
        var fields: [String: String] = [:]
        var count = 0
        var name: [UInt8] = []
        var value: [UInt8] = []
        var inValue = false
        var pending = false

        func finish() throws {
            defer {
                name.removeAll(keepingCapacity: true)
                value.removeAll(keepingCapacity: true)
                inValue = false
                pending = false
            }
            guard pending, !(name.isEmpty && value.isEmpty) else { return }
            count += 1
            guard count <= maxParameters else {
                throw ServerError.badRequest(
                    "too_many_parameters", "The request has more than \(maxParameters) parameters; send fewer")
            }
            let key = decode(name)
            guard !key.isEmpty else { return }
            guard fields[key] == nil else {
                throw ServerError.badRequest(
                    "duplicate_parameter", "The parameter '\(key)' appears more than once; send each parameter once")
            }
            fields[key] = decode(value)
        }

        for byte in bytes {
            switch byte {
            case UInt8(ascii: "&"):
                try finish()
            case UInt8(ascii: "=") where !inValue:
                inValue = true
                pending = true
            default:
                pending = true
                if inValue { value.append(byte) } else { name.append(byte) }
            }
        }
        try finish()
        return fields
    }

    /// Percent-decoding with `+` as a space; invalid UTF-8 becomes U+FFFD.
    static func decode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "+") {
                out.append(0x20)
            } else if byte == UInt8(ascii: "%"), index + 2 < bytes.count, let high = Hex.value(of: bytes[index + 1]),
                let low = Hex.value(of: bytes[index + 2])
            {
                out.append(high << 4 | low)
                index += 2
            } else {
                out.append(byte)
            }
            index += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Encodes for a query string or a form body (space as %20, everything but unreserved escaped).
    static func encode(_ fields: [(String, String)]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(fields.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count + 2 })
        for (offset, field) in fields.enumerated() {
            if offset > 0 { out.append(UInt8(ascii: "&")) }
            append(field, to: &out)
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// One `name=value` pair, both percent-encoded, appended to `out`.
    static func append(_ field: (String, String), to out: inout [UInt8]) {
        PercentEncoding.append(field.0, to: &out)
        out.append(UInt8(ascii: "="))
        PercentEncoding.append(field.1, to: &out)
    }
}

extension Request {
    /// The query string's parameters, read by ``URLEncodedForm`` (so `+` is a space).
    ///
    /// - Throws: ``ServerError`` 400 when the query is too long, has too many parameters or repeats one.
    func queryFields() throws -> [String: String] {
        guard let query = uri.query, !query.isEmpty else { return [:] }
        guard query.utf8.count <= URLEncodedForm.maxQueryBytes else {
            throw ServerError.badRequest(
                "query_too_long", "The query string is longer than \(URLEncodedForm.maxQueryBytes) bytes; send less")
        }
        return try URLEncodedForm.parse(query.utf8)
    }

    /// The body as a form, at most `limit` bytes, read by ``URLEncodedForm``.
    func formFields(limit: Int) async throws -> [String: String] {
        try URLEncodedForm.parse(try await collectBody(limit: limit))
    }
}
