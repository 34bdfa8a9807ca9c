import Foundation
import HTTPTypes
import Logging
import Outpost
import OutpostServer
import Synchronization

/// Password reset by mail: a server with mail configured, a user whose address is verified,
/// "Forgot password?" on the sign-in pages, the message arriving (in the demo's mailbox: a
/// ``MailSender`` that keeps what it is given, where `outpost serve --smtp` hands it to a relay),
/// the mailed link, and every session of the account signed out by the reset.
enum MailTour {
    static func run(folder: URL, log: TourLog) async throws {
        log.section("Password reset by mail")
        var logger = Logger(label: "demo.mail")
        logger.logLevel = .critical
        let databasePath = folder.appendingPathComponent("mail.sqlite").path
        let mailbox = DemoMailbox()
        var configuration = ServerConfiguration(
            host: "127.0.0.1", port: 0, databasePath: databasePath, logger: logger, auth: AuthConfiguration(passwordCost: 8))
        configuration.mail = MailConfiguration(
            sender: mailbox, from: try MailAddress("accounts@outpost.example", name: "Outpost demo"))
        let server = try await OutpostServer(configuration: configuration, plugins: []).start()
        let client = OutpostClient(configuration: .init(baseURL: server.baseURL))
        do {
            try await tour(server.baseURL, client, databasePath, logger, mailbox, log)
        } catch {
            try? await client.shutdown()
            await server.stop()
            throw error
        }
        try await client.shutdown()
        await server.stop()
    }

    private static func tour(
        _ baseURL: URL, _ client: OutpostClient, _ databasePath: String, _ logger: Logger, _ mailbox: DemoMailbox,
        _ log: TourLog
    ) async throws {
        // The operator: `outpost users add ada --email ada@example.com --email-verified`, and a client
        // allowed the password grant for the app below.
        let storage = try await SQLiteStorage.open(path: databasePath, logger: logger)
        do {
            let ada = try await storage.addUser(username: "ada", password: "first-password-1", cost: 8)
            _ = try await storage.setEmail("ada@example.com", verified: true, userID: ada.id)
            _ = try await storage.registerClient(
                name: "Demo app", redirectURIs: [], grants: ["password", "refresh_token"], scopes: ["profile"],
                confidential: false, id: "demo-mail-app")
            try await storage.close()
        } catch {
            try? await storage.close()
            throw error
        }
        let auth = Authenticator(
            configuration: .init(
                registration: ClientRegistration(clientID: "demo-mail-app", scopes: ["profile"]),
                endpoints: .outpost(base: baseURL), store: InMemoryCredentialStore()),
            client: client)
        try await auth.signIn(username: "ada", password: "first-password-1")
        log.step("ada (address ada@example.com, verified) is signed in on her phone")

        let browser = DemoBrowser(client: client, username: "", password: "")
        let forgot = baseURL.appending(path: "password/forgot")
        let (answer, _) = try await browser.submit(page: forgot, action: forgot.path, fields: ["identifier": "ada"])
        log.step("on the sign-in page she follows \"Forgot password?\" and sends her username → \(answer.status.code)")
        log.detail("the page says the same for every name, whether or not an account or address exists")

        let message = try await mailbox.next(within: .seconds(10))
        guard let link = message.text.split(whereSeparator: \.isWhitespace).first(where: { $0.hasPrefix("http") }),
            let url = URL(string: String(link))
        else {
            log.step("the message carried no link")
            return
        }
        log.step("a message arrives for \(message.to.address): \"\(message.subject)\"")
        log.detail("its link: \(url.path)?token=… (single use, 30 minutes)")

        let (changed, _) = try await browser.submit(
            page: url, action: url.path, fields: ["password": "second-password-2", "confirm": "second-password-2"])
        log.step("she opens it and chooses a new password → \(changed.status.code)")
        do {
            try await auth.refresh()
            log.detail("the phone's refresh token still works")
        } catch let error as AuthError {
            log.detail("the phone's refresh token → \(error.oauthError ?? "-"): every session of the account was signed out")
        }
        try await auth.signIn(username: "ada", password: "second-password-2")
        log.detail("she signs in again with the new password")
    }
}

/// The demo's mail relay: keeps each message for the tour to read.
final class DemoMailbox: MailSender {
    private let messages = Mutex<(waiting: [MailMessage], reader: CheckedContinuation<MailMessage, any Error>?)>(([], nil))

    func send(_ message: MailMessage) async throws {
        let reader = messages.withLock { state -> CheckedContinuation<MailMessage, any Error>? in
            if let reader = state.reader {
                state.reader = nil
                return reader
            }
            state.waiting.append(message)
            return nil
        }
        reader?.resume(returning: message)
    }

    /// The next message; waits for it (the server sends off the request), at most `limit`.
    func next(within limit: Duration = .seconds(10)) async throws -> MailMessage {
        try await withThrowingTaskGroup(of: MailMessage.self) { group in
            group.addTask { try await self.next() }
            group.addTask {
                try await Task.sleep(for: limit)
                throw DemoBrowser.Failure(description: "no message arrived within \(limit)")
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
    }

    private func next() async throws -> MailMessage {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let ready = messages.withLock { state -> Result<MailMessage, any Error>? in
                    if !state.waiting.isEmpty { return .success(state.waiting.removeFirst()) }
                    // Cancelled before the reader was kept: the cancellation handler found none to end.
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.reader = continuation
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            let reader = messages.withLock { state in
                defer { state.reader = nil }
                return state.reader
            }
            reader?.resume(throwing: CancellationError())
        }
    }
}
