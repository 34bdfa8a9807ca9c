import Foundation
import HTTPTypes
import Hummingbird
@_spi(OutpostInternal) import OutpostCore

/// Signing in to and out of the console. The console's sign-in starts the same browser session as
/// the sign-in pages (`outpost_session`), so a browser signed in there needs no second sign-in; it
/// counts against the same per-account and per-address limits and writes the same audit events.
extension AdminConsole {
    static let signInPath = "/admin/sign-in"
    static let signOutPath = "/admin/sign-out"
    static let signInForm = "admin.sign-in"
    static let signOutForm = "admin.sign-out"

    func addSignIn(to router: Router<OutpostRequestContext>) {
        router.get(RouterPath(Self.signInPath)) { request, _ in try await signInPage(request) }
        router.post(RouterPath(Self.signInPath)) { request, context in try await signInSubmit(request, context) }
        router.post(RouterPath(Self.signOutPath)) { request, _ in try await signOut(request) }
    }

    func signInPage(_ request: Request) async throws -> Response {
        let returnTo = Self.safeReturn(try request.queryFields()["return_to"]) ?? Self.root
        if case .admin = try await visitor(request) {
            return Response(status: .seeOther, headers: [.location: returnTo, .cacheControl: "no-store"])
        }
        return signInForm(request, returnTo: returnTo, message: nil)
    }

    func signInForm(
        _ request: Request, returnTo: String, message: String?, status: HTTPResponse.Status = .ok, retryAfter: Int? = nil
    ) -> Response {
        let binding = pages.formBinding(request)
        let fields = ["form": Self.signInForm, "return_to": returnTo]
        let body = """
            <p id="explain">Sign in with an account that has the \(Self.role) role.</p>
            \(HTMLPage.error(message))
            <form id="sign-in-form" method="post" action="\(Self.signInPath)">
            \(HTMLPage.hidden(fields.merging(["form_token": auth.formToken(for: fields, binding: binding.value)]) { $1 }))
            <label for="username">Username</label>
            <input type="text" id="username" name="username" autocomplete="username" autocapitalize="none" spellcheck="false" maxlength="\(Self.maxCredentialLength)" required>
            <label for="password">Password</label>
            <input type="password" id="password" name="password" autocomplete="current-password" maxlength="\(Self.maxCredentialLength)" required>
            <button type="submit" class="primary" id="sign-in">Sign in</button>
            </form>
            """
        var response = Self.plainPage(title: "Sign in to the console", body: body, status: status)
        if let cookie = binding.setCookie { response.headers.append(HTTPField(name: .setCookie, value: cookie)) }
        if let retryAfter { response.headers[.retryAfter] = "\(retryAfter)" }
        return response
    }

    /// The longest username or password the form takes.
    static let maxCredentialLength = 1024

    func signInSubmit(_ request: Request, _ context: OutpostRequestContext) async throws -> Response {
        guard pages.isSameOrigin(request) else { return crossSiteRefusal() }
        let form = try await request.formFields(limit: maxBodyBytes)
        let returnTo = Self.safeReturn(form["return_to"]) ?? Self.root
        guard
            auth.checkFormToken(
                form["form_token"], fields: ["form": Self.signInForm, "return_to": form["return_to"] ?? ""],
                binding: OAuthRoutes.cookie(OAuthRoutes.formCookie, in: request))
        else {
            return signInForm(
                request, returnTo: returnTo, message: "This form expired or was opened in another browser; please try again.",
                status: .badRequest)
        }
        guard let username = form["username"], let password = form["password"], !username.isEmpty, !password.isEmpty,
            username.utf8.count <= Self.maxCredentialLength, password.utf8.count <= Self.maxCredentialLength
        else {
            return signInForm(request, returnTo: returnTo, message: "Enter your username and password.", status: .badRequest)
        }
        let user: StoredUser
        do {
            user = try await auth.verifyPassword(
                username: username, password: password, address: context.clientAddress, method: "console")
        } catch AuthFailure.badCredentials {
            return signInForm(request, returnTo: returnTo, message: "The username or password is wrong.", status: .unauthorized)
        } catch AuthFailure.rateLimited(let wait) {
            return signInForm(
                request, returnTo: returnTo, message: "Too many failed attempts. Wait \(wait) seconds, then try again.",
                status: .tooManyRequests, retryAfter: wait)
        } catch AuthFailure.accountDisabled {
            return signInForm(request, returnTo: returnTo, message: OAuthRoutes.disabledAccountMessage, status: .forbidden)
        }
        let session = try await pages.startSession(userID: user.id)
        var response = Response(status: .seeOther, headers: [.location: returnTo, .cacheControl: "no-store"])
        response.headers.append(HTTPField(name: .setCookie, value: session.cookie))
        return response
    }

    /// Ends the browser session (for the sign-in pages too: it is one session) and goes to the
    /// console's sign-in.
    func signOut(_ request: Request) async throws -> Response {
        guard pages.isSameOrigin(request) else { return crossSiteRefusal() }
        let form = try await request.formFields(limit: maxBodyBytes)
        guard
            auth.checkFormToken(
                form["form_token"], fields: ["form": Self.signOutForm],
                binding: OAuthRoutes.cookie(OAuthRoutes.formCookie, in: request))
        else {
            return Self.plainPage(
                title: "Sign-out stopped",
                body: HTMLPage.error("This form expired or was opened in another browser. Open the console again and sign out."),
                status: .badRequest)
        }
        if let session = OAuthRoutes.cookie(OAuthRoutes.sessionCookie, in: request) {
            try await auth.storage.removeSession(hash: Secrets.hash(session))
        }
        var response = Response(status: .seeOther, headers: [.location: Self.signInPath, .cacheControl: "no-store"])
        response.headers.append(
            HTTPField(name: .setCookie, value: "\(OAuthRoutes.sessionCookie)=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0"))
        return response
    }
}
