import Foundation
import HTTPTypes
import Hummingbird
@_spi(OutpostInternal) import OutpostCore

/// The mail pages: "Forgot password?" (`/password/forgot`), choosing a new password from the
/// mailed link (`/password/reset`), confirming an address (`/email/verify`), and `PATCH /me` to
/// set the signed-in user's address. Without mail (``ServerConfiguration/mail``) the "Forgot
/// password?" pages answer 404, and `PATCH /me` still sets the address (nothing is mailed).
///
/// A link's `GET` only shows a form; its `POST` spends the token, so a mail scanner that follows
/// links spends nothing. Every form carries a form token bound to the browser and is refused from
/// another site, as the sign-in page's.
struct MailRoutes: Sendable {
    static let forgotPath = "/password/forgot"
    static let resetPath = "/password/reset"
    static let verifyPath = "/email/verify"
    /// The longest token a link may carry (a token is 47 characters).
    static let maxTokenLength = 128

    /// `nil` when the server has no mail.
    let mail: MailService?
    /// `nil` when the storage keeps no addresses: every route answers 404.
    let storage: (any MailStorage)?
    let pages: OAuthRoutes
    let maxBodyBytes: Int

    var auth: AuthService { pages.auth }

    func add(to router: Router<OutpostRequestContext>) {
        router.get(RouterPath(Self.forgotPath)) { request, _ in forgotPage(request, message: nil) }
        router.post(RouterPath(Self.forgotPath)) { request, context in try await forgotSubmit(request, context) }
        router.get(RouterPath(Self.resetPath)) { request, _ in try await resetPage(request) }
        router.post(RouterPath(Self.resetPath)) { request, _ in try await resetSubmit(request) }
        router.get(RouterPath(Self.verifyPath)) { request, _ in try await verifyPage(request) }
        router.post(RouterPath(Self.verifyPath)) { request, _ in try await verifySubmit(request) }
        let signedIn = router.group().add(middleware: AuthenticationMiddleware(auth: auth))
            .add(middleware: RequireCallerMiddleware(scope: Scope.profile))
        signedIn.patch("/me") { request, context in try await patchMe(request, context) }
    }

    // MARK: Forgot password

    func forgotPage(_ request: Request, message: String?, status: HTTPResponse.Status = .ok, retryAfter: Int? = nil)
        -> Response
    {
        guard mail != nil else { return Self.noMail() }
        let binding = pages.formBinding(request)
        let fields = ["form": "forgot"]
        let body = """
            <p id="explain">Enter your username or your account's e-mail address. If the account has a confirmed address, we mail it a link to choose a new password.</p>
            \(HTMLPage.error(message))
            <form id="forgot-form" method="post" action="\(Self.forgotPath)">
            \(HTMLPage.hidden(fields.merging(["form_token": auth.formToken(for: fields, binding: binding.value)]) { $1 }))
            <label for="identifier">Username or e-mail address</label>
            <input type="text" id="identifier" name="identifier" autocomplete="username" autocapitalize="none" spellcheck="false" maxlength="\(MailService.maxIdentifierLength)" required>
            <div class="actions"><button type="submit" id="send">Send the link</button></div>
            </form>
            """
        var response = OAuthRoutes.html(
            HTMLPage.page(title: "Forgot your password?", body: body), status: status, cookies: [binding.setCookie])
        if let retryAfter { response.headers[.retryAfter] = "\(retryAfter)" }
        return response
    }

    /// The same page, with the same bytes and the same work, whether or not an account matches:
    /// the lookup and the mail run later, in ``MailDelivery``.
    func forgotSubmit(_ request: Request, _ context: OutpostRequestContext) async throws -> Response {
        guard let mail else { return Self.noMail() }
        guard pages.isSameOrigin(request) else { return pages.crossOriginRefusal() }
        let form = try await pages.form(request)
        guard
            auth.checkFormToken(
                form["form_token"], fields: ["form": "forgot"], binding: OAuthRoutes.cookie(OAuthRoutes.formCookie, in: request))
        else {
            return forgotPage(
                request, message: "This form expired or was opened in another browser; please try again.", status: .badRequest)
        }
        guard let identifier = form["identifier"]?.trimmingCharacters(in: .whitespaces), !identifier.isEmpty,
            identifier.count <= MailService.maxIdentifierLength
        else {
            return forgotPage(
                request,
                message: "Enter your username or e-mail address (at most \(MailService.maxIdentifierLength) characters).",
                status: .badRequest)
        }
        if let wait = try await mail.admitRequest(from: context.clientAddress) {
            return forgotPage(
                request, message: "Too many requests from your network. Wait \(wait) seconds, then try again.",
                status: .tooManyRequests, retryAfter: wait)
        }
        mail.requestReset(identifier: identifier)
        return OAuthRoutes.html(HTMLPage.page(title: "Check your mail", body: Self.sentBody(mail.configuration)))
    }

    /// 404: the server sends no mail.
    static func noMail() -> Response {
        OAuthRoutes.html(
            HTMLPage.page(
                title: "No password reset here",
                body:
                    "<p class=\"error\" id=\"error\" role=\"alert\">This server sends no mail, so it cannot reset passwords. Ask its operator for help.</p>"
            ), status: .notFound)
    }

    static func sentBody(_ configuration: MailConfiguration) -> String {
        """
        <p id="result">If an account has this username or e-mail address and a confirmed address, a message with a link is on its way. The link works for \(MailService.words(configuration.resetLifetime)), once.</p>
        <p>No message? Check the spam folder, or ask the server's operator.</p>
        """
    }

    // MARK: Reset

    func resetPage(_ request: Request) async throws -> Response {
        let token = try request.queryFields()["token"] ?? ""
        guard try await usable(token, .reset) != nil else { return invalidLink(reset: true) }
        return resetForm(request, token: token, message: nil)
    }

    func resetForm(_ request: Request, token: String, message: String?, status: HTTPResponse.Status = .ok) -> Response {
        let binding = pages.formBinding(request)
        let fields = ["form": "reset", "token": token]
        let body = """
            <p id="explain">Choose a new password of at least \(AuthService.minimumPasswordLength) characters. Every device signed in to your account is signed out.</p>
            \(HTMLPage.error(message))
            <form id="reset-form" method="post" action="\(Self.resetPath)">
            \(HTMLPage.hidden(fields.merging(["form_token": auth.formToken(for: fields, binding: binding.value)]) { $1 }))
            <label for="password">New password</label>
            <input type="password" id="password" name="password" autocomplete="new-password" minlength="\(AuthService.minimumPasswordLength)" required>
            <label for="confirm">The new password again</label>
            <input type="password" id="confirm" name="confirm" autocomplete="new-password" minlength="\(AuthService.minimumPasswordLength)" required>
            <div class="actions"><button type="submit" id="save">Save the new password</button></div>
            </form>
            """
        return OAuthRoutes.html(
            HTMLPage.page(title: "Choose a new password", body: body), status: status, cookies: [binding.setCookie])
    }

    func resetSubmit(_ request: Request) async throws -> Response {
        guard pages.isSameOrigin(request) else { return pages.crossOriginRefusal() }
        let form = try await pages.form(request)
        let token = form["token"] ?? ""
        guard
            auth.checkFormToken(
                form["form_token"], fields: ["form": "reset", "token": token],
                binding: OAuthRoutes.cookie(OAuthRoutes.formCookie, in: request))
        else {
            return resetForm(
                request, token: token, message: "This form expired or was opened in another browser; please try again.",
                status: .badRequest)
        }
        let password = form["password"] ?? ""
        if let problem = AuthService.passwordProblem(password) {
            return resetForm(request, token: token, message: problem, status: .badRequest)
        }
        guard password == form["confirm"] else {
            return resetForm(
                request, token: token, message: "The two passwords differ; type the same one twice.", status: .badRequest)
        }
        // Bcrypt only for a token that can still be spent.
        guard let storage, try await usable(token, .reset) != nil else { return invalidLink(reset: true) }
        let hash = try await auth.hashPassword(password)
        guard
            let userID = try await storage.resetPassword(
                tokenHash: Secrets.hash(token), passwordHash: hash, now: AuthService.now())
        else { return invalidLink(reset: true) }
        auth.logger.notice("password reset; every session and token of the user revoked", metadata: ["user": "\(userID)"])
        return OAuthRoutes.html(
            HTMLPage.page(
                title: "Password changed",
                body:
                    "<p id=\"result\">Your password is changed, and every device that was signed in to your account is signed out. Sign in again with the new password.</p>"
            ))
    }

    // MARK: Verify

    func verifyPage(_ request: Request) async throws -> Response {
        let token = try request.queryFields()["token"] ?? ""
        guard let found = try await usable(token, .verify) else { return invalidLink(reset: false) }
        let binding = pages.formBinding(request)
        let fields = ["form": "verify", "token": token]
        let body = """
            <p id="explain">Confirm that <strong id="address">\(HTMLPage.escape(found.email))</strong> is your account's e-mail address.</p>
            <form id="verify-form" method="post" action="\(Self.verifyPath)">
            \(HTMLPage.hidden(fields.merging(["form_token": auth.formToken(for: fields, binding: binding.value)]) { $1 }))
            <div class="actions"><button type="submit" id="confirm">Confirm my address</button></div>
            </form>
            """
        return OAuthRoutes.html(HTMLPage.page(title: "Confirm your e-mail address", body: body), cookies: [binding.setCookie])
    }

    func verifySubmit(_ request: Request) async throws -> Response {
        guard pages.isSameOrigin(request) else { return pages.crossOriginRefusal() }
        let form = try await pages.form(request)
        let token = form["token"] ?? ""
        guard
            auth.checkFormToken(
                form["form_token"], fields: ["form": "verify", "token": token],
                binding: OAuthRoutes.cookie(OAuthRoutes.formCookie, in: request))
        else {
            return OAuthRoutes.html(
                HTMLPage.page(
                    title: "Confirm your e-mail address",
                    body: HTMLPage.error("This form expired or was opened in another browser; open the link again.")),
                status: .badRequest)
        }
        guard let storage, try await storage.verifyEmail(tokenHash: Secrets.hash(token), now: AuthService.now()) != nil else {
            return invalidLink(reset: false)
        }
        return OAuthRoutes.html(
            HTMLPage.page(
                title: "Address confirmed",
                body: "<p id=\"result\">Your e-mail address is confirmed. You can close this page.</p>"))
    }

    // MARK: Shared

    /// The token while it can be spent; `nil` for anything else, an oversized one included.
    func usable(_ token: String, _ purpose: StoredMailToken.Purpose) async throws -> StoredMailToken? {
        guard let storage, !token.isEmpty, token.utf8.count <= Self.maxTokenLength else { return nil }
        return try await storage.mailToken(hash: Secrets.hash(token), purpose: purpose, now: AuthService.now())
    }

    func invalidLink(reset: Bool) -> Response {
        let again =
            reset
            ? " <a id=\"again\" href=\"\(Self.forgotPath)\">Ask for a new link</a>."
            : " Ask for a new one from the app."
        return OAuthRoutes.html(
            HTMLPage.page(
                title: "This link does not work",
                body:
                    "<p class=\"error\" id=\"error\" role=\"alert\">This link was used already, has expired, or is not complete.\(again)</p>"
            ), status: .badRequest)
    }

    // MARK: PATCH /me

    /// The fields `PATCH /me` takes.
    static let patchFields: Set<String> = ["email"]

    func patchMe(_ request: Request, _ context: OutpostRequestContext) async throws -> Response {
        let caller = try context.requireCaller()
        guard let userID = caller.userID else {
            throw ServerError(.forbidden, code: "user_required", message: "Setting an e-mail address needs a user's token")
        }
        guard let storage else {
            throw ServerError.notFound("no_email", "This server's storage keeps no e-mail addresses")
        }
        let body = try await request.decodeJSON(limit: maxBodyBytes, maxDepth: 2, maxKeys: 8)
        guard case .object(let fields) = body else {
            throw ServerError.badRequest(
                "invalid_profile", "Send a JSON object: {\"email\": \"ada@example.com\"} or {\"email\": null}")
        }
        if let unknown = fields.keys.sorted().first(where: { !Self.patchFields.contains($0) }) {
            throw ServerError.badRequest("invalid_profile", "Unknown field \(unknown.debugDescription); send only email")
        }
        if let value = fields["email"] {
            switch value {
            case .null:
                _ = try await storage.setEmail(nil, verified: false, userID: userID)
            case .string(let text):
                guard let address = MailAddress.checked(text) else {
                    throw ServerError.badRequest(
                        "invalid_email",
                        "email must be an address local@domain in ASCII, at most \(MailAddress.maxLength) characters")
                }
                let current = try await storage.email(userID: userID)
                if current?.address != address.lowercased() || current?.verified == false {
                    _ = try await storage.setEmail(address, verified: false, userID: userID)
                    mail?.requestVerification(userID: userID)
                }
            default:
                throw ServerError.badRequest("invalid_email", "email must be a string (the address) or null (none)")
            }
        }
        let email = try await storage.email(userID: userID)
        return Response.json([
            "email": email.map { .string($0.address) } ?? .null, "email_verified": .bool(email?.verified ?? false),
        ])
    }
}
