import ArgumentParser
import Foundation
import Logging
import OutpostServer

/// `outpost serve`'s mail options: where to send from and through which SMTP server.
struct MailOptions: ParsableArguments {
    @Option(
        name: .customLong("smtp"),
        help: """
            The SMTP server that sends password-reset and verification mail: smtp://user:password@host:587 (STARTTLS) \
            or smtps://user:password@host:465 (TLS). Without it the server sends no mail.
            """)
    var smtp: String?

    @Option(
        name: .customLong("smtp-password-env"),
        help: "The name of an environment variable holding the SMTP password (instead of the URL's).")
    var smtpPasswordEnv: String?

    @Flag(
        name: .customLong("smtp-insecure"),
        help: "Send in clear when the SMTP server offers no STARTTLS (a loopback host always may).")
    var smtpInsecure = false

    @Option(
        name: .customLong("smtp-ca-file"),
        help: "A PEM file of certificates to trust for the SMTP server besides the system's.")
    var smtpCAFile: String?

    @Option(name: .customLong("mail-from"), help: "The From address of the server's mail, e.g. 'Outpost <no-reply@example.com>'.")
    var mailFrom: String?

    @Option(
        name: .customLong("mail-templates"),
        help:
            "A folder of Mustache templates replacing the built-in messages (reset-text.mustache, verify-subject.mustache, ...).")
    var mailTemplates: String?

    func validate() throws {
        guard let smtp else {
            if mailFrom != nil || mailTemplates != nil || smtpPasswordEnv != nil {
                throw ValidationError("--mail-from, --mail-templates and --smtp-password-env need --smtp")
            }
            return
        }
        guard mailFrom != nil else { throw ValidationError("--smtp needs --mail-from ADDRESS") }
        do {
            _ = try SMTPConfiguration(url: smtp)
            _ = try Self.from(mailFrom ?? "")
        } catch let error as MailError {
            throw ValidationError(error.message)
        }
        if let smtpPasswordEnv, ProcessInfo.processInfo.environment[smtpPasswordEnv] == nil {
            throw ValidationError("--smtp-password-env \(smtpPasswordEnv): no such environment variable")
        }
    }

    /// `Name <address>` or a bare address.
    static func from(_ text: String) throws -> MailAddress {
        if let open = text.lastIndex(of: "<"), text.hasSuffix(">") {
            let name = text[..<open].trimmingCharacters(in: CharacterSet(charactersIn: " \""))
            return try MailAddress(String(text[text.index(after: open)..<text.index(before: text.endIndex)]), name: name)
        }
        return try MailAddress(text)
    }

    func configuration(logger: Logger) throws -> MailConfiguration? {
        guard let smtp, let mailFrom else { return nil }
        var smtpConfiguration = try SMTPConfiguration(
            url: smtp, password: smtpPasswordEnv.flatMap { ProcessInfo.processInfo.environment[$0] })
        smtpConfiguration.allowsInsecure = smtpInsecure
        smtpConfiguration.trustedCertificatesFile = smtpCAFile
        return MailConfiguration(
            sender: SMTPMailSender(configuration: smtpConfiguration, logger: logger), from: try Self.from(mailFrom),
            templatesDirectory: mailTemplates)
    }
}
