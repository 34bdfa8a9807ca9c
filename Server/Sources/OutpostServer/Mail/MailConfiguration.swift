/// Mail: password reset and e-mail verification (``ServerConfiguration/mail``; `outpost serve
/// --smtp URL --mail-from ADDRESS`). Without it the server sends no mail and has no "Forgot
/// password?" link.
public struct MailConfiguration: Sendable {
    /// What delivers the messages: ``SMTPMailSender`` from `--smtp`.
    public var sender: any MailSender
    /// The `From` of every message.
    public var from: MailAddress
    /// A folder of Mustache templates that replace the built-in ones (see the DEPLOYMENT guide's
    /// "Mail" section); `nil`: the built-in ones.
    public var templatesDirectory: String?
    /// How long a password-reset link works. Default: 30 minutes.
    public var resetLifetime: Duration = .seconds(30 * 60)
    /// How long an e-mail verification link works. Default: 24 hours.
    public var verificationLifetime: Duration = .seconds(24 * 3600)
    /// Reset requests one client address may make within ``window`` (over it: 429). Default: 10.
    public var requestsPerAddress = 10
    /// Messages one account may be sent within ``window``; requests past it are answered the same
    /// and send nothing. Default: 3.
    public var messagesPerAccount = 3
    /// The window of both counts. Default: 1 hour.
    public var window: Duration = .seconds(3600)
    /// Messages waiting to be sent, per instance; a request past it sends nothing (logged). Default: 256.
    public var queueCapacity = 256

    public init(sender: any MailSender, from: MailAddress, templatesDirectory: String? = nil) {
        self.sender = sender
        self.from = from
        self.templatesDirectory = templatesDirectory
    }
}
