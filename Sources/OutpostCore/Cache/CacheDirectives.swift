import Foundation
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
