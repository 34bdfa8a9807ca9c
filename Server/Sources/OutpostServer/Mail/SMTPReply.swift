import NIOCore

/// One SMTP reply (RFC 5321 §4.2): a three-digit code and its lines of text, read from a bounded
/// buffer: a line may be at most ``maxLineBytes`` long and a reply at most ``maxLines`` lines.
struct SMTPReply: Sendable, Equatable {
    var code: Int
    var lines: [String]

    /// Longer than RFC 5321's 512 octets (§4.5.3.1.5), for servers that exceed it a little.
    static let maxLineBytes = 2048
    static let maxLines = 100

    var isPositive: Bool { (200..<400).contains(code) }
    /// The text, bounded, for error messages.
    var summary: String { "\(code) " + String(lines.joined(separator: " ").prefix(300)) }

    /// Takes one complete reply off the front of `buffer`, or `nil` when more bytes are needed.
    ///
    /// - Throws: ``MailError`` `smtp_protocol` for a line that is too long, too many lines, a line
    ///   without a code, or a code that changes within the reply.
    static func take(from buffer: inout ByteBuffer) throws -> SMTPReply? {
        var view = buffer
        var lines: [String] = []
        var code: Int?
        while true {
            let readable = view.readableBytesView
            guard let newline = readable.firstIndex(of: UInt8(ascii: "\n")) else {
                if readable.count > maxLineBytes { throw Self.failure("a reply line longer than \(maxLineBytes) bytes") }
                return nil
            }
            let length = newline - readable.startIndex
            guard length <= maxLineBytes else { throw Self.failure("a reply line longer than \(maxLineBytes) bytes") }
            var line = view.readBytes(length: length + 1) ?? []
            line.removeLast()
            if line.last == UInt8(ascii: "\r") { line.removeLast() }
            guard line.count >= 3, line.prefix(3).allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                line.count == 3 || line[3] == UInt8(ascii: " ") || line[3] == UInt8(ascii: "-"),
                let lineCode = Int(String(decoding: line.prefix(3), as: UTF8.self))
            else { throw Self.failure("a reply line that does not start with a three-digit code") }
            if let code, code != lineCode { throw Self.failure("a reply whose lines carry different codes") }
            code = lineCode
            lines.append(String(decoding: line.dropFirst(4), as: UTF8.self))
            guard lines.count <= maxLines else { throw Self.failure("a reply of more than \(maxLines) lines") }
            if line.count == 3 || line[3] == UInt8(ascii: " ") {
                buffer = view
                return SMTPReply(code: lineCode, lines: lines)
            }
        }
    }

    static func failure(_ what: String) -> MailError {
        MailError("smtp_protocol", "The SMTP server sent \(what); check that --smtp names an SMTP server")
    }
}
