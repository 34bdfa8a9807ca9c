import Foundation
import Logging

/// Password reset and e-mail verification: tokens, limits, messages.
///
/// Reset mail goes only to *verified* addresses: an address a user typed but never confirmed may
/// be a typing mistake or someone else's, and a reset link sent there would hand the account to
/// whoever reads that mailbox.
struct MailService: Sendable {
    let auth: AuthService
    let storage: any MailStorage
    let configuration: MailConfiguration
    let templates: MailTemplates
    let delivery: MailDelivery
    let limiter: AttemptLimiter
    let logger: Logger

    /// Accounts one reset request may reach (a username and the verified address's accounts).
    static let maxAccountsPerRequest = 5
    /// The longest username or address a reset request may carry.
    static let maxIdentifierLength = 254

    init(auth: AuthService, storage: any MailStorage, configuration: MailConfiguration, delivery: MailDelivery) throws {
        self.auth = auth
        self.storage = storage
        self.configuration = configuration
        self.templates = try MailTemplates(directory: configuration.templatesDirectory)
        self.delivery = delivery
        self.limiter = AttemptLimiter(storage: auth.storage, window: AuthService.milliseconds(configuration.window))
        self.logger = auth.logger
    }

    /// Counts a request from `address`; the seconds to wait when it is over
    /// ``MailConfiguration/requestsPerAddress``, else `nil`. The same work for every request.
    func admitRequest(from address: String) async throws -> Int? {
        let key = "mail-request:\(address)"
        if let wait = try await limiter.wait([(key, configuration.requestsPerAddress)]) { return wait }
        try await limiter.fail([key])
        return nil
    }

    /// Queues the reset work for `identifier` (a username or an address) and returns at once, before
    /// anything about an account is read.
    func requestReset(identifier: String) {
        let identifier = String(identifier.trimmingCharacters(in: .whitespaces).prefix(Self.maxIdentifierLength))
        delivery.submit { [self] in
            do {
                try await sendResets(identifier: identifier)
            } catch {
                logger.error("password reset mail failed", metadata: ["error": "\(Self.describe(error))"])
            }
        }
    }

    /// Mails a reset link to every account `identifier` names that has a verified address.
    func sendResets(identifier: String) async throws {
        var userIDs: [String] = []
        if let user = try await auth.storage.user(username: identifier) {
            userIDs.append(user.id)
        } else if let normalized = AuthService.normalizedUsername(identifier),
            let user = try await auth.storage.user(username: normalized)
        {
            userIDs.append(user.id)
        }
        if let address = MailAddress.checked(identifier) {
            userIDs += try await storage.users(verifiedEmail: address, limit: Self.maxAccountsPerRequest)
        }
        var seen = Swift.Set<String>()
        for userID in userIDs.prefix(Self.maxAccountsPerRequest) where seen.insert(userID).inserted {
            guard let email = try await storage.email(userID: userID), email.verified else { continue }
            try await send(.reset, userID: userID, email: email.address, lifetime: configuration.resetLifetime)
        }
    }

    /// Queues a verification message for the user's current address.
    func requestVerification(userID: String) {
        delivery.submit { [self] in
            do {
                guard let email = try await storage.email(userID: userID), !email.verified else { return }
                try await send(.verify, userID: userID, email: email.address, lifetime: configuration.verificationLifetime)
            } catch {
                logger.error("verification mail failed", metadata: ["error": "\(Self.describe(error))"])
            }
        }
    }

    /// Makes a token, keeps its hash, and mails its link, unless the account had
    /// ``MailConfiguration/messagesPerAccount`` messages within the window already.
    private func send(_ kind: MailTemplates.Kind, userID: String, email: String, lifetime: Duration) async throws {
        let key = "mail-account:\(userID)"
        if try await limiter.wait([(key, configuration.messagesPerAccount)]) != nil {
            logger.notice("mail not sent: the account's limit is reached", metadata: ["user": "\(userID)"])
            return
        }
        try await limiter.fail([key])
        guard let user = try await auth.storage.user(id: userID) else { return }
        let token = Secrets.token(prefix: kind == .reset ? "opw_" : "opv_")
        let purpose: StoredMailToken.Purpose = kind == .reset ? .reset : .verify
        try await storage.saveMailToken(
            StoredMailToken(
                hash: Secrets.hash(token), purpose: purpose, userID: userID, email: email,
                expiresAt: AuthService.now() + AuthService.milliseconds(lifetime)))
        let path = kind == .reset ? MailRoutes.resetPath : MailRoutes.verifyPath
        let link = auth.publicBase.url + path + "?" + URLEncodedForm.encode([("token", token)])
        let server = URLComponents(string: auth.publicBase.url)?.host ?? auth.publicBase.url
        let parts = templates.render(
            kind, link: link, username: user.username, expiry: Self.words(lifetime), server: server)
        try await configuration.sender.send(
            MailMessage(
                from: configuration.from, to: try MailAddress(email, name: user.username), subject: parts.subject,
                text: parts.text, html: parts.html))
        logger.info("mail sent", metadata: ["kind": "\(kind.rawValue)", "user": "\(userID)"])
    }

    /// "30 minutes", "24 hours", "1 hour".
    static func words(_ duration: Duration) -> String {
        let seconds = Int(duration.components.seconds)
        if seconds % 3600 == 0 { return seconds == 3600 ? "1 hour" : "\(seconds / 3600) hours" }
        if seconds % 60 == 0 { return seconds == 60 ? "1 minute" : "\(seconds / 60) minutes" }
        return "\(seconds) seconds"
    }

    static func describe(_ error: any Error) -> String {
        (error as? MailError)?.description ?? String(describing: error)
    }
}
