import Foundation
import HTTPTypes
import Hummingbird
@_spi(OutpostInternal) import OutpostCore

/// The web sign-in through an upstream provider (``UpstreamWebSignIn``): the "Continue with"
/// buttons of the sign-in and device pages start it, the provider answers at the callback.
extension OAuthRoutes {
    func addUpstream(to router: Router<OutpostRequestContext>) {
        router.get("/oauth/upstream/callback") { request, context in
            try await upstreamCallback(request, fields: try request.queryFields(), address: context.clientAddress)
        }
        // Apple's response_mode=form_post: a cross-site POST. Its protection is the state bound to
        // the browser's cookie, not the same-origin check of the sign-in forms.
        router.post("/oauth/upstream/callback") { request, context in
            var response = try await upstreamCallback(request, fields: try await form(request), address: context.clientAddress)
            if response.status == .found { response.status = .seeOther }
            return response
        }
    }

    /// Sends the browser to the provider's sign-in page, or shows `refusal`'s page when the
    /// provider is unknown or cannot be reached.
    func startUpstream(
        _ request: Request, provider: String, continuing continuation: UpstreamWebSignIn.Continuation,
        refusal: (String, HTTPResponse.Status) async throws -> Response
    ) async throws -> Response {
        do {
            let (location, cookies) = try await webSignIn.start(provider: provider, continuing: continuation)
            var response = Response(
                status: .seeOther, headers: [.location: location, .cacheControl: "no-store", .referrerPolicy: "no-referrer"])
            for cookie in cookies { response.headers.append(HTTPField(name: .setCookie, value: cookie)) }
            return response
        } catch let problem as UpstreamWebSignIn.Refusal {
            return try await refusal(problem.message, problem.status)
        }
    }

    /// The provider's answer: the person is signed in (a browser session, as after a password), then
    /// the app's request is finished: its code at its redirect URI, or the device's confirm step.
    func upstreamCallback(_ request: Request, fields: [String: String], address: String) async throws -> Response {
        let bindings = [UpstreamWebSignIn.bindingCookie, UpstreamWebSignIn.crossSiteBindingCookie].compactMap {
            Self.cookie($0, in: request)
        }
        let cleared = webSignIn.clearedCookies
        do {
            let (userID, continuation) = try await webSignIn.finish(fields, bindings: bindings)
            do {
                try await auth.refuseIfDisabled(userID: userID, address: address, detail: ["method": "upstream_web"])
            } catch AuthFailure.accountDisabled {
                return Self.html(
                    HTMLPage.page(title: "Sign-in stopped", body: HTMLPage.error(Self.disabledAccountMessage)),
                    status: .forbidden, cookies: cleared)
            }
            await auth.audit.record(
                AuditEvent(
                    actor: userID, action: AuditAction.signInSucceeded, subject: userID, clientAddress: address,
                    detail: ["method": "upstream_web"]))
            let (session, signedInAt) = try await startSession(userID: userID)
            var response: Response
            var cookies = [session] + cleared
            if let fields = continuation.authorization {
                do {
                    response = try await grant(
                        try await validate(fields), userID: userID, request: request, signedInAt: signedInAt)
                } catch let problem as AuthorizationProblem {
                    response = problemResponse(problem)
                }
            } else if let userCode = continuation.deviceUserCode, let user = try await auth.storage.user(id: userID),
                let stored = try await auth.storage.deviceCode(userCode: userCode), stored.status == "pending",
                stored.expiresAt > AuthService.now(), let client = try await auth.storage.client(id: stored.clientID)
            {
                response = deviceConfirmPage(request, code: stored, client: client, user: user, cookies: [session])
                cookies = cleared
            } else {
                response = try await devicePage(
                    request, userCode: continuation.deviceUserCode,
                    message: "That code is unknown or has expired. Check your device.", status: .badRequest)
            }
            for cookie in cookies { response.headers.append(HTTPField(name: .setCookie, value: cookie)) }
            return response
        } catch let refusal as UpstreamWebSignIn.Refusal {
            return Self.html(
                HTMLPage.page(title: "Sign-in stopped", body: HTMLPage.error(refusal.message)), status: refusal.status,
                cookies: cleared)
        }
    }
}
