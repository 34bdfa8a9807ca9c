import Foundation

/// Where and how ``SMTPMailSender`` delivers: `outpost serve --smtp smtp://user:pass@host:587`.
public struct SMTPConfiguration: Sendable {
    public enum Security: String, Sendable {
        /// `smtp://`: a plain connection upgraded with STARTTLS (RFC 3207) before anything is sent.
        case startTLS
        /// `smtps://`: TLS from the first byte (RFC 8314), normally port 465.
        case implicitTLS
    }

    public var host: String
    public var port: Int
    public var security: Security
    public var username: String?
    /// Never logged, never part of an error.
    package var password: String?
    /// Sends in clear when a `smtp://` server offers no STARTTLS. Off by default: the messages carry
    /// sign-in links and the password would travel in clear. A loopback host may always send in clear.
    public var allowsInsecure = false
    /// Whether a loopback host may be sent to in clear; tests turn it off to see the refusal.
    package var trustsLoopback = true
    /// A PEM file of certificates to trust besides the system's (a private CA, a self-signed relay).
    public var trustedCertificatesFile: String?
    /// The name the server gives itself in `EHLO`. Default: `localhost`.
    public var clientName = "localhost"
    /// Connecting, TCP and TLS. Default: 10 seconds.
    public var connectTimeout: Duration = .seconds(10)
    /// Waiting for each reply (the greeting, every command's). Default: 30 seconds.
    public var replyTimeout: Duration = .seconds(30)

    public init(host: String, port: Int, security: Security, username: String? = nil, password: String? = nil) {
        self.host = host
        self.port = port
        self.security = security
        self.username = username
        self.password = password
    }

    /// `smtp://[user[:password]@]host[:port]` (STARTTLS, port 587 by default) or `smtps://…`
    /// (implicit TLS, port 465 by default); user and password percent-decoded. `password`, when
    /// given, replaces one in the URL (`--smtp-password-env`).
    ///
    /// - Throws: ``MailError`` `invalid_smtp_url`.
    public init(url text: String, password: String? = nil) throws {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            let host = components.host, !host.isEmpty,
            components.path.isEmpty || components.path == "/", components.query == nil, components.fragment == nil
        else {
            throw MailError(
                "invalid_smtp_url", "Write the SMTP server as smtp://user:password@host:587 or smtps://user:password@host:465")
        }
        let security: Security
        switch scheme {
        case "smtp": security = .startTLS
        case "smtps": security = .implicitTLS
        default: throw MailError("invalid_smtp_url", "The SMTP URL's scheme must be smtp (STARTTLS) or smtps (TLS)")
        }
        let port = components.port ?? (security == .startTLS ? 587 : 465)
        guard (1...65535).contains(port) else { throw MailError("invalid_smtp_url", "The SMTP port must be 1 to 65535") }
        let bareHost = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        self.init(
            host: bareHost, port: port, security: security,
            username: components.percentEncodedUser?.removingPercentEncoding.flatMap { $0.isEmpty ? nil : $0 },
            password: password ?? components.percentEncodedPassword?.removingPercentEncoding)
    }

    /// Whether the host is this machine (`localhost`, 127.0.0.0/8, `::1`), where clear text never
    /// leaves it.
    public var isLoopback: Bool {
        let host = host.lowercased()
        return host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}
