/// A `Range` request header (RFC 9110 §14.2) for one byte range, parsed in time linear in the
/// header and bounded in size.
///
/// Only one range is served: a header with several ranges (a comma), another unit, a bad syntax or
/// more than ``maxHeaderBytes`` is ignored, which the RFC allows, and the whole file is sent.
enum ByteRange: Equatable {
    /// Serve the whole file (200).
    case whole
    /// Serve these bytes (206).
    case partial(Range<Int64>)
    /// No byte of the file is in the range (416).
    case unsatisfiable

    /// Longer headers are ignored: one range needs at most `bytes=` and two 19-digit numbers.
    static let maxHeaderBytes = 64

    static func parse(_ header: String, size: Int64) -> ByteRange {
        let bytes = Array(header.utf8.prefix(maxHeaderBytes + 1))
        guard bytes.count <= maxHeaderBytes else { return .whole }
        let prefix = Array("bytes=".utf8)
        guard bytes.count > prefix.count,
            zip(bytes, prefix).allSatisfy({ ($0 | 0x20) == ($1 | 0x20) || $0 == $1 })
        else { return .whole }
        var spec = bytes[prefix.count...]
        while spec.first == 0x20 || spec.first == 0x09 { spec.removeFirst() }
        while spec.last == 0x20 || spec.last == 0x09 { spec.removeLast() }
        guard let dash = spec.firstIndex(of: UInt8(ascii: "-")) else { return .whole }
        let first = number(spec[spec.startIndex..<dash])
        let last = number(spec[(dash + 1)...])
        switch (first, last) {
        case (.some(let first), .some(let last)):
            // `first-last`
            guard first <= last else { return .whole }
            guard first < size else { return .unsatisfiable }
            return .partial(first..<(min(last, size - 1) + 1))
        case (.some(let first), nil):
            // `first-`: from first to the end
            guard spec[(dash + 1)...].isEmpty else { return .whole }
            guard first < size else { return .unsatisfiable }
            return .partial(first..<size)
        case (nil, .some(let suffix)):
            // `-suffix`: the last `suffix` bytes
            guard spec[spec.startIndex..<dash].isEmpty else { return .whole }
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .partial(max(0, size - suffix)..<size)
        case (nil, nil):
            return .whole
        }
    }

    /// A non-negative decimal of 1–18 digits (beyond any file size), or `nil`.
    static func number(_ digits: ArraySlice<UInt8>) -> Int64? {
        guard (1...18).contains(digits.count) else { return nil }
        var value: Int64 = 0
        for digit in digits {
            guard digit >= 0x30, digit <= 0x39 else { return nil }
            value = value * 10 + Int64(digit - 0x30)
        }
        return value
    }
}
