import Foundation

/// Identifiers and clock readings every storage backend draws the same way, outside any one
/// database's code.
package enum Identifiers {
    /// 16 lower-case hex characters from the system's secure random source.
    package static func random() -> String {
        var random = SystemRandomNumberGenerator()
        let value = random.next() as UInt64
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// 32 random bytes, for secrets created on first use.
    static func secretBytes() -> Data {
        var random = SystemRandomNumberGenerator()
        return Data((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &random) })
    }

    /// Milliseconds since 1970.
    static func nowMilliseconds() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1000).rounded())
    }
}

/// Lists of strings as every backend stores them: JSON array text.
enum StoredText {
    static func json(_ strings: [String]) -> String {
        (try? String(decoding: JSONEncoder().encode(strings), as: UTF8.self)) ?? "[]"
    }

    static func strings(_ text: String?) -> [String] {
        guard let text, let values = try? JSONDecoder().decode([String].self, from: Data(text.utf8)) else { return [] }
        return values
    }
}
