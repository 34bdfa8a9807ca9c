package import Foundation
import HTTPTypes

/// The `Cache-Control` directives a private client cache acts on (RFC 9111 §5.2), parsed from every
/// `Cache-Control` line of a message.
///
/// Parsing is bounded and linear: at most ``maxBytes`` of header text and ``maxDirectives``
/// directives; beyond that, or with a malformed value, the message is treated as `no-store`, the
/// safe reading.
struct CacheDirectives: Sendable, Hashable {
    static let maxBytes = 4096
    static let maxDirectives = 64

    var noStore = false
    var noCache = false
    var isPrivate = false
    var isPublic = false
    var mustRevalidate = false
    var maxAge: Int?
    /// Request only: accept a response at most this stale.
    var maxStale: Int?
    /// Request only: `only-if-cached`.
    var onlyIfCached = false
    /// RFC 5861: the server allows a stale response when revalidation fails.
    var staleIfError: Int?

    init() {}

    init(_ fields: HTTPFields) {
        let lines = fields[values: .cacheControl]
        guard !lines.isEmpty else { return }
        var total = 0
        var count = 0
        for line in lines {
            total += line.utf8.count
            guard total <= Self.maxBytes else {
                self = .unusable
                return
            }
            for part in line.split(separator: ",", omittingEmptySubsequences: true) {
                count += 1
                guard count <= Self.maxDirectives else {
                    self = .unusable
                    return
                }
                let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = pieces[0].trimmingCharacters(in: .whitespaces).lowercased()
                var argument = pieces.count > 1 ? pieces[1].trimmingCharacters(in: .whitespaces) : nil
                if let quoted = argument, quoted.count >= 2, quoted.hasPrefix("\""), quoted.hasSuffix("\"") {
                    argument = String(quoted.dropFirst().dropLast())
                }
                switch name {
                case "no-store": noStore = true
                // `no-cache="field"` and `private="field"` name fields a cache would have to drop; a
                // client cache takes them as the whole directive, which is stricter.
                case "no-cache": noCache = true
                case "private": isPrivate = true
                case "public": isPublic = true
                case "must-revalidate", "proxy-revalidate": mustRevalidate = true
                case "max-age":
                    guard let seconds = Self.seconds(argument) else {
                        // An invalid max-age makes the response stale (RFC 9111 §4.2.1).
                        maxAge = 0
                        continue
                    }
                    maxAge = min(maxAge ?? .max, seconds)
                case "max-stale": maxStale = argument.map { Self.seconds($0) ?? 0 } ?? .max
                case "only-if-cached": onlyIfCached = true
                case "stale-if-error": staleIfError = Self.seconds(argument)
                // `s-maxage` is for shared caches only; this cache is private.
                default: continue
                }
            }
        }
    }

    /// What a malformed or oversized `Cache-Control` means here: do not store, always ask.
    static var unusable: CacheDirectives {
        var directives = CacheDirectives()
        directives.noStore = true
        directives.noCache = true
        return directives
    }

    /// A delta-seconds value; very large values saturate at 2^31 (RFC 9111 §1.2.2).
    static func seconds(_ text: (some StringProtocol)?) -> Int? {
        guard let text, !text.isEmpty, text.utf8.count <= 20, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            return nil
        }
        guard text.utf8.count <= 10, let value = Int(text) else { return 2_147_483_648 }
        return min(value, 2_147_483_648)
    }
}

/// HTTP dates (RFC 9110 §5.6.7): the IMF-fixdate form every server must send,
/// `Sun, 06 Nov 1994 08:49:37 GMT`. The obsolete forms are read as invalid, as a recipient may.
package enum HTTPDate {
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    package static func parse(_ text: String?) -> Date? {
        guard let text else { return nil }
        let bytes = Array(text.utf8)
        // "Sun, 06 Nov 1994 08:49:37 GMT" is 29 bytes.
        guard bytes.count == 29, bytes[3] == UInt8(ascii: ","), bytes[4] == 0x20, bytes[7] == 0x20, bytes[11] == 0x20,
            bytes[16] == 0x20, bytes[19] == UInt8(ascii: ":"), bytes[22] == UInt8(ascii: ":"), bytes[25] == 0x20,
            String(decoding: bytes[26..<29], as: UTF8.self) == "GMT"
        else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for index in range {
                let byte = bytes[index]
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            return value
        }
        guard let day = number(5..<7), let year = number(12..<16), let hour = number(17..<19),
            let minute = number(20..<22), let second = number(23..<25),
            let month = months.firstIndex(of: String(decoding: bytes[8..<11], as: UTF8.self)),
            (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        return Date(
            timeIntervalSince1970: TimeInterval(
                daysFromCivil(year: year, month: month + 1, day: day) * 86_400 + hour * 3600 + minute * 60 + second))
    }

    package static func format(_ date: Date) -> String {
        let total = Int(date.timeIntervalSince1970.rounded(.down))
        let days = total >= 0 ? total / 86_400 : (total - 86_399) / 86_400
        let secondsOfDay = total - days * 86_400
        let (year, month, day) = civilFromDays(days)
        let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
        let weekday = weekdays[((days % 7) + 7) % 7]
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(weekday), \(two(day)) \(months[month - 1]) \(year) \(two(secondsOfDay / 3600)):"
            + "\(two(secondsOfDay / 60 % 60)):\(two(secondsOfDay % 60)) GMT"
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civilFromDays(_ days: Int) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
