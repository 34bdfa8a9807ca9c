import Foundation

/// The message as RFC 5322 / MIME text (RFC 2045–2047): CRLF line ends, every header line within
/// 78 characters where it can be folded, bodies in quoted-printable UTF-8.
extension MailMessage {
    /// The whole message: headers, a blank line, the body. `date` and `id` make the `Date` and
    /// `Message-ID` headers; `boundary` separates the text and HTML parts.
    func rendered(date: Date = Date(), id: String = Secrets.token(prefix: ""), boundary: String? = nil) -> String {
        var headers = [
            "From: " + Self.header(from), "To: " + Self.header(to), "Subject: " + Self.encodedHeaderText(subject),
            "Date: " + Self.date(date), "Message-ID: <\(id)@\(Self.domain(of: from))>", "MIME-Version: 1.0",
            // RFC 3834: an automatic message; auto-responders do not answer it.
            "Auto-Submitted: auto-generated",
        ]
        let textPart = Self.quotedPrintable(text)
        guard let html else {
            headers += ["Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: quoted-printable"]
            return headers.joined(separator: "\r\n") + "\r\n\r\n" + textPart + "\r\n"
        }
        let boundary = boundary ?? "=_outpost_" + Secrets.token(prefix: "").replacingOccurrences(of: "-", with: "x")
        headers.append("Content-Type: multipart/alternative; boundary=\"\(boundary)\"")
        let parts = [
            "--\(boundary)", "Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: quoted-printable", "",
            textPart, "--\(boundary)", "Content-Type: text/html; charset=utf-8",
            "Content-Transfer-Encoding: quoted-printable", "", Self.quotedPrintable(html), "--\(boundary)--", "",
        ]
        return headers.joined(separator: "\r\n") + "\r\n\r\n" + parts.joined(separator: "\r\n")
    }

    /// `"Name" <address>` with the name as encoded words (so nothing in it is read as syntax), or
    /// the bare address.
    static func header(_ address: MailAddress) -> String {
        guard let name = address.name else { return address.address }
        return encodedWords(name).joined(separator: "\r\n ") + " <\(address.address)>"
    }

    /// Header text: as it is when it is short printable ASCII, else RFC 2047 encoded words, folded.
    /// Line breaks and other controls become spaces first.
    static func encodedHeaderText(_ text: String) -> String {
        let flat = String(
            text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : Character($0) })
        if flat.utf8.count <= 900, flat.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }), !flat.contains("=?") {
            return flat
        }
        return encodedWords(flat).joined(separator: "\r\n ")
    }

    /// `=?UTF-8?B?...?=` words of at most 75 characters, never splitting a character.
    static func encodedWords(_ text: String) -> [String] {
        var words: [String] = []
        var chunk: [UInt8] = []
        for character in text {
            let bytes = Array(String(character).utf8)
            if chunk.count + bytes.count > 45, !chunk.isEmpty {
                words.append("=?UTF-8?B?" + Data(chunk).base64EncodedString() + "?=")
                chunk = []
            }
            chunk += bytes
        }
        if !chunk.isEmpty || words.isEmpty { words.append("=?UTF-8?B?" + Data(chunk).base64EncodedString() + "?=") }
        return words
    }

    /// Quoted-printable (RFC 2045 §6.7) of `text` with CRLF line ends: lines of at most 76
    /// characters, `=` and bytes outside printable ASCII encoded, spaces at a line's end encoded.
    static func quotedPrintable(_ text: String) -> String {
        var lines = text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
            .split(separator: "\n", omittingEmptySubsequences: false)
        // A final line break is the part's own: the CRLF that ends the body (or comes before a boundary).
        if lines.count > 1, lines.last?.isEmpty == true { lines.removeLast() }
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [String] = []
        for line in lines {
            let bytes = Array(line.utf8)
            var encoded = ""
            var length = 0
            for (index, byte) in bytes.enumerated() {
                let last = index == bytes.count - 1
                let piece: String
                if (byte >= 33 && byte <= 126 && byte != UInt8(ascii: "=")) || ((byte == 32 || byte == 9) && !last) {
                    piece = String(UnicodeScalar(byte))
                } else {
                    piece = "=" + String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]], as: UTF8.self)
                }
                if length + piece.count > 75 {
                    encoded += "=\r\n"
                    length = 0
                }
                encoded += piece
                length += piece.count
            }
            out.append(encoded)
        }
        return out.joined(separator: "\r\n")
    }

    /// RFC 5322 §3.3 date-time in UTC.
    static func date(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss '+0000'"
        return formatter.string(from: date)
    }

    static func domain(of address: MailAddress) -> String {
        String(address.address[address.address.index(after: address.address.lastIndex(of: "@")!)...])
    }
}
