import Foundation
import Hummingbird
@_spi(OutpostInternal) import OutpostCore

/// `POST /users` (sign-up), `GET /me`, and `POST /auth/login` (custom providers).
struct UserRoutes: Sendable {
    let auth: AuthService
    let maxBodyBytes: Int
    let maxJSONDepth: Int
    let maxJSONKeys: Int
    /// Sign-ups per client address, counted in storage so every instance sees the same count.
    let signUps: AttemptLimiter
    let signUpsPerAddress: Int
    let signUpMode: SignUpMode
    /// Whether an unknown provider's error lists the providers (``ServerConfiguration/listsPluginNames``).
    let listsProviders: Bool

    init(auth: AuthService, configuration: ServerConfiguration) {
        self.auth = auth
        self.maxBodyBytes = configuration.maxBodyBytes
        self.maxJSONDepth = configuration.maxJSONDepth
        self.maxJSONKeys = configuration.maxJSONKeys
        self.signUps = AttemptLimiter(storage: auth.storage, window: AuthService.milliseconds(configuration.signUpWindow))
        self.signUpsPerAddress = configuration.signUpsPerAddress
        self.signUpMode = configuration.signUp
        self.listsProviders = configuration.listsPluginNames
    }

    func add(to router: Router<OutpostRequestContext>) {
        router.post("/users") { request, context in
            if signUpMode == .closed {
                throw ServerError(
                    .forbidden, code: "signup_closed",
                    message: "This server does not take sign-ups; ask its operator for an account (outpost users add)")
            }
            // Every attempt counts, successful or not: the cost being limited is the Bcrypt hash.
            let key = "signup-address:\(context.clientAddress)"
            if let wait = try await signUps.wait([(key, signUpsPerAddress)]) {
                throw ServerError(
                    .tooManyRequests, code: "rate_limited",
                    message: "Too many sign-ups from this address; try again in \(wait) s",
                    headers: [.retryAfter: "\(wait)"])
            }
            try await signUps.fail([key])
            let body = try await request.decodeJSON(limit: maxBodyBytes, maxDepth: maxJSONDepth, maxKeys: maxJSONKeys)
            guard let username = body["username"]?.stringValue, let password = body["password"]?.stringValue else {
                throw ServerError.badRequest("invalid_user", "Send {\"username\": ..., \"password\": ...}")
            }
            let invite = try Self.invite(body, mode: signUpMode)
            let user = try await auth.signUp(username: username, password: password, invite: invite)
            await auth.audit.record(
                AuditEvent(
                    actor: user.id, action: AuditAction.userSignedUp, subject: user.id, clientAddress: context.clientAddress,
                    detail: ["username": user.username, "invited": invite == nil ? "false" : "true"]))
            return Response.json(
                ["id": .string(user.id), "username": .string(user.username)], status: .created,
                headers: [.location: "/me"])
        }
        let signedIn = router.group().add(middleware: AuthenticationMiddleware(auth: auth))
            .add(middleware: RequireCallerMiddleware(scope: Scope.profile))
        signedIn.get("/me") { _, context in
            let caller = try context.requireCaller()
            guard let userID = caller.userID, let user = try await auth.storage.user(id: userID) else {
                return Response.json(["client_id": .string(caller.clientID), "scope": .string(caller.scope), "user": nil])
            }
            var me: [String: JSONValue] = [
                "id": .string(user.id), "username": .string(user.username),
                "entitlements": .array(user.entitlements.map(JSONValue.string)),
                "client_id": .string(caller.clientID), "scope": .string(caller.scope),
            ]
            // The address `PATCH /me` sets, and whether its mailed link was followed.
            if let mail = auth.storage as? any MailStorage {
                let email = try await mail.email(userID: userID)
                me["email"] = email.map { .string($0.address) } ?? .null
                me["email_verified"] = .bool(email?.verified ?? false)
            }
            return Response.json(.object(me))
        }
        router.post("/auth/login") { request, context in
            let body = try await request.decodeJSON(limit: maxBodyBytes, maxDepth: maxJSONDepth, maxKeys: maxJSONKeys)
            guard let provider = body["provider"]?.stringValue, let authData = body["auth_data"], case .object = authData,
                let clientID = body["client_id"]?.stringValue
            else {
                throw ServerError.badRequest(
                    "invalid_login", "Send {\"provider\": \"com.example\", \"auth_data\": {...}, \"client_id\": \"...\"}")
            }
            guard let client = try await auth.storage.client(id: clientID) else {
                // 401, as RFC 6749 §5.2 answers an unknown client at the token endpoint.
                throw ServerError(
                    .unauthorized, code: "invalid_client",
                    message: "Unknown client '\(clientID)'; register it with `outpost clients add`")
            }
            let tokens = try await auth.signIn(
                provider: provider, authData: authData, client: client, address: context.clientAddress,
                listsProviders: listsProviders)
            return Response.json(tokens, headers: [.cacheControl: "no-store"])
        }
    }

    /// The invite code a sign-up carries, required in ``SignUpMode/invite`` mode and ignored
    /// otherwise; in any mode, an `invite` that is not a string of at most
    /// ``Invites/maxCodeLength`` characters is 400 `invalid_invite`.
    static func invite(_ body: JSONValue, mode: SignUpMode) throws -> String? {
        let code = body["invite"]
        if let code, code.stringValue.map({ $0.unicodeScalars.count > Invites.maxCodeLength }) ?? true {
            throw ServerError.badRequest(
                "invalid_invite", "invite must be a string of at most \(Invites.maxCodeLength) characters: the code, inv_...")
        }
        guard mode == .invite else { return nil }
        guard let code = code?.stringValue, !code.isEmpty else {
            throw ServerError(
                .forbidden, code: "invite_required",
                message:
                    "This server takes sign-ups by invitation: send {\"username\": ..., \"password\": ..., \"invite\": \"inv_...\"} "
                    + "with a code from its operator (outpost users invite)")
        }
        return code
    }
}
