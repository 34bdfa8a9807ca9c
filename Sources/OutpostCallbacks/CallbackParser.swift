/// The x-callback-url parser, on UTF-8 bytes.
///
/// Checks, in order: a well-formed scheme that `resolveScheme` accepts (else `unknownScheme`),
/// then the host `x-callback-url` (else `invalidHost`). The action may come back empty; the
/// caller decides between `missingAction` and `unknownAction`. Linear in the input, never traps.
///
/// This is the hot path of routing, so it works in one pass over the bytes: the query is scanned
/// eight bytes at a time for the bytes that matter (`&`, `#`, `%`, and `=` in a name), a segment
/// without `%` becomes a `String` straight from the input, and a segment with `%` is decoded while
/// it is scanned, into one scratch buffer, and becomes a `String` from there.
enum CallbackParser {
    private static let slash = UInt8(ascii: "/")
    private static let question = UInt8(ascii: "?")
    private static let hash = UInt8(ascii: "#")
    private static let ampersand = UInt8(ascii: "&")
    private static let equals = UInt8(ascii: "=")
    private static let percent = UInt8(ascii: "%")

    /// Parses `url`.
    ///
    /// `resolveScheme` receives the scheme's bytes as written (ASCII, any case) and returns the
    /// scheme the callback carries (lower-cased), or `nil` when the scheme is not accepted.
    static func parse(
        _ url: String, opener: any URLOpening, resolveScheme: (UnsafeBufferPointer<UInt8>) -> String?
    ) throws(CallbackError) -> Callback {
        var failure = CallbackError.Code.unknownScheme
        // `consume` and `switch` move the callback out of its optionals rather than copy it.
        let contiguous = url.utf8.withContiguousStorageIfAvailable {
            parse(bytes: $0, url: url, opener: opener, failure: &failure, resolveScheme: resolveScheme)
        }
        let parsed: Callback?
        switch consume contiguous {
        case .some(let result):
            parsed = result
        case .none:
            parsed = Array(url.utf8).withUnsafeBufferPointer {
                parse(bytes: $0, url: url, opener: opener, failure: &failure, resolveScheme: resolveScheme)
            }
        }
        switch consume parsed {
        case .some(let callback): return callback
        case .none: throw CallbackError(code: failure, url: url)
        }
    }

    /// The scheme lower-cased (ASCII), for parsing without a router: every scheme is accepted.
    static func lowercasedScheme(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        String(unsafeUninitializedCapacity: bytes.count) { out in
            for j in 0..<bytes.count { out[j] = lowercased(bytes[j]) }
            return bytes.count
        }
    }

    @inline(__always)
    static func lowercased(_ byte: UInt8) -> UInt8 {
        (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) ? byte | 0x20 : byte
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
        failure: inout CallbackError.Code, resolveScheme: (UnsafeBufferPointer<UInt8>) -> String?
    ) -> Callback? {
        let n = b.count
        // Scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"
        guard n > 0, let p = b.baseAddress, isAlpha(p[0]) else {
            failure = .unknownScheme
            return nil
        }
        var i = 1
        while i < n, isSchemeByte(p[i]) { i += 1 }
        guard i < n, p[i] == UInt8(ascii: ":"),
            let scheme = resolveScheme(UnsafeBufferPointer(start: p, count: i))
        else {
            failure = .unknownScheme
            return nil
        }
        i += 1

        // Authority: "//" then the host, compared case-insensitively, then the end of the host.
        guard i + 2 + hostLength <= n, p[i] == slash, p[i + 1] == slash, isHost(p + i + 2) else {
            failure = .invalidHost
            return nil
        }
        i += 2 + hostLength
        if i < n, p[i] != slash, p[i] != question, p[i] != hash {
            failure = .invalidHost
            return nil
        }

        // Path, then the query up to the fragment (ignored).
        let pathStart = i
        i = find(p, from: i, count: n, question, hash, percent, percent)
        let pathEscaped = i < n && p[i] == percent
        if pathEscaped { i = find(p, from: i, count: n, question, hash, hash, hash) }
        let pathEnd = i
        let queryStart = (i < n && p[i] == question) ? i + 1 : n

        // Decoding never makes text longer, so one scratch buffer of the rest of the URL holds
        // the decoded path, and later every decoded name and value; 8 more bytes let the scan
        // copy whole words. Up to 1 KiB lives on the stack.
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: n - pathStart + 8) { scratch in
            // `capacity` is at least 8, so the base address exists; the fallback never runs.
            guard let out = scratch.baseAddress else { return nil }
            let action = Self.action(p, pathStart, pathEnd, escaped: pathEscaped, scratch: out)

            var source: String?
            var success: String?
            var error: String?
            var cancel: String?
            // Made at the first parameter, with room guessed from the rest of the query (a segment
            // is rarely shorter than 24 bytes), so that it seldom grows; counting the segments
            // exactly would cost another pass.
            var parameters: [String: String] = [:]
            var madeParameters = false

            var j = queryStart
            while j < n {
                let first = p[j]
                if first == hash { break }
                if first == ampersand {
                    j += 1
                    continue
                }
                // The name: up to "=", "&", "#" or the end.
                let nameStart = j
                let name = scan(p, from: j, count: n, stopAtEquals: true, into: out)
                j = name.stop
                guard j < n, p[j] == equals else {
                    // A segment without "=" is ignored.
                    if j < n, p[j] == ampersand {
                        j += 1
                        continue
                    }
                    break
                }
                // The value: up to "&", "#" or the end; decoded after the decoded name.
                let valueStart = j + 1
                let value = scan(p, from: valueStart, count: n, stopAtEquals: false, into: out + name.written)
                let valueEnd = value.stop
                j = valueEnd < n && p[valueEnd] == ampersand ? valueEnd + 1 : n
                // A segment with an empty name is ignored (decoding never empties a name).
                if nameStart == name.stop { continue }

                let nameBytes =
                    name.escaped
                    ? UnsafeBufferPointer(start: out, count: name.written)
                    : UnsafeBufferPointer(start: p + nameStart, count: name.stop - nameStart)
                let valueBytes =
                    value.escaped
                    ? UnsafeBufferPointer(start: out + name.written, count: value.written)
                    : UnsafeBufferPointer(start: p + valueStart, count: valueEnd - valueStart)
                if let field = xField(nameBytes) {
                    // An x- parameter with an empty value counts as absent.
                    let present: String? = valueBytes.isEmpty ? nil : makeString(valueBytes)
                    switch field {
                    case .source: source = present
                    case .success: success = present
                    case .error: error = present
                    case .cancel: cancel = present
                    case .other: break
                    }
                } else {
                    if !madeParameters {
                        parameters = Dictionary(minimumCapacity: min(16, 1 + (n - nameStart) / 24))
                        madeParameters = true
                    }
                    parameters[makeString(nameBytes)] = makeString(valueBytes)
                }
            }

            return Callback(
                url: url, scheme: scheme, action: action, source: source, successURL: success,
                errorURL: error, cancelURL: cancel, parameters: parameters, opener: opener)
        }
    }

    // MARK: - Host

    private static let hostLength = 14

    /// Whether the 14 bytes at `p` are `x-callback-url` in any case of ASCII letters.
    @inline(__always)
    private static func isHost(_ p: UnsafePointer<UInt8>) -> Bool {
        // `byte | 0x20` folds only an upper-case letter onto its lower-case one when the
        // expected byte is a lower-case letter; the two `-` are compared exactly.
        let expected: StaticString = "x-callback-url"
        return expected.withUTF8Buffer { literal in
            for k in 0..<hostLength {
                let byte = p[k]
                let wanted = literal[k]
                let folded = wanted == UInt8(ascii: "-") ? byte : byte | 0x20
                if folded != wanted { return false }
            }
            return true
        }
    }

    // MARK: - Scanning

    /// The index of the first of `a`, `b`, `c`, `d` in `p[from..<count]`, or `count`.
    /// Looks at eight bytes at a time.
    @inline(__always)
    private static func find(
        _ p: UnsafePointer<UInt8>, from start: Int, count n: Int, _ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8
    ) -> Int {
        var i = start
        #if _endian(little)
            while n - i >= 8 {
                let word = UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)
                let hits = matches(word, a, b, c, d)
                if hits != 0 { return i &+ hits.trailingZeroBitCount &>> 3 }
                i &+= 8
            }
        #endif
        while i < n {
            let byte = p[i]
            if byte == a || byte == b || byte == c || byte == d { return i }
            i &+= 1
        }
        return n
    }

    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highs: UInt64 = 0x8080_8080_8080_8080

    /// The high bit of every byte of `word` that equals one of the four bytes. Only the lowest
    /// marked byte is reliable (a borrow can mark bytes above a match), which is all we use.
    @inline(__always)
    private static func matches(_ word: UInt64, _ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> UInt64 {
        @inline(__always) func zeroBytes(_ x: UInt64) -> UInt64 { (x &- ones) & ~x & highs }
        var hits = zeroBytes(word ^ (ones &* UInt64(a))) | zeroBytes(word ^ (ones &* UInt64(b)))
        if c != b { hits |= zeroBytes(word ^ (ones &* UInt64(c))) }
        if d != c { hits |= zeroBytes(word ^ (ones &* UInt64(d))) }
        return hits
    }

    /// One scanned name or value: where it stopped, and, when it contained `%`, how many decoded
    /// bytes were written.
    struct Scanned {
        var stop: Int
        var escaped: Bool
        var written: Int
    }

    /// Scans from `start` to the first `&`, `#`, `=` (when `stopAtEquals`) or the end.
    ///
    /// Without `%` nothing is written: the text is the input's bytes. With `%` the text is
    /// percent-decoded into `out` as it is scanned: `%XX` (either case of hex) becomes the byte
    /// `XX`, exactly once; a `%` that is not followed by two hex digits is kept as it is. Writes
    /// at most `stop - start + 8` bytes.
    @inline(__always)
    private static func scan(
        _ p: UnsafePointer<UInt8>, from start: Int, count n: Int, stopAtEquals: Bool,
        into out: UnsafeMutablePointer<UInt8>
    ) -> Scanned {
        let stopByte = stopAtEquals ? equals : hash
        var i = find(p, from: start, count: n, ampersand, hash, percent, stopByte)
        if i == n || p[i] != percent { return Scanned(stop: i, escaped: false, written: 0) }
        out.update(from: p + start, count: i - start)
        var w = i - start
        while true {
            // Here p[i] is "%". "&", "#" and "=" are not hex digits, so a valid escape never
            // reaches past the end of the text being scanned.
            let high = n - i > 2 ? hexNibble(p[i + 1]) : 0xFF
            let low = n - i > 2 ? hexNibble(p[i + 2]) : 0xFF
            if high | low < 16 {
                out[w] = high &<< 4 | low
                i &+= 3
            } else {
                out[w] = percent
                i &+= 1
            }
            w &+= 1
            // Copy up to the next byte that matters, a word at a time: the word is stored whole
            // (the scratch buffer has room) and only its bytes before the match count.
            #if _endian(little)
                var found = false
                while n - i >= 8 {
                    let word = UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)
                    UnsafeMutableRawPointer(out + w).storeBytes(of: word, as: UInt64.self)
                    let hits = matches(word, ampersand, hash, percent, stopByte)
                    if hits != 0 {
                        let k = hits.trailingZeroBitCount &>> 3
                        i &+= k
                        w &+= k
                        found = true
                        break
                    }
                    i &+= 8
                    w &+= 8
                }
            #else
                let found = false
            #endif
            // The tail shorter than a word (or every byte, on big-endian machines), one at a time.
            if !found {
                while i < n {
                    let byte = p[i]
                    if byte == ampersand || byte == hash || byte == percent || byte == stopByte { break }
                    out[w] = byte
                    i &+= 1
                    w &+= 1
                }
            }
            if i == n || p[i] != percent { return Scanned(stop: i, escaped: true, written: w) }
        }
    }

    /// The value of a hex digit (either case), or 16 or more when `byte` is not one; computed
    /// without branches, since encoded text mixes digits and letters unpredictably.
    @inline(__always)
    static func hexNibble(_ byte: UInt8) -> UInt8 {
        let digit = byte &- UInt8(ascii: "0")
        // Only "A"..."F" and "a"..."f" land on 10...15.
        let letter = (byte | 0x20) &- UInt8(ascii: "a") &+ 10
        let isLetter = letter >= 10 && letter < 16
        return digit < 10 ? digit : isLetter ? letter : 0xFF
    }

    // MARK: - Strings

    /// A `String` from UTF-8 bytes, written straight into its storage (inline when short);
    /// bytes that do not form valid UTF-8 become U+FFFD.
    @inline(__always)
    static func makeString(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return "" }
        let count = bytes.count
        return String(unsafeUninitializedCapacity: count) { storage in
            guard let target = storage.baseAddress else { return 0 }
            target.update(from: source, count: count)
            return count
        }
    }

    // MARK: - x- parameters

    enum XField { case source, success, error, cancel, other }

    @inline(__always)
    private static func equals(_ bytes: UnsafeBufferPointer<UInt8>, _ literal: StaticString) -> Bool {
        literal.withUTF8Buffer { expected in
            guard bytes.count == expected.count else { return false }
            for k in 0..<expected.count where bytes[k] != expected[k] { return false }
            return true
        }
    }

    /// Which x- parameter a (decoded) name is, or `nil` when it does not start with `x-`.
    @inline(__always)
    private static func xField(_ name: UnsafeBufferPointer<UInt8>) -> XField? {
        guard name.count >= 2, name[0] == UInt8(ascii: "x"), name[1] == UInt8(ascii: "-") else { return nil }
        switch name.count {
        case 7: return equals(name, "x-error") ? .error : .other
        case 8: return equals(name, "x-source") ? .source : equals(name, "x-cancel") ? .cancel : .other
        case 9: return equals(name, "x-success") ? .success : .other
        default: return .other
        }
    }

    // MARK: - Action

    /// The percent-decoded path without its leading `/` and without one trailing `/`.
    private static func action(
        _ p: UnsafePointer<UInt8>, _ start: Int, _ end: Int, escaped: Bool, scratch: UnsafeMutablePointer<UInt8>
    ) -> String {
        var path = UnsafeBufferPointer(start: p + start, count: end - start)
        if escaped {
            // "&" and "=" are ordinary bytes in a path, so the query scanner does not fit: decode
            // byte by byte (paths are short).
            var w = 0
            var i = start
            while i < end {
                let byte = p[i]
                if byte == percent, end - i > 2, hexNibble(p[i + 1]) | hexNibble(p[i + 2]) < 16 {
                    let high = hexNibble(p[i + 1])
                    let low = hexNibble(p[i + 2])
                    scratch[w] = high &<< 4 | low
                    i += 3
                } else {
                    scratch[w] = byte
                    i += 1
                }
                w += 1
            }
            path = UnsafeBufferPointer(start: scratch, count: w)
        }
        var from = 0
        var to = path.count
        if from < to, path[from] == slash { from += 1 }
        if from < to, path[to - 1] == slash { to -= 1 }
        return makeString(UnsafeBufferPointer(rebasing: path[from..<to]))
    }
}
