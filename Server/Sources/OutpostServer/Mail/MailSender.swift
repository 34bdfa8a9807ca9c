/// Sends one message. The server mails password-reset and e-mail verification links through it
/// (``MailConfiguration/sender``); ``SMTPMailSender`` is the implementation `outpost serve --smtp`
/// uses, and tests or embedders may give any other.
public protocol MailSender: Sendable {
    /// Hands `message` to the mail system; returns once it was accepted for delivery.
    ///
    /// - Throws: ``MailError`` saying which step failed and what to do.
    func send(_ message: MailMessage) async throws
}
