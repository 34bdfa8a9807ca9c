/// The x-callback-url parser, on UTF-8 bytes.
///
/// Checks, in order: a well-formed scheme that `acceptsScheme` accepts (else `unknownScheme`),
/// then the host `x-callback-url` (else `invalidHost`). The action may come back empty; the
/// caller decides between `missingAction` and `unknownAction`. Linear in the input, never traps.
enum CallbackParser {
    private static let slash = UInt8(ascii: "/")
    private static let question = UInt8(ascii: "?")
    private static let hash = UInt8(ascii: "#")
    private static let ampersand = UInt8(ascii: "&")
    private static let equals = UInt8(ascii: "=")
    private static let host: [UInt8] = Array("x-callback-url".utf8)

    static func parse(
        _ url: String, opener: any URLOpening, acceptsScheme: (String) -> Bool
    ) throws(CallbackError) -> Callback {
        // Plain optionals rather than a generic Result: this is the hot path of routing.
        var callback: Callback?
        var failure = CallbackError.Code.unknownScheme
        let contiguous: Void? = url.utf8.withContiguousStorageIfAvailable {
            callback = parse(bytes: $0, url: url, opener: opener, failure: &failure, acceptsScheme: acceptsScheme)
        }
        if contiguous == nil {
            Array(url.utf8).withUnsafeBufferPointer {
                callback = parse(bytes: $0, url: url, opener: opener, failure: &failure, acceptsScheme: acceptsScheme)
            }
        }
        guard let callback else { throw CallbackError(code: failure, url: url) }
        return callback
    }

    @inline(__always)
    private static func isAlpha(_ byte: UInt8) -> Bool {
        (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
    }

    @inline(__always)
    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        isAlpha(byte) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
    }

    private static func parse(
        bytes b: UnsafeBufferPointer<UInt8>, url: String, opener: any URLOpening,
        failure: inout CallbackError.Code, acceptsScheme: (String) -> Bool
    ) -> Callback? {
        let n = b.count
        // Scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"
        guard n > 0, isAlpha(b[0]) else {
            failure = .unknownScheme
            return nil
        }
        var i = 1
        while i < n, isSchemeByte(b[i]) { i += 1 }
        guard i < n, b[i] == UInt8(ascii: ":") else {
            failure = .unknownScheme
            return nil
        }
        let schemeLength = i
        let scheme: String
        if UnsafeBufferPointer(rebasing: b[0..<schemeLength]).contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) {
            scheme = String(unsafeUninitializedCapacity: schemeLength) { out in
                for j in 0..<schemeLength {
                    let byte = b[j]
                    out[j] = (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) ? byte | 0x20 : byte
                }
                return schemeLength
            }
        } else {
            scheme = String(decoding: UnsafeBufferPointer(rebasing: b[0..<schemeLength]), as: UTF8.self)
        }
        guard acceptsScheme(scheme) else {
            failure = .unknownScheme
            return nil
        }
        i += 1

        // Authority: "//" then the host, compared case-insensitively.
        guard i + 1 < n, b[i] == slash, b[i + 1] == slash else {
            failure = .invalidHost
            return nil
        }
        i += 2
        let hostStart = i
        while i < n, b[i] != slash, b[i] != question, b[i] != hash { i += 1 }
        guard i - hostStart == host.count else {
            failure = .invalidHost
            return nil
        }
        for j in 0..<host.count {
            let byte = b[hostStart + j]
            let lower = (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) ? byte | 0x20 : byte
            if lower != host[j] {
                failure = .invalidHost
                return nil
            }
        }

        // Path, then the query up to the fragment (ignored); the query loop below finds its end.
        let pathStart = i
        while i < n, b[i] != question, b[i] != hash { i += 1 }
        let pathEnd = i
        let queryStart = (i < n && b[i] == question) ? i + 1 : n

        let action = Self.action(b, pathStart..<pathEnd)

        var source: String?
        var success: String?
        var error: String?
        var cancel: String?
        // A guess from the query's length (a segment is rarely shorter than 24 bytes), so that
        // the dictionary seldom grows; counting the segments exactly would cost another pass.
        var parameters = [String: String](minimumCapacity: queryStart < n ? min(16, 1 + (n - queryStart) / 24) : 0)
        var segmentStart = queryStart
        var equalsAt = -1
        var nameEscaped = false
        var valueEscaped = false
        var j = queryStart
        while true {
            // Skip ordinary bytes fast: only `#`, `%`, `&` and `=` matter here.
            while j < n, !isQuerySpecial(b[j]) { j += 1 }
            let atEnd = j == n || b[j] == hash
            let byte = atEnd ? ampersand : b[j]
            if byte == ampersand {
                // A segment without "=", or with an empty name, is ignored.
                if equalsAt > segmentStart {
                    let nameRange = segmentStart..<equalsAt
                    let valueRange = (equalsAt + 1)..<j
                    if let field = xField(b, nameRange, escaped: nameEscaped) {
                        let value = PercentEncoding.decode(b, valueRange, escaped: valueEscaped)
                        let present: String? = value.isEmpty ? nil : value
                        switch field {
                        case .source: source = present
                        case .success: success = present
                        case .error: error = present
                        case .cancel: cancel = present
                        case .other: break
                        }
                    } else {
                        let name = PercentEncoding.decode(b, nameRange, escaped: nameEscaped)
                        parameters[name] = PercentEncoding.decode(b, valueRange, escaped: valueEscaped)
                    }
                }
                if atEnd { break }
                segmentStart = j + 1
                equalsAt = -1
                nameEscaped = false
                valueEscaped = false
            } else if byte == equals, equalsAt < 0 {
                equalsAt = j
            } else if byte == UInt8(ascii: "%") {
                if equalsAt < 0 { nameEscaped = true } else { valueEscaped = true }
            }
            j += 1
        }

        return Callback(
            url: url, scheme: scheme, action: action, source: source, successURL: success,
            errorURL: error, cancelURL: cancel, parameters: parameters, opener: opener)
    }

    enum XField { case source, success, error, cancel, other }

    /// `#`, `%`, `&` and `=` as bits of one mask, so that the scan needs no branch table.
    private static let querySpecialMask: UInt64 = (1 << 0x23) | (1 << 0x25) | (1 << 0x26) | (1 << 0x3D)

    @inline(__always)
    private static func isQuerySpecial(_ byte: UInt8) -> Bool {
        byte < 64 && (querySpecialMask &>> UInt64(byte)) & 1 != 0
    }

    @inline(__always)
    private static func equals(_ bytes: UnsafeBufferPointer<UInt8>, _ literal: StaticString) -> Bool {
        literal.withUTF8Buffer { expected in
            guard bytes.count == expected.count else { return false }
            for k in 0..<expected.count where bytes[k] != expected[k] { return false }
            return true
        }
    }

    private static func xField(known name: UnsafeBufferPointer<UInt8>) -> XField {
        switch name.count {
        case 7: return equals(name, "x-error") ? .error : .other
        case 8: return equals(name, "x-source") ? .source : equals(name, "x-cancel") ? .cancel : .other
        case 9: return equals(name, "x-success") ? .success : .other
        default: return .other
        }
    }

    /// Which x- parameter a name is, or `nil` when it does not start with `x-` (after decoding).
    private static func xField(_ b: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, escaped: Bool) -> XField? {
        if escaped {
            var name = PercentEncoding.decode(b, range, escaped: true)
            return name.withUTF8 { decoded in
                guard decoded.count >= 2, decoded[0] == UInt8(ascii: "x"), decoded[1] == UInt8(ascii: "-") else {
                    return nil
                }
                return xField(known: decoded)
            }
        }
        guard range.count >= 2, b[range.lowerBound] == UInt8(ascii: "x"), b[range.lowerBound + 1] == UInt8(ascii: "-")
        else { return nil }
        return xField(known: UnsafeBufferPointer(rebasing: b[range]))
    }

    /// The percent-decoded path without its leading `/` and without one trailing `/`.
    private static func action(_ b: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> String {
        let path = UnsafeBufferPointer(rebasing: b[range])
        if !path.contains(UInt8(ascii: "%")) {
            // Without escapes, decoding changes nothing: strip on the bytes.
            var start = 0
            var end = path.count
            if start < end, path[start] == slash { start += 1 }
            if start < end, path[end - 1] == slash { end -= 1 }
            return String(decoding: UnsafeBufferPointer(rebasing: path[start..<end]), as: UTF8.self)
        }
        var decoded = Array(PercentEncoding.decode(b, range, escaped: true).utf8)
        if decoded.first == slash { decoded.removeFirst() }
        if decoded.last == slash { decoded.removeLast() }
        return String(decoding: decoded, as: UTF8.self)
    }
}
