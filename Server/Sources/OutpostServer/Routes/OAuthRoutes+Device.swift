import Foundation
import HTTPTypes
import Hummingbird
@_spi(OutpostInternal) import OutpostCore

/// The device authorization grant (RFC 8628): the device authorization endpoint, the token
/// endpoint's polling, and the page where a person enters the user code.
extension OAuthRoutes {
    func deviceAuthorization(_ request: Request, _ context: OutpostRequestContext) async throws -> Response {
        let fields = try await form(request)
        let client = try await auth.authenticateClient(
            fields, authorization: request.headers[.authorization], address: context.clientAddress)
        try require(client, "device_code")
        let scope = try AuthService.grantedScope(requested: fields["scope"], client: client)
        let deviceCode = Secrets.token(prefix: "opd_")
        let lifetime = AuthService.milliseconds(auth.configuration.deviceCodeLifetime)
        var userCode = Secrets.userCode()
        while try await auth.storage.deviceCode(userCode: userCode) != nil { userCode = Secrets.userCode() }
        try await auth.storage.saveDeviceCode(
            StoredDeviceCode(
                hash: Secrets.hash(deviceCode), userCode: userCode, clientID: client.id, scope: scope,
                expiresAt: AuthService.now() + lifetime, intervalSeconds: auth.configuration.deviceInterval, lastPoll: 0,
                status: "pending", userID: nil))
        let verification = issuer(request) + "/device"
        return Response.json(
            [
                "device_code": .string(deviceCode), "user_code": .string(userCode),
                "verification_uri": .string(verification),
                "verification_uri_complete": .string(verification + "?user_code=" + userCode),
                "expires_in": .int(Int(lifetime / 1000)), "interval": .int(auth.configuration.deviceInterval),
            ], headers: [.cacheControl: "no-store"])
    }

    func pollDevice(_ fields: [String: String], client: OAuthClient) async throws -> JSONValue {
        guard let code = fields["device_code"] else { throw OAuthError.invalidRequest("device_code is missing") }
        let hash = Secrets.hash(code)
        guard let stored = try await auth.storage.deviceCode(hash: hash), stored.clientID == client.id else {
            throw OAuthError.invalidGrant("The device code is unknown")
        }
        let now = AuthService.now()
        guard stored.expiresAt > now else {
            throw OAuthError(code: "expired_token", description: "The device code expired; start again")
        }
        switch stored.status {
        case "denied":
            throw OAuthError(code: "access_denied", description: "The user declined")
        case "used":
            throw OAuthError.invalidGrant("The device code was already exchanged")
        case "approved":
            try await auth.storage.updateDeviceCode(hash: hash, status: "used", userID: nil, lastPoll: now, interval: nil)
            return try await auth.issueTokens(client: client, userID: stored.userID, scope: stored.scope)
        default:
            if stored.lastPoll > 0, now - stored.lastPoll < Int64(stored.intervalSeconds) * 1000 {
                try await auth.storage.updateDeviceCode(
                    hash: hash, status: nil, userID: nil, lastPoll: now, interval: stored.intervalSeconds + 5)
                throw OAuthError(code: "slow_down", description: "Poll every \(stored.intervalSeconds + 5) seconds")
            }
            try await auth.storage.updateDeviceCode(hash: hash, status: nil, userID: nil, lastPoll: now, interval: nil)
            throw OAuthError(code: "authorization_pending", description: "The user has not finished signing in yet")
        }
    }

    /// Step one of the device page: the code (and, without a session, the credentials).
    func devicePage(_ request: Request, userCode: String?, message: String?, status: HTTPResponse.Status = .ok) async throws
        -> Response
    {
        let sessionUser = try await browserUser(request)
        let binding = formBinding(request)
        let fields = ["purpose": "device"]
        let returnTo = "/device" + (userCode.map { "?" + URLEncodedForm.encode([("user_code", $0)]) } ?? "")
        var upstream: [UpstreamProvider] = []
        if sessionUser == nil { upstream = try await webSignIn.providers() }
        let body = """
            <p>Enter the code your device shows. Next you will see which application asks for access, and decide.</p>
            \(HTMLPage.error(message))
            <form id="device-form" method="post" action="/device">
            \(HTMLPage.hidden(fields.merging(["form_token": auth.formToken(for: fields, binding: binding.value)]) { $1 }))
            <label for="user_code">Code from your device</label>
            <input type="text" id="user_code" name="user_code" value="\(HTMLPage.escape(userCode ?? ""))" autocomplete="one-time-code" autocapitalize="characters" spellcheck="false" required>
            \(HTMLPage.credentials(signedInAs: sessionUser?.username, returnTo: returnTo))
            \(HTMLPage.continueButton)
            \(HTMLPage.upstreamButtons(upstream))
            </form>
            """
        return Self.html(HTMLPage.page(title: "Connect a device", body: body), status: status, cookies: [binding.setCookie])
    }

    /// Step two: the signed-in user sees the client and the access it asks for, and confirms.
    func deviceConfirmPage(
        _ request: Request, code: StoredDeviceCode, client: OAuthClient, user: StoredUser, message: String? = nil,
        status: HTTPResponse.Status = .ok, cookies: [String?] = []
    ) -> Response {
        let binding = formBinding(request, pending: cookies)
        let hidden = ["purpose": "device_confirm", "user_code": code.userCode]
        let signed = hidden.merging(["user": user.id]) { $1 }
        let body = """
            <p id="client"><strong>\(HTMLPage.escape(client.name))</strong> asks to use your account on the device showing the code <strong id="confirm-code">\(HTMLPage.escape(code.userCode))</strong>.</p>
            \(HTMLPage.scopeList(code.scope))
            \(HTMLPage.error(message))
            <form id="device-confirm-form" method="post" action="/device">
            \(HTMLPage.hidden(hidden.merging(["form_token": auth.formToken(for: signed, binding: binding.value)]) { $1 }))
            \(HTMLPage.credentials(signedInAs: user.username, returnTo: "/device?" + URLEncodedForm.encode([("user_code", code.userCode)])))
            \(HTMLPage.decisionButtons)
            </form>
            """
        return Self.html(
            HTMLPage.page(title: "Allow \(client.name) on your device?", body: body), status: status,
            cookies: cookies + [binding.setCookie])
    }

    func deviceSubmit(_ request: Request, _ context: OutpostRequestContext) async throws -> Response {
        guard isSameOrigin(request) else { return crossOriginRefusal() }
        let fields = try await form(request)
        if fields["purpose"] == "device_confirm" {
            return try await deviceDecide(request, fields, address: context.clientAddress)
        }
        guard
            auth.checkFormToken(
                fields["form_token"], fields: ["purpose": "device"], binding: Self.cookie(Self.formCookie, in: request))
        else {
            return try await devicePage(
                request, userCode: fields["user_code"],
                message: "This form expired or was opened in another browser; please try again.",
                status: .badRequest)
        }
        // Guessing user codes is limited per address, like passwords.
        let guessKey = "device:\(context.clientAddress)"
        let attempt: AttemptLimiter.Attempt
        switch try await auth.limiter.attempt([(guessKey, auth.configuration.attemptsPerAccount)]) {
        case .wait(let wait):
            var response = try await devicePage(
                request, userCode: fields["user_code"], message: "Too many wrong codes. Wait \(wait) seconds and try again.",
                status: .tooManyRequests)
            response.headers[.retryAfter] = "\(wait)"
            return response
        case .admitted(let admitted):
            attempt = admitted
        }
        let userCode = Self.normalizedUserCode(fields["user_code"] ?? "")
        guard let stored = try await auth.storage.deviceCode(userCode: userCode), stored.status == "pending",
            stored.expiresAt > AuthService.now(), let client = try await auth.storage.client(id: stored.clientID)
        else {
            // A wrong code: the attempt stays counted.
            return try await devicePage(
                request, userCode: fields["user_code"], message: "That code is unknown or has expired. Check your device.",
                status: .badRequest)
        }
        try await attempt.release(guessKey)  // the code was right: it is no wrong guess
        if let provider = fields["upstream"] {
            return try await startUpstream(
                request, provider: provider, continuing: .init(deviceUserCode: stored.userCode),
                refusal: { message, status in
                    try await devicePage(request, userCode: fields["user_code"], message: message, status: status)
                })
        }
        switch try await signIn(request, fields: fields, address: context.clientAddress) {
        case .refused(let message, let status, let retryAfter):
            var response = try await devicePage(request, userCode: fields["user_code"], message: message, status: status)
            if let retryAfter { response.headers[.retryAfter] = "\(retryAfter)" }
            return response
        case .signedIn(let user, let cookie, _):
            return deviceConfirmPage(request, code: stored, client: client, user: user, cookies: [cookie])
        }
    }

    /// The confirm step's answer: allow or deny, for the user signed in when the page was shown.
    func deviceDecide(_ request: Request, _ fields: [String: String], address: String) async throws -> Response {
        let userCode = fields["user_code"] ?? ""
        let user = try await browserUser(request)
        let signed = ["purpose": "device_confirm", "user_code": userCode, "user": user?.id ?? ""]
        guard let user,
            auth.checkFormToken(fields["form_token"], fields: signed, binding: Self.cookie(Self.formCookie, in: request))
        else {
            return try await devicePage(
                request, userCode: userCode, message: "This form expired or you were signed out; please try again.",
                status: .badRequest)
        }
        guard let stored = try await auth.storage.deviceCode(userCode: userCode), stored.status == "pending",
            stored.expiresAt > AuthService.now(), let client = try await auth.storage.client(id: stored.clientID)
        else {
            return try await devicePage(
                request, userCode: userCode, message: "That code is unknown or has expired. Check your device.",
                status: .badRequest)
        }
        switch fields["decision"] {
        case "deny":
            try await auth.storage.updateDeviceCode(
                hash: stored.hash, status: "denied", userID: nil, lastPoll: nil, interval: nil)
            await auth.audit.record(
                AuditEvent(
                    actor: user.id, action: AuditAction.deviceDenied, subject: client.id, clientAddress: address,
                    detail: ["client_id": client.id]))
            return Self.html(
                HTMLPage.page(
                    title: "Device not connected",
                    body: "<p id=\"result\">\(HTMLPage.escape(client.name)) was not given access. You can close this page.</p>"))
        case "allow":
            try await auth.storage.updateDeviceCode(
                hash: stored.hash, status: "approved", userID: user.id, lastPoll: nil, interval: nil)
            await auth.audit.record(
                AuditEvent(
                    actor: user.id, action: AuditAction.deviceApproved, subject: client.id, clientAddress: address,
                    detail: ["client_id": client.id, "scope": stored.scope]))
            return Self.html(
                HTMLPage.page(
                    title: "Device connected",
                    body: """
                        <p id="result">\(HTMLPage.escape(client.name)) on your device is signed in as <strong>\(HTMLPage.escape(user.username))</strong>. You can close this page.</p>
                        """))
        default:
            return deviceConfirmPage(
                request, code: stored, client: client, user: user, message: "Choose Allow or Deny.", status: .badRequest)
        }
    }

    /// `abcd-efgh`, ` ABCDEFGH ` → `ABCD-EFGH`.
    static func normalizedUserCode(_ text: String) -> String {
        let letters = text.uppercased().filter { $0.isLetter }
        guard letters.count == 8 else { return text.uppercased().trimmingCharacters(in: .whitespaces) }
        return String(letters.prefix(4)) + "-" + String(letters.suffix(4))
    }
}
