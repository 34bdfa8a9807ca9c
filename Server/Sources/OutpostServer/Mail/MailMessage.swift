import Foundation

/// An e-mail address with an optional display name, checked so that it can never break out of the
/// header or SMTP command it is written into.
public struct MailAddress: Sendable, Hashable, CustomStringConvertible {
    /// `local@domain`: printable ASCII without spaces, quotes, angle brackets or other specials.
    public let address: String
    /// Shown to the reader; any Unicode, written as RFC 2047 encoded words, control characters removed.
    public let name: String?

    /// The most characters of an address (RFC 5321 §4.5.3.1.3: a path of 256 octets with its brackets).
    public static let maxLength = 254

    /// - Throws: ``MailError`` `invalid_address` when `address` is not a plain `local@domain`.
    public init(_ address: String, name: String? = nil) throws {
        guard let checked = Self.checked(address) else {
            throw MailError(
                "invalid_address",
                "'\(address.prefix(80))' is not an e-mail address: write local@domain in ASCII, at most \(Self.maxLength) "
                    + "characters, without spaces, quotes, angle brackets or line breaks")
        }
        self.address = checked
        let cleaned = name.map { String($0.unicodeScalars.filter { !$0.properties.isControlish }.map(Character.init)) }
        self.name = cleaned.flatMap { $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : String($0.prefix(200)) }
    }

    /// `address` trimmed, or `nil` when it is not a plain `local@domain`.
    static func checked(_ text: String) -> String? {
        let address = text.trimmingCharacters(in: .whitespaces)
        let bytes = Array(address.utf8)
        guard (3...maxLength).contains(bytes.count) else { return nil }
        let specials = Set("()<>[]\\,;:\"@ ".utf8)
        var at: Int?
        for (index, byte) in bytes.enumerated() {
            guard byte > 0x20, byte < 0x7F else { return nil }
            if byte == UInt8(ascii: "@") {
                guard at == nil else { return nil }
                at = index
            } else if specials.contains(byte) {
                return nil
            }
        }
        guard let at, at > 0, at < bytes.count - 1, !address.contains("..") else { return nil }
        // Dot-atoms on both sides (RFC 5322 §3.4.1): no dot at either end of either part.
        for part in [bytes[..<at], bytes[(at + 1)...]] {
            guard part.first != UInt8(ascii: "."), part.last != UInt8(ascii: ".") else { return nil }
        }
        return address
    }

    /// The address as it matches stored ones: lower case.
    public var normalized: String { address.lowercased() }

    public var description: String { address }
}

extension Unicode.Scalar.Properties {
    /// C0 and C1 controls, line and paragraph separators: never kept in a header value.
    fileprivate var isControlish: Bool {
        generalCategory == .control || generalCategory == .lineSeparator || generalCategory == .paragraphSeparator
            || generalCategory == .format
    }
}

/// One message: a plain-text body and, optionally, an HTML alternative.
public struct MailMessage: Sendable {
    public var from: MailAddress
    public var to: MailAddress
    /// Any Unicode; line breaks become spaces, non-ASCII is written as RFC 2047 encoded words.
    public var subject: String
    public var text: String
    public var html: String?

    public init(from: MailAddress, to: MailAddress, subject: String, text: String, html: String? = nil) {
        self.from = from
        self.to = to
        self.subject = subject
        self.text = text
        self.html = html
    }
}

/// A failure to make or send a message: a stable code and what to do.
public struct MailError: Error, Sendable, CustomStringConvertible {
    /// `invalid_address`, `smtp_connect`, `smtp_timeout`, `smtp_refused`, `smtp_protocol`,
    /// `smtp_tls_required`, `smtp_tls`, `smtp_auth`, `invalid_template`, `invalid_smtp_url`.
    public var code: String
    public var message: String

    public init(_ code: String, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
