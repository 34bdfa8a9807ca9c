import Foundation
import Logging
import Outpost
import OutpostServer
import OutpostTestSupport
import Testing

/// The mail sender against aiosmtpd, and password reset and e-mail verification end to end: the
/// real pages of a live server, the real SMTP conversation, the message as Python's email package
/// reads it.
@Suite(
    "Password reset and e-mail verification through a real SMTP server",
    .enabled(if: SMTPSink.isEnabled, "set OUTPOST_INTEROP_PYTHON to the interop virtualenv's python"),
    .closesWhatItOpens)
struct MailIntegrationTests {
    static let newPassword = "a brand new passphrase"

    /// A fixture whose server mails through `sink`; ada's address is verified, bob has none, cleo's
    /// is unverified.
    static func withMailFixture(
        _ sink: SMTPSink, configure: @escaping @Sendable (inout MailConfiguration) -> Void = { _ in },
        _ body: (AuthFixture) async throws -> Void
    ) async throws {
        var logger = Logger(label: "outpost.test.mail")
        logger.logLevel = .critical
        var mail = MailConfiguration(
            sender: SMTPMailSender(
                configuration: SMTPConfiguration(host: "127.0.0.1", port: sink.port, security: .startTLS), logger: logger),
            from: try MailAddress("no-reply@outpost.test", name: "Outpost"))
        configure(&mail)
        try await withAuthFixture(configure: { [mail] in $0.mail = mail }) { fixture in
            let storage = try await fixture.server.openStorage()
            do {
                let mails = try #require(storage as? any MailStorage)
                let ada = try #require(try await storage.user(username: "ada"))
                #expect(try await mails.setEmail("Ada@Example.com", verified: true, userID: ada.id))
                let cleo = try await storage.addUser(username: "cleo", password: AuthFixture.password, cost: 4)
                #expect(try await mails.setEmail("cleo@example.com", verified: false, userID: cleo.id))
                try await storage.close()
            } catch {
                try? await storage.close()
                throw error
            }
            try await body(fixture)
        }
    }

    static func withSink(tls: Bool = false, credentials: (String, String)? = nil, _ body: (SMTPSink) async throws -> Void)
        async throws
    {
        let sink = try await SMTPSink.start(tls: tls, credentials: credentials)
        do {
            try await body(sink)
        } catch {
            await sink.stop()
            throw error
        }
        await sink.stop()
    }

    /// Asks for a reset link for `identifier` through the page, as a browser does.
    static func requestReset(_ fixture: AuthFixture, _ identifier: String, browser: TestBrowser? = nil) async throws
        -> TestBrowser.Page
    {
        let browser = browser ?? fixture.browser
        let form = try await browser.get(fixture.base + "/password/forgot")
        #expect(form.status == 200, "\(form.body)")
        var fields = form.hiddenFields
        fields["identifier"] = identifier
        return try await browser.postForm(fixture.base + "/password/forgot", fields)
    }

    @Test("reset end to end: the link arrives, sets a new password, signs out every session and token; the old password fails")
    func resetEndToEnd() async throws {
        try await Self.withSink { sink in
            try await Self.withMailFixture(sink) { fixture in
                let tokens = try await fixture.passwordTokens("ada")
                let refresh = try #require(tokens["refresh_token"] as? String)
                let access = try #require(tokens["access_token"] as? String)
                // A browser session of ada's, through the sign-in page.
                let pkce = PKCE()
                let authorize =
                    fixture.base + "/oauth/authorize?response_type=code&client_id=\(fixture.publicClient.id)"
                    + "&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcallback&scope=profile&code_challenge=\(pkce.challenge)"
                    + "&code_challenge_method=S256"
                let signIn = try await fixture.browser.get(authorize)
                #expect(signIn.body.contains("id=\"forgot-password\" href=\"/password/forgot\""))
                var fields = signIn.hiddenFields
                fields["username"] = "ada"
                fields["password"] = AuthFixture.password
                fields["decision"] = "allow"
                #expect(try await fixture.browser.postForm(fixture.base + "/oauth/authorize", fields).status == 303)
                #expect(try await fixture.browser.get(authorize).body.contains("Signed in as <strong>ada</strong>"))

                let answer = try await Self.requestReset(fixture, "ada")
                #expect(answer.status == 200)
                #expect(answer.body.contains("a message with a link is on its way"))
                let message = try #require(try await sink.awaitMessages(1).first)
                #expect(message.recipients == ["ada@example.com"])
                #expect(message.mailFrom == "no-reply@outpost.test")
                #expect(message.subject == "Reset your password on 127.0.0.1")
                #expect(message.headerNames.contains("Auto-Submitted"))
                #expect(message.html?.contains("Choose a new password") == true)
                let link = try #require(message.link)
                #expect(link.hasPrefix(fixture.base + "/password/reset?token=opw_"))

                // The link's page spends nothing; its form does.
                let page = try await fixture.browser.get(link)
                #expect(page.status == 200)
                #expect(try await fixture.browser.get(link).status == 200)
                var reset = page.hiddenFields
                reset["password"] = Self.newPassword
                reset["confirm"] = Self.newPassword + "x"
                let differ = try await fixture.browser.postForm(fixture.base + "/password/reset", reset)
                #expect(differ.status == 400)
                #expect(differ.body.contains("The two passwords differ"))
                reset["password"] = "short"
                reset["confirm"] = "short"
                #expect(try await fixture.browser.postForm(fixture.base + "/password/reset", reset).status == 400)
                reset["password"] = Self.newPassword
                reset["confirm"] = Self.newPassword
                let done = try await fixture.browser.postForm(fixture.base + "/password/reset", reset)
                #expect(done.status == 200, "\(done.body)")
                #expect(done.body.contains("Your password is changed"))

                // Every session and token of ada's is gone.
                let refreshed = try await fixture.token([
                    "grant_type": "refresh_token", "refresh_token": refresh, "client_id": fixture.publicClient.id,
                ])
                #expect(refreshed.json["error"] as? String == "invalid_grant")
                #expect(try await fixture.browser.get(fixture.base + "/me", authorization: "Bearer \(access)").status == 401)
                let again = try await fixture.browser.get(authorize)
                #expect(!again.body.contains("Signed in as"))
                #expect(again.body.contains("<label for=\"username\">Username</label>"))

                // The token is spent: its page and its form are refused.
                let reused = try await fixture.browser.postForm(fixture.base + "/password/reset", reset)
                #expect(reused.status == 400)
                #expect(reused.body.contains("This link was used already"))
                #expect(try await fixture.browser.get(link).status == 400)

                // The new password signs in; the old one does not.
                let old = try await fixture.token([
                    "grant_type": "password", "username": "ada", "password": AuthFixture.password,
                    "client_id": fixture.publicClient.id,
                ])
                #expect(old.json["error"] as? String == "invalid_grant")
                let fresh = try await fixture.token([
                    "grant_type": "password", "username": "ada", "password": Self.newPassword,
                    "client_id": fixture.publicClient.id,
                ])
                #expect(fresh.status == 200, "\(fresh.body)")
            }
        }
    }

    @Test("an unknown name, an account without an address and one with an unverified address get the same bytes and no mail")
    func sameAnswer() async throws {
        try await Self.withSink { sink in
            try await Self.withMailFixture(sink) { fixture in
                // One browser for all, so that no answer sets a cookie the others do not.
                var answers: [TestBrowser.Page] = []
                for identifier in ["nobody", "bob", "cleo", "cleo@example.com", "nobody@example.com", "ada@example.com"] {
                    answers.append(try await Self.requestReset(fixture, identifier))
                }
                for answer in answers {
                    #expect(answer.status == 200)
                    #expect(answer.body == answers[0].body)
                    #expect(
                        answer.headers.filter { $0.0.lowercased() != "date" }.map { "\($0.0): \($0.1)" }.sorted()
                            == answers[0].headers.filter { $0.0.lowercased() != "date" }.map { "\($0.0): \($0.1)" }.sorted())
                }
                // The jobs run in order: once ada's message (the last request) is here, the others are done.
                let messages = try await sink.awaitMessages(1)
                #expect(messages.count == 1)
                #expect(messages.first?.recipients == ["ada@example.com"])
            }
        }
    }

    @Test("an expired link is refused, on its page and its form")
    func expiredLink() async throws {
        try await Self.withSink { sink in
            try await Self.withMailFixture(sink, configure: { $0.resetLifetime = .zero }) { fixture in
                _ = try await Self.requestReset(fixture, "ada")
                let link = try #require(try await sink.awaitMessages(1).first?.link)
                let page = try await fixture.browser.get(link)
                #expect(page.status == 400)
                #expect(page.body.contains("has expired"))
                let token = try #require(URLComponents(string: link)?.queryItems?.first { $0.name == "token" }?.value)
                let posted = try await fixture.browser.postForm(
                    fixture.base + "/password/reset",
                    ["token": token, "password": Self.newPassword, "confirm": Self.newPassword, "form_token": "x"])
                #expect(posted.status == 400)
            }
        }
    }

    @Test("limits: messages per account are dropped silently, requests per address get 429")
    func rateLimits() async throws {
        try await Self.withSink { sink in
            try await Self.withMailFixture(
                sink,
                configure: {
                    $0.messagesPerAccount = 2
                    $0.requestsPerAddress = 4
                }
            ) { fixture in
                for _ in 0..<3 { #expect(try await Self.requestReset(fixture, "ada").status == 200) }
                // A fourth request, for another account, as a barrier: the three before it are done once it arrives.
                let storage = try await fixture.server.openStorage()
                let bob = try #require(try await storage.user(username: "bob"))
                _ = try await (storage as? any MailStorage)?.setEmail("bob@example.com", verified: true, userID: bob.id)
                try await storage.close()
                #expect(try await Self.requestReset(fixture, "bob").status == 200)
                let messages = try await sink.awaitMessages(3)
                #expect(messages.map(\.recipients) == [["ada@example.com"], ["ada@example.com"], ["bob@example.com"]])
                let refused = try await Self.requestReset(fixture, "ada")
                #expect(refused.status == 429)
                #expect(Int(refused.header("Retry-After") ?? "") ?? 0 > 0)
            }
        }
    }

    @Test("verification end to end: PATCH /me mails a link; its page spends nothing; its form verifies once")
    func verificationEndToEnd() async throws {
        try await Self.withSink { sink in
            try await Self.withMailFixture(sink) { fixture in
                let access = try #require(try await fixture.passwordTokens("bob")["access_token"] as? String)
                let bad = try await fixture.browser.patchJSON(
                    fixture.base + "/me", #"{"email": "bob@example.com\r\nBcc: eve@example.com"}"#,
                    authorization: "Bearer \(access)")
                #expect(bad.status == 400)
                #expect(bad.body.contains("invalid_email"))
                let unknown = try await fixture.browser.patchJSON(
                    fixture.base + "/me", #"{"name": "Bob"}"#, authorization: "Bearer \(access)")
                #expect(unknown.status == 400)
                let set = try await fixture.browser.patchJSON(
                    fixture.base + "/me", #"{"email": "Bob@Example.com"}"#, authorization: "Bearer \(access)")
                #expect(set.status == 200, "\(set.body)")
                #expect(set.json["email"] as? String == "bob@example.com")
                #expect(set.json["email_verified"] as? Bool == false)
                let message = try #require(try await sink.awaitMessages(1).first)
                #expect(message.recipients == ["bob@example.com"])
                #expect(message.subject == "Confirm your e-mail address on 127.0.0.1")
                let link = try #require(message.link)
                #expect(link.contains("/email/verify?token=opv_"))

                let page = try await fixture.browser.get(link)
                #expect(page.status == 200)
                #expect(page.body.contains("bob@example.com"))
                let storage = try await fixture.server.openStorage()
                let mails = try #require(storage as? any MailStorage)
                let bob = try #require(try await storage.user(username: "bob"))
                #expect(try await mails.email(userID: bob.id)?.verified == false)  // the GET changed nothing
                let confirmed = try await fixture.browser.postForm(fixture.base + "/email/verify", page.hiddenFields)
                #expect(confirmed.status == 200)
                #expect(confirmed.body.contains("is confirmed"))
                #expect(try await mails.email(userID: bob.id) == StoredEmail(address: "bob@example.com", verified: true))
                try await storage.close()
                let again = try await fixture.browser.postForm(fixture.base + "/email/verify", page.hiddenFields)
                #expect(again.status == 400)
                let me = try await fixture.browser.get(fixture.base + "/me", authorization: "Bearer \(access)")
                #expect(me.json["email"] as? String == "bob@example.com", "\(me.body)")
                #expect(me.json["email_verified"] as? Bool == true)
            }
        }
    }

    @Test("STARTTLS to a self-signed server with AUTH; without its certificate TLS fails; a wrong password is refused")
    func startTLSAndAuth() async throws {
        try await Self.withSink(tls: true, credentials: ("mailer", "s3cret pass")) { sink in
            let certificate = try #require(sink.certificate)
            func sender(password: String, trusting: String?) -> SMTPMailSender {
                var configuration = SMTPConfiguration(
                    host: "127.0.0.1", port: sink.port, security: .startTLS, username: "mailer", password: password)
                configuration.trustedCertificatesFile = trusting
                return SMTPMailSender(configuration: configuration, logger: Logger(label: "test"))
            }
            let message = MailMessage(
                from: try MailAddress("no-reply@outpost.test"), to: try MailAddress("ada@example.com", name: "Ada Lovelace"),
                subject: "Grüße, Ada", text: ".hidden line\n.\nthe end\n")
            try await sender(password: "s3cret pass", trusting: certificate).send(message)
            let received = try #require(try await sink.awaitMessages(1).first)
            #expect(received.tls)
            #expect(received.authenticated)
            #expect(received.subject == "Grüße, Ada")
            #expect(received.to == "Ada Lovelace <ada@example.com>")
            // Dot-stuffed on the way, restored by the server.
            #expect(received.text.replacingOccurrences(of: "\r\n", with: "\n") == ".hidden line\n.\nthe end\n")

            await #expect(throws: MailError.self) { try await sender(password: "s3cret pass", trusting: nil).send(message) }
            do {
                try await sender(password: "wrong", trusting: certificate).send(message)
                Issue.record("a wrong password was accepted")
            } catch let error as MailError {
                #expect(error.code == "smtp_auth")
                #expect(!error.message.contains("wrong"))
            }
            #expect(try sink.messages().count == 1)
        }
    }

    @Test("a server without STARTTLS gets nothing unless it is on loopback or --smtp-insecure")
    func clearTextRefused() async throws {
        try await Self.withSink { sink in
            var configuration = SMTPConfiguration(host: "127.0.0.1", port: sink.port, security: .startTLS)
            configuration.trustsLoopback = false
            let message = MailMessage(
                from: try MailAddress("no-reply@outpost.test"), to: try MailAddress("ada@example.com"), subject: "Hi",
                text: "Hello")
            do {
                try await SMTPMailSender(configuration: configuration, logger: Logger(label: "test")).send(message)
                Issue.record("sent in clear")
            } catch let error as MailError {
                #expect(error.code == "smtp_tls_required")
            }
            configuration.allowsInsecure = true
            try await SMTPMailSender(configuration: configuration, logger: Logger(label: "test")).send(message)
            #expect(try await sink.awaitMessages(1).count == 1)
        }
    }

    @Test("a display name with a line break and a header cannot add a header or a recipient")
    func headerInjection() async throws {
        try await Self.withSink { sink in
            let sender = SMTPMailSender(
                configuration: SMTPConfiguration(host: "127.0.0.1", port: sink.port, security: .startTLS),
                logger: Logger(label: "test"))
            let message = MailMessage(
                from: try MailAddress("no-reply@outpost.test", name: "Outpost\r\nBcc: eve@example.com"),
                to: try MailAddress("ada@example.com", name: "Ada\nX-Injected: yes"),
                subject: "Hello\r\nBcc: eve@example.com\r\n\r\nbody", text: "Hi")
            try await sender.send(message)
            let received = try #require(try await sink.awaitMessages(1).first)
            #expect(received.recipients == ["ada@example.com"])
            #expect(!received.headerNames.contains { ["bcc", "x-injected"].contains($0.lowercased()) })
            #expect(received.subject == "Hello  Bcc: eve@example.com    body")
            #expect(received.text.trimmingCharacters(in: .whitespacesAndNewlines) == "Hi")
            #expect(throws: MailError.self) { try MailAddress("ada@example.com\r\nBcc: eve@example.com") }
        }
    }
}
