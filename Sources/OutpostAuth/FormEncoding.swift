import Foundation

/// `application/x-www-form-urlencoded` as RFC 6749 appendix B uses it.
enum FormEncoding {
    /// Only the unreserved characters stay as they are; everything else, space included, is `%XX`.
    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    static func escape(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }

    static func encode(_ fields: [(String, String)]) -> Data {
        Data(fields.map { escape($0.0) + "=" + escape($0.1) }.joined(separator: "&").utf8)
    }

    /// Decodes `a=1&b=x%20y+z` (for fragments and test servers); `+` is a space.
    static func decode(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = unescape(String(parts[0]))
            let value = parts.count > 1 ? unescape(String(parts[1])) : ""
            if fields[name] == nil { fields[name] = value }
        }
        return fields
    }

    static func unescape(_ text: String) -> String {
        let spaced = text.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }
}
