import Foundation
public import Logging
import NIOCore
public import NIOPosix
import NIOSSL
import Synchronization

/// A small SMTP client (RFC 5321) on SwiftNIO: one connection per message; `EHLO`, STARTTLS
/// (RFC 3207) or implicit TLS (RFC 8314), `AUTH PLAIN` or `AUTH LOGIN` (RFC 4954), `MAIL FROM`,
/// `RCPT TO`, `DATA` with dot-stuffing, `QUIT`. Every reply is bounded in size and lines
/// (2,048-byte lines, 100 lines) and in time (``SMTPConfiguration/replyTimeout``). Without TLS it sends nothing
/// unless the host is loopback or ``SMTPConfiguration/allowsInsecure`` says so.
public struct SMTPMailSender: MailSender {
    public let configuration: SMTPConfiguration
    let group: any EventLoopGroup
    let logger: Logger

    public init(configuration: SMTPConfiguration, logger: Logger, group: MultiThreadedEventLoopGroup = .singleton) {
        self.configuration = configuration
        self.logger = logger
        self.group = group
    }

    public func send(_ message: MailMessage) async throws {
        let tls = try makeTLSContext()
        let configuration = self.configuration
        let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        do {
            channel = try await ClientBootstrap(group: group)
                .connectTimeout(TimeAmount(configuration.connectTimeout))
                .connect(host: configuration.host, port: configuration.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        if configuration.security == .implicitTLS {
                            try channel.pipeline.syncOperations.addHandler(
                                NIOSSLClientHandler(context: tls, serverHostname: Self.serverName(configuration.host)))
                        }
                        return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw MailError(
                "smtp_connect",
                "Could not connect to the SMTP server \(configuration.host):\(configuration.port) (\(error)); check --smtp")
        }
        do {
            try await channel.executeThenClose { inbound, outbound in
                var session = SMTPSession(
                    channel: channel.channel, inbound: inbound.makeAsyncIterator(), outbound: outbound,
                    timeout: configuration.replyTimeout, tlsActive: configuration.security == .implicitTLS)
                try await converse(&session, message: message, tls: tls)
            }
        } catch let error as MailError {
            throw error
        } catch {
            // A write to a connection the server or a failed TLS handshake closed.
            throw MailError(
                "smtp_protocol",
                "The SMTP conversation with \(configuration.host):\(configuration.port) failed (\(error)); "
                    + "check --smtp and, with a private CA, --smtp-ca-file")
        }
        logger.info("mail sent", metadata: ["smtp": "\(configuration.host):\(configuration.port)"])
    }

    private func converse(_ session: inout SMTPSession, message: MailMessage, tls: NIOSSLContext) async throws {
        try await session.expect(220, "the greeting")
        var capabilities = try await session.hello(configuration.clientName)
        if !session.tlsActive {
            if capabilities.contains(where: { $0.uppercased() == "STARTTLS" }) {
                try await session.command("STARTTLS", expect: 220, step: "STARTTLS")
                try await session.startTLS(tls, serverName: Self.serverName(configuration.host))
                capabilities = try await session.hello(configuration.clientName)
            } else if !(configuration.allowsInsecure || (configuration.trustsLoopback && configuration.isLoopback)) {
                throw MailError(
                    "smtp_tls_required",
                    "The SMTP server \(configuration.host) offers no STARTTLS, and its messages carry sign-in links "
                        + "(and the password would travel in clear): use smtps://, a server with STARTTLS, or --smtp-insecure "
                        + "on a network you trust")
            }
        }
        if let username = configuration.username {
            try await authenticate(&session, username: username, capabilities: capabilities)
        }
        try await session.command("MAIL FROM:<\(message.from.address)>", expect: 250, step: "MAIL FROM")
        try await session.command("RCPT TO:<\(message.to.address)>", expect: 250, step: "RCPT TO")
        try await session.command("DATA", expect: 354, step: "DATA")
        try await session.write(Self.dotStuffed(message.rendered()))
        try await session.expect(250, "the end of the message")
        try? await session.command("QUIT", expect: 221, step: "QUIT")
    }

    private func authenticate(_ session: inout SMTPSession, username: String, capabilities: [String]) async throws {
        let mechanisms = Set(
            capabilities.filter { $0.uppercased().hasPrefix("AUTH ") || $0.uppercased().hasPrefix("AUTH=") }
                .flatMap { $0.dropFirst(5).uppercased().split(separator: " ").map(String.init) })
        let password = configuration.password ?? ""
        func base64(_ text: String) -> String { Data(text.utf8).base64EncodedString() }
        if mechanisms.contains("PLAIN") {
            try await session.command(
                "AUTH PLAIN " + base64("\0\(username)\0\(password)"), expect: 235, step: "AUTH PLAIN", secret: true)
        } else if mechanisms.contains("LOGIN") {
            try await session.command("AUTH LOGIN", expect: 334, step: "AUTH LOGIN")
            try await session.command(base64(username), expect: 334, step: "AUTH LOGIN (username)", secret: true)
            try await session.command(base64(password), expect: 235, step: "AUTH LOGIN (password)", secret: true)
        } else {
            throw MailError(
                "smtp_auth",
                "The SMTP server \(configuration.host) offers neither AUTH PLAIN nor AUTH LOGIN "
                    + "(it offered: \(mechanisms.sorted().joined(separator: " ")))")
        }
    }

    /// The message as `DATA` sends it (RFC 5321 §4.5.2): CRLF line ends, a `.` doubled at the start
    /// of a line, then `CRLF . CRLF`.
    static func dotStuffed(_ text: String) -> String {
        let lines = text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
            .split(separator: "\n", omittingEmptySubsequences: false)
        var body = lines.map { $0.hasPrefix(".") ? "." + $0 : String($0) }
        if body.last == "" { body.removeLast() }
        return body.joined(separator: "\r\n") + "\r\n.\r\n"
    }

    /// The name for SNI and the certificate check: `nil` for an IP address (checked against the
    /// certificate's IP addresses instead).
    static func serverName(_ host: String) -> String? {
        if host.contains(":") { return nil }
        let parts = host.split(separator: ".")
        if parts.count == 4, parts.allSatisfy({ UInt8($0) != nil }) { return nil }
        return host
    }

    private func makeTLSContext() throws -> NIOSSLContext {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        if let file = configuration.trustedCertificatesFile {
            do {
                tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMFile(file))]
            } catch {
                throw MailError("smtp_tls", "Could not read the certificates in \(file) (\(error)); give a PEM file")
            }
        }
        do {
            return try NIOSSLContext(configuration: tls)
        } catch {
            throw MailError("smtp_tls", "Could not set up TLS for SMTP (\(error))")
        }
    }
}

/// One SMTP conversation over an async channel: replies read under a deadline per step.
struct SMTPSession {
    let channel: any Channel
    var inbound: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    let timeout: Duration
    var tlsActive: Bool
    var buffer = ByteBuffer()

    init(
        channel: any Channel, inbound: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>, timeout: Duration, tlsActive: Bool
    ) {
        self.channel = channel
        self.inbound = inbound
        self.outbound = outbound
        self.timeout = timeout
        self.tlsActive = tlsActive
    }

    /// `EHLO`; returns the capability lines after the greeting line.
    mutating func hello(_ name: String) async throws -> [String] {
        try await write("EHLO \(name)\r\n")
        let reply = try await read(step: "EHLO")
        guard reply.code == 250 else { throw Self.refused("EHLO", reply) }
        return Array(reply.lines.dropFirst())
    }

    /// Sends `line` and expects `code`. With `secret`, the line never appears in an error.
    mutating func command(_ line: String, expect code: Int, step: String, secret: Bool = false) async throws {
        try await write(line + "\r\n")
        try await expect(code, step)
    }

    mutating func expect(_ code: Int, _ step: String) async throws {
        let reply = try await read(step: step)
        guard reply.code == code || (code == 250 && reply.code == 251) else {
            if step.hasPrefix("AUTH") {
                throw MailError(
                    "smtp_auth", "The SMTP server refused the credentials (\(reply.summary)); check the --smtp user and password")
            }
            throw Self.refused(step, reply)
        }
    }

    static func refused(_ step: String, _ reply: SMTPReply) -> MailError {
        MailError("smtp_refused", "The SMTP server answered \(step) with \(reply.summary)")
    }

    mutating func write(_ text: String) async throws {
        try await outbound.write(ByteBuffer(string: text))
    }

    /// Adds TLS in front of the conversation after the server's `220` to STARTTLS. Bytes the
    /// server sent after that reply, before TLS, are refused: they would be read as if protected.
    mutating func startTLS(_ context: NIOSSLContext, serverName: String?) async throws {
        guard buffer.readableBytes == 0 else {
            throw MailError("smtp_protocol", "The SMTP server sent data after its STARTTLS reply, before TLS; refused")
        }
        let channel = self.channel
        try await channel.eventLoop.submit {
            try channel.pipeline.syncOperations.addHandler(
                NIOSSLClientHandler(context: context, serverHostname: serverName), position: .first)
        }.get()
        tlsActive = true
    }

    /// The next reply, within ``timeout``: past it the connection is closed and `smtp_timeout` thrown.
    mutating func read(step: String) async throws -> SMTPReply {
        let timedOut = TimeoutFlag()
        let channel = self.channel
        let timer = channel.eventLoop.scheduleTask(in: TimeAmount(timeout)) {
            timedOut.value.withLock { $0 = true }
            channel.close(promise: nil)
        }
        defer { timer.cancel() }
        do {
            while true {
                if let reply = try SMTPReply.take(from: &buffer) { return reply }
                guard var chunk = try await inbound.next() else { break }
                buffer.writeBuffer(&chunk)
            }
        } catch let error as MailError {
            throw error
        } catch {
            if timedOut.value.withLock({ $0 }) { throw timeoutError(step) }
            throw MailError("smtp_protocol", "The SMTP connection failed while waiting for \(step): \(error)")
        }
        if timedOut.value.withLock({ $0 }) { throw timeoutError(step) }
        throw MailError("smtp_protocol", "The SMTP server closed the connection while we waited for \(step)")
    }

    private func timeoutError(_ step: String) -> MailError {
        MailError("smtp_timeout", "The SMTP server did not answer \(step) within \(timeout); try again later")
    }
}

/// Set when a reply's deadline passed (the connection is then closed).
private final class TimeoutFlag: Sendable {
    let value = Mutex(false)
}
