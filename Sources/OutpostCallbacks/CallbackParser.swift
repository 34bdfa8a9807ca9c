@_spi(OutpostInternal) import OutpostSupport

/// The x-callback-url parser, on the URL's UTF-8 bytes.
///
/// Checks, in order: a well-formed scheme that `resolveScheme` accepts (else `unknownScheme`),
/// then the host `x-callback-url` (else `invalidHost`). The action may come back empty; the
/// caller decides between `missingAction` and `unknownAction`. Linear in the input, never traps.
///
/// The URL is read once, front to back: scheme, host, path, then the query's `name=value`
/// segments up to the fragment (which is ignored). The parts are ranges of the input's bytes, and
/// each name, value and the action is decoded straight into the storage of its `String`.
enum CallbackParser {
    static let slash = UInt8(ascii: "/")
    static let colon = UInt8(ascii: ":")
    static let question = UInt8(ascii: "?")
    static let hash = UInt8(ascii: "#")
    static let ampersand = UInt8(ascii: "&")
    static let equals = UInt8(ascii: "=")
    static let percent = UInt8(ascii: "%")

    /// Parses `url`.
    ///
    /// `resolveScheme` receives the scheme's bytes as written (ASCII, any case) and returns the
    /// scheme the callback carries (lower-cased), or `nil` when the scheme is not accepted.
    static func parse(
        _ url: String, opener: any URLOpening, resolveScheme: (UnsafeBufferPointer<UInt8>) -> String?
    ) throws(CallbackError) -> Callback {
        // The one unsafe step, and why: reading the String's own UTF-8 storage in place, instead of
        // copying it into an array whose every slice is reference-counted, is what keeps routing
        // above 3× URLComponents (docs/BENCHMARKS.md: 2.1× with the copy). Everything past this
        // point only reads `bytes[i]` at indices it has compared with `bytes.count`.
        var failure = CallbackError.Code.unknownScheme
        let contiguous = url.utf8.withContiguousStorageIfAvailable { bytes in
            parse(bytes, url: url, opener: opener, failure: &failure, resolveScheme: resolveScheme)
        }
        // `consume` and `switch` move the callback out of its optionals: a copy of the whole
        // `Callback` (through its value witness) costs more than a tenth of the parse.
        let parsed: Callback?
        switch consume contiguous {
        case .some(let callback):
            parsed = callback
        case .none:
            parsed = [UInt8](url.utf8).withUnsafeBufferPointer { bytes in
                parse(bytes, url: url, opener: opener, failure: &failure, resolveScheme: resolveScheme)
            }
        }
        switch consume parsed {
        case .some(let callback): return callback
        case .none: throw CallbackError(code: failure, url: url)
        }
    }

    /// The parse proper; `nil` with `failure` set when the URL is not an x-callback-url.
    private static func parse(
        _ bytes: UnsafeBufferPointer<UInt8>, url: String, opener: any URLOpening, failure: inout CallbackError.Code,
        resolveScheme: (UnsafeBufferPointer<UInt8>) -> String?
    ) -> Callback? {
        guard let schemeEnd = schemeEnd(bytes), let scheme = resolveScheme(UnsafeBufferPointer(rebasing: bytes[..<schemeEnd]))
        else {
            failure = .unknownScheme
            return nil
        }
        guard let pathStart = pathStart(bytes, afterScheme: schemeEnd) else {
            failure = .invalidHost
            return nil
        }
        let pathEnd = firstIndex(in: bytes, pathStart..<bytes.count, of: question, or: hash)
        let action = action(bytes, pathStart..<pathEnd)
        var query = QueryFields()
        if pathEnd < bytes.count, bytes[pathEnd] == question {
            let queryEnd = firstIndex(in: bytes, (pathEnd + 1)..<bytes.count, of: hash)
            query.read(bytes, (pathEnd + 1)..<queryEnd)
        }
        return Callback(
            url: url, scheme: scheme, action: action, source: query.source, successURL: query.success,
            errorURL: query.error, cancelURL: query.cancel, parameters: query.parameters, opener: opener)
    }

    // MARK: - Scheme and host

    /// The index of the `:` that ends a well-formed scheme, `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
    static func schemeEnd(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let first = bytes.first, isAlpha(first) else { return nil }
        var end = 1
        while end < bytes.count, isSchemeByte(bytes[end]) { end += 1 }
        return end < bytes.count && bytes[end] == colon ? end : nil
    }

    private static let host = Array("x-callback-url".utf8)

    /// Where the path starts: after `://x-callback-url` (any case), which must be followed by the
    /// end, `/`, `?` or `#`. `nil` when the authority is anything else.
    static func pathStart(_ bytes: UnsafeBufferPointer<UInt8>, afterScheme colonIndex: Int) -> Int? {
        let hostStart = colonIndex + 3
        let hostEnd = hostStart + host.count
        guard hostEnd <= bytes.count, bytes[colonIndex + 1] == slash, bytes[colonIndex + 2] == slash,
            zip(bytes[hostStart..<hostEnd], host).allSatisfy({ lowercased($0) == $1 })
        else { return nil }
        guard hostEnd < bytes.count else { return hostEnd }
        let next = bytes[hostEnd]
        return next == slash || next == question || next == hash ? hostEnd : nil
    }

    /// The scheme lower-cased (ASCII), for parsing without a router: every scheme is accepted.
    static func lowercasedScheme(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        String(decoding: bytes.map(lowercased), as: UTF8.self)
    }

    static func lowercased(_ byte: UInt8) -> UInt8 {
        (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) ? byte | 0x20 : byte
    }

    private static func isAlpha(_ byte: UInt8) -> Bool {
        (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
    }

    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        isAlpha(byte) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
    }

    // MARK: - Path

    /// The percent-decoded path without its leading `/` and without one trailing `/`.
    static func action(_ bytes: UnsafeBufferPointer<UInt8>, _ path: Range<Int>) -> String {
        // The path starts with a literal `/` (or is empty), so dropping it before decoding is the same
        // as after; the trailing one is looked for after decoding, so an encoded `%2F` counts too.
        let start = path.isEmpty ? path.lowerBound : path.lowerBound + 1
        return PercentDecoding.string(bytes, start..<path.upperBound, droppingTrailing: slash)
    }

    // MARK: - Helpers

    /// The first index in `range` whose byte is `a` or `b`, or the end of `range`.
    static func firstIndex(in bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, of a: UInt8, or b: UInt8? = nil) -> Int {
        let b = b ?? a
        var index = range.lowerBound
        // Eight bytes at a time while eight remain: the one place that reads memory as words,
        // because scanning is most of the parse (docs/BENCHMARKS.md, callbacks).
        if let base = bytes.baseAddress {
            let repeatedA = 0x0101_0101_0101_0101 &* UInt64(a)
            let repeatedB = 0x0101_0101_0101_0101 &* UInt64(b)
            while range.upperBound - index >= 8 {
                let word = UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self))
                let hits = Self.zeroBytes(word ^ repeatedA) | Self.zeroBytes(word ^ repeatedB)
                if hits != 0 { return index + hits.trailingZeroBitCount / 8 }
                index += 8
            }
        }
        while index < range.upperBound {
            let byte = bytes[index]
            if byte == a || byte == b { return index }
            index += 1
        }
        return index
    }

    /// The high bit of each zero byte of `word`; only the lowest is exact (a borrow can mark
    /// the bytes above it), which is the only one used.
    private static func zeroBytes(_ word: UInt64) -> UInt64 {
        (word &- 0x0101_0101_0101_0101) & ~word & 0x8080_8080_8080_8080
    }

}

/// Percent-decoding, straight into the storage of the `String` it makes.
enum PercentDecoding {
    /// `bytes[range]` as a `String`: `%XX` (either case of hex) becomes the byte `XX`, exactly once;
    /// a `%` that is not followed by two hex digits stays as it is. Invalid UTF-8 becomes U+FFFD.
    /// With `droppingTrailing`, one such byte at the end of the decoded text is left out.
    static func string(
        _ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, droppingTrailing last: UInt8? = nil
    ) -> String {
        let percent = CallbackParser.firstIndex(in: bytes, range, of: CallbackParser.percent)
        guard percent < range.upperBound else {
            // Nothing to decode: the bytes as they are (copied in one go).
            var end = range.upperBound
            if let last, end > range.lowerBound, bytes[end - 1] == last { end -= 1 }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[range.lowerBound..<end]), as: UTF8.self)
        }
        // Decoding never makes text longer: `range.count` bytes are room enough. The bytes before
        // the first `%` are copied without looking for escapes; from there on byte by byte (the runs between escapes
        // are a few bytes long in a URL given as a value, too short for a copy to pay).
        return String(unsafeUninitializedCapacity: range.count) { out in
            var written = copy(bytes, range.lowerBound..<percent, into: out)
            var index = percent
            while index < range.upperBound {
                if let byte = escapedByte(bytes, at: index, end: range.upperBound) {
                    out[written] = byte
                    index += 3
                } else {
                    out[written] = bytes[index]
                    index += 1
                }
                written += 1
            }
            if let last, written > 0, out[written - 1] == last { written -= 1 }
            return written
        }
    }

    /// Copies `bytes[run]` to the start of `out`; returns how many bytes it copied.
    private static func copy(
        _ bytes: UnsafeBufferPointer<UInt8>, _ run: Range<Int>, into out: UnsafeMutableBufferPointer<UInt8>
    ) -> Int {
        for (offset, index) in run.enumerated() { out[offset] = bytes[index] }
        return run.count
    }

    /// The byte that `%XX` at `index` stands for, or `nil` when there is no such escape there.
    private static func escapedByte(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int, end: Int) -> UInt8? {
        guard bytes[index] == CallbackParser.percent, end - index > 2,
            let high = Hex.value(of: bytes[index + 1]), let low = Hex.value(of: bytes[index + 2])
        else { return nil }
        return high << 4 | low
    }
}

/// The query's parameters: the four x- parameters apart, the others by name (the last one wins).
struct QueryFields {
    var source: String?
    var success: String?
    var error: String?
    var cancel: String?
    var parameters: [String: String] = [:]

    /// Reads the `&`-separated `name=value` segments of `bytes[query]` (without `?` and fragment).
    /// A segment without `=`, or with an empty name, is ignored.
    mutating func read(_ bytes: UnsafeBufferPointer<UInt8>, _ query: Range<Int>) {
        // Room for the parameters guessed from the query's length (a segment is rarely shorter
        // than 24 bytes), so that the dictionary seldom grows.
        parameters = Dictionary(minimumCapacity: min(16, 1 + query.count / 24))
        var start = query.lowerBound
        while start < query.upperBound {
            // One pass: the name ends at the first "=" (or the segment at a "&" without one).
            let nameEnd = CallbackParser.firstIndex(
                in: bytes, start..<query.upperBound, of: CallbackParser.equals, or: CallbackParser.ampersand)
            guard nameEnd < query.upperBound, bytes[nameEnd] == CallbackParser.equals else {
                start = nameEnd + 1
                continue
            }
            let end = CallbackParser.firstIndex(in: bytes, (nameEnd + 1)..<query.upperBound, of: CallbackParser.ampersand)
            if nameEnd > start { add(bytes, name: start..<nameEnd, value: (nameEnd + 1)..<end) }
            start = end + 1
        }
    }

    /// Files one parameter: an x- parameter in its field (an empty value counts as absent), any
    /// other by its decoded name.
    private mutating func add(_ bytes: UnsafeBufferPointer<UInt8>, name: Range<Int>, value: Range<Int>) {
        let written = UnsafeBufferPointer(rebasing: bytes[name])
        if !written.contains(CallbackParser.percent) {
            // The usual case: the name is spelled out, so an x- name is recognised from its bytes,
            // without making a String of it.
            guard let field = XField(written) else {
                parameters[String(decoding: written, as: UTF8.self)] = PercentDecoding.string(bytes, value)
                return
            }
            set(field, to: bytes, value)
        } else {
            var decoded = PercentDecoding.string(bytes, name)
            guard let field = decoded.withUTF8({ XField($0) }) else {
                parameters[decoded] = PercentDecoding.string(bytes, value)
                return
            }
            set(field, to: bytes, value)
        }
    }

    /// Sets `field` to the decoded `bytes[value]`, or to `nil` when the value is empty.
    private mutating func set(_ field: XField, to bytes: UnsafeBufferPointer<UInt8>, _ value: Range<Int>) {
        // Decoding never makes a non-empty value empty, so an empty value is the only absent one.
        let present = value.isEmpty ? nil : PercentDecoding.string(bytes, value)
        switch field {
        case .source: source = present
        case .success: success = present
        case .error: error = present
        case .cancel: cancel = present
        case .other: break  // other x- parameters are not the action's
        }
    }
}

/// Which x- parameter a decoded name is.
enum XField {
    case source, success, error, cancel
    /// Any other name that starts with `x-`.
    case other

    /// The field named by the UTF-8 bytes `name`; `nil` when it does not start with `x-`.
    init?(_ name: UnsafeBufferPointer<UInt8>) {
        guard name.count >= 2, name[0] == UInt8(ascii: "x"), name[1] == UInt8(ascii: "-") else { return nil }
        if Self.is(name, "x-source") {
            self = .source
        } else if Self.is(name, "x-success") {
            self = .success
        } else if Self.is(name, "x-error") {
            self = .error
        } else if Self.is(name, "x-cancel") {
            self = .cancel
        } else {
            self = .other
        }
    }

    /// Whether `name` holds the bytes of `literal`.
    private static func `is`(_ name: UnsafeBufferPointer<UInt8>, _ literal: StaticString) -> Bool {
        literal.withUTF8Buffer { bytes in
            guard name.count == bytes.count else { return false }
            for index in 0..<bytes.count where name[index] != bytes[index] { return false }
            return true
        }
    }
}
