import Foundation
import NIOCore
import Testing

@testable import OutpostServer

@Suite("Mail messages, SMTP replies and the mail templates")
struct MailMessageTests {
    static func message(name: String? = nil, subject: String = "Hello", text: String = "Hi", html: String? = nil) throws
        -> MailMessage
    {
        MailMessage(
            from: try MailAddress("no-reply@outpost.test", name: "Outpost"), to: try MailAddress("ada@example.com", name: name),
            subject: subject, text: text, html: html)
    }

    /// The header lines of a rendered message, unfolded.
    static func headers(_ rendered: String) -> [String] {
        let head = rendered.components(separatedBy: "\r\n\r\n")[0]
        return head.replacingOccurrences(of: "\r\n ", with: " ").components(separatedBy: "\r\n")
    }

    @Test("addresses: plain local@domain only; line breaks, spaces, quotes, brackets and a second @ are refused")
    func addresses() throws {
        #expect(try MailAddress(" ada@example.com ").address == "ada@example.com")
        #expect(try MailAddress("Ada.L+tag@Example.COM").normalized == "ada.l+tag@example.com")
        for bad in [
            "ada@example.com\r\nBcc: eve@example.com", "ada@example.com\n", "a da@example.com", "\"ada\"@example.com",
            "<ada@example.com>", "ada@@example.com", "ada@", "@example.com", "ada", "ada@example..com", "ada@.example.com",
            "adä@example.com", ".ada@example.com", "ada.@example.com", String(repeating: "a", count: 250) + "@example.com",
        ] {
            #expect(throws: MailError.self, "\(bad.debugDescription)") { try MailAddress(bad) }
        }
    }

    @Test("a display name or subject with line breaks never starts a header line of its own")
    func noHeaderInjection() throws {
        let rendered = try Self.message(
            name: "Ada\r\nBcc: eve@example.com", subject: "Hi\r\nBcc: eve@example.com\r\n\r\nforged body"
        ).rendered()
        let headers = Self.headers(rendered)
        #expect(!headers.contains { $0.lowercased().hasPrefix("bcc:") })
        #expect(headers.contains("Subject: Hi  Bcc: eve@example.com    forged body"))
        let to = try #require(headers.first { $0.hasPrefix("To: ") })
        #expect(to.hasPrefix("To: =?UTF-8?B?") && to.hasSuffix(" <ada@example.com>"))
        // Every line of the head ends in CRLF, and no bare CR or LF is anywhere in the message.
        #expect(!rendered.replacingOccurrences(of: "\r\n", with: "").contains("\r"))
        #expect(!rendered.replacingOccurrences(of: "\r\n", with: "").contains("\n"))
    }

    @Test("non-ASCII subjects and names are RFC 2047 encoded words of at most 75 characters")
    func encodedWords() throws {
        let subject = String(repeating: "Grüße aus Zürich – ", count: 8)
        let words = MailMessage.encodedWords(subject)
        #expect(words.count > 1)
        var decoded = Data()
        for word in words {
            #expect(word.count <= 75)
            #expect(word.hasPrefix("=?UTF-8?B?") && word.hasSuffix("?="))
            decoded += try #require(Data(base64Encoded: String(word.dropFirst(10).dropLast(2))))
        }
        #expect(String(decoding: decoded, as: UTF8.self) == subject)
        #expect(MailMessage.encodedHeaderText("Plain subject") == "Plain subject")
        // Text that looks like an encoded word is encoded itself, so a reader does not decode it.
        #expect(MailMessage.encodedHeaderText("=?UTF-8?B?QQ==?=").hasPrefix("=?UTF-8?B?PT9"))
    }

    @Test("quoted-printable: lines of at most 76 characters, '=' and non-ASCII encoded, trailing spaces kept")
    func quotedPrintable() {
        let long = String(repeating: "é=", count: 60) + " "
        let encoded = MailMessage.quotedPrintable(long + "\nnext line \n.dot")
        for line in encoded.components(separatedBy: "\r\n") { #expect(line.count <= 76, "\(line)") }
        #expect(encoded.contains("=C3=A9=3D"))
        #expect(encoded.hasSuffix("next line=20\r\n.dot"))
    }

    @Test("DATA: a line starting with '.' gets another, line ends become CRLF, and the end is CRLF.CRLF")
    func dotStuffing() {
        #expect(SMTPMailSender.dotStuffed("a\n.b\r\n.\nc\r\n") == "a\r\n..b\r\n..\r\nc\r\n.\r\n")
        #expect(SMTPMailSender.dotStuffed("x") == "x\r\n.\r\n")
    }

    @Test("a multipart message carries both parts under one boundary")
    func multipart() throws {
        let rendered = try Self.message(text: "Text", html: "<p>HTML</p>").rendered(boundary: "BOUNDARY")
        #expect(rendered.contains("Content-Type: multipart/alternative; boundary=\"BOUNDARY\""))
        #expect(rendered.contains("--BOUNDARY\r\nContent-Type: text/plain; charset=utf-8"))
        #expect(rendered.contains("--BOUNDARY\r\nContent-Type: text/html; charset=utf-8"))
        #expect(rendered.hasSuffix("--BOUNDARY--\r\n"))
    }

    @Test("SMTP replies: multi-line, partial, and bounded in line length, line count and code")
    func replies() throws {
        var buffer = ByteBuffer(string: "250-sink.test\r\n250-STARTTLS\r\n250 AUTH PLAIN LOGIN\r\n220 next")
        let reply = try #require(try SMTPReply.take(from: &buffer))
        #expect(reply == SMTPReply(code: 250, lines: ["sink.test", "STARTTLS", "AUTH PLAIN LOGIN"]))
        let partial = try SMTPReply.take(from: &buffer)
        #expect(partial == nil)  // "220 next" has no line end yet
        buffer.writeString("\r\n")
        let next = try SMTPReply.take(from: &buffer)
        #expect(next?.code == 220)

        var long = ByteBuffer(string: "250 " + String(repeating: "x", count: SMTPReply.maxLineBytes + 10))
        #expect(throws: MailError.self) { try SMTPReply.take(from: &long) }
        var many = ByteBuffer(string: String(repeating: "250-x\r\n", count: SMTPReply.maxLines + 1) + "250 x\r\n")
        #expect(throws: MailError.self) { try SMTPReply.take(from: &many) }
        var mixed = ByteBuffer(string: "250-a\r\n550 b\r\n")
        #expect(throws: MailError.self) { try SMTPReply.take(from: &mixed) }
        var garbage = ByteBuffer(string: "HTTP/1.1 400 Bad Request\r\n")
        #expect(throws: MailError.self) { try SMTPReply.take(from: &garbage) }
    }

    @Test("SMTP URLs: smtp is STARTTLS on 587, smtps TLS on 465, credentials percent-decoded, others refused")
    func urls() throws {
        let plain = try SMTPConfiguration(url: "smtp://mailer:p%40ss%3Aword@mail.example.com")
        #expect(plain.security == .startTLS && plain.port == 587 && plain.host == "mail.example.com")
        #expect(plain.username == "mailer" && plain.password == "p@ss:word")
        #expect(!plain.isLoopback)
        let implicit = try SMTPConfiguration(url: "smtps://mail.example.com", password: "from-env")
        #expect(implicit.security == .implicitTLS && implicit.port == 465 && implicit.password == "from-env")
        #expect(try SMTPConfiguration(url: "smtp://127.0.0.1:2525").isLoopback)
        for bad in ["http://mail.example.com", "smtp://", "smtp://host/path", "smtp://host?x=1", "smtp://host:0"] {
            #expect(throws: MailError.self, "\(bad)") { try SMTPConfiguration(url: bad) }
        }
    }

    @Test("templates: built-in defaults, an operator's file in their place, text unescaped and HTML escaped")
    func templates() throws {
        let defaults = try MailTemplates(directory: nil)
        let reset = defaults.render(
            .reset, link: "https://a.example/password/reset?token=x&y=1", username: "<ada>", expiry: "30 minutes",
            server: "a.example")
        #expect(reset.subject == "Reset your password on a.example")
        #expect(reset.text.contains("https://a.example/password/reset?token=x&y=1"))
        #expect(reset.text.contains("Hello <ada>,"))
        #expect(reset.html?.contains("Hello &lt;ada&gt;,") == true)
        #expect(reset.html?.contains("token=x&amp;y=1") == true)

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-templates-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try "Your {{server}}\nlink".write(
            to: folder.appendingPathComponent("verify-subject.mustache"), atomically: true, encoding: .utf8)
        try "Go to {{link}} ({{expiry}})".write(
            to: folder.appendingPathComponent("verify-text.mustache"), atomically: true, encoding: .utf8)
        let custom = try MailTemplates(directory: folder.path).render(
            .verify, link: "https://a.example/v?token=1&b=2", username: "ada", expiry: "1 hour", server: "a.example")
        #expect(custom.subject == "Your a.example link")
        #expect(custom.text == "Go to https://a.example/v?token=1&b=2 (1 hour)")
        #expect(custom.html?.contains("Confirm my address") == true)  // the built-in HTML stays

        try "{{#broken}}".write(to: folder.appendingPathComponent("reset-text.mustache"), atomically: true, encoding: .utf8)
        #expect(throws: MailError.self) { try MailTemplates(directory: folder.path) }
    }
}
