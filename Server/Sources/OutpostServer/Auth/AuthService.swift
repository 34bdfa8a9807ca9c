import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdBcrypt
import Logging
import NIOPosix
@_spi(OutpostInternal) import OutpostCore
@_spi(OutpostInternal) import OutpostSupport

/// The authorization server's logic, shared by the OAuth, user and provider routes and by records
/// (for ownership).
struct AuthService: Sendable {
    let storage: any Storage
    let configuration: AuthConfiguration
    /// Signs form tokens; kept in the database so forms survive a restart.
    let formKey: Data
    let limiter: AttemptLimiter
    /// Where the server is reached; the issuer and every absolute URL start with it.
    let publicBase: PublicBase
    let providers: [String: ProviderBody]
    let logger: Logger

    /// A Bcrypt hash of a random password, checked when a username does not exist, so the answer
    /// takes as long as for a real account and tells nothing. Computed on the first sign-in.
    let decoyHash: DecoyHash
    /// Bcrypt's own threads (see ``ServerConfiguration/passwordHashingThreads``).
    let passwordPool: NIOThreadPool
    /// The bounded queue of password checks on ``passwordPool``.
    let passwordChecks: PasswordChecks
    /// Sign-ins and account changes (``AuditLog``).
    let audit: AuditLog

    static func make(
        storage: any Storage, configuration: AuthConfiguration, providers: [String: ProviderBody], publicBase: PublicBase,
        logger: Logger, passwordPool: NIOThreadPool = .singleton
    ) async throws -> AuthService {
        var providers = providers
        if let secret = configuration.testProviderSecret {
            providers["outpost.test"] = TestProvider(secret: secret).verify
        }
        let decoy = DecoyHash(cost: configuration.passwordCost, pool: passwordPool)
        return AuthService(
            storage: storage, configuration: configuration, formKey: try await storage.secret(named: "form_key"),
            limiter: AttemptLimiter(storage: storage, window: milliseconds(configuration.rateWindow)),
            publicBase: publicBase, providers: providers, logger: logger, decoyHash: decoy, passwordPool: passwordPool,
            passwordChecks: PasswordChecks(
                pool: passwordPool, perAddress: configuration.passwordChecksPerAddress,
                capacity: configuration.passwordChecksWaiting),
            audit: AuditLog(storage: storage, logger: logger))
    }

    /// The issuer identifier (RFC 8414 §2, RFC 9207): ``ServerConfiguration/publicURL`` or the bound
    /// address, never the `Host` header. OpenID Connect's `iss` must be this same string.
    var issuer: String { publicBase.url }

    static func now() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }

    static func milliseconds(_ duration: Duration) -> Int64 { duration.inMilliseconds }

    // MARK: Passwords and users

    func hashPassword(_ password: String) async throws -> String {
        try await PasswordHasher(cost: configuration.passwordCost, pool: passwordPool).hash(password)
    }

    /// A username as sign-up stores it and sign-in looks it up: trimmed, NFKC-normalised (so
    /// fullwidth `ａｌｉｃｅ` is `alice`), lowercased; `nil` unless it is then 3–64 ASCII letters,
    /// digits, `.`, `_`, `-` or `@`. Letters of other scripts are refused, so no name can look like
    /// another (Cyrillic `а` beside Latin `a`).
    static func normalizedUsername(_ text: String) -> String? {
        let folded = text.trimmingCharacters(in: .whitespaces).precomposedStringWithCompatibilityMapping.lowercased()
        guard (3...64).contains(folded.utf8.count),
            folded.utf8.allSatisfy({ byte in
                (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                    || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
                    || byte == UInt8(ascii: "@")
            })
        else { return nil }
        return folded
    }

    /// The fewest characters of a password (sign-up, password reset).
    static let minimumPasswordLength = 8

    /// What is wrong with `password` as a new password, or `nil` when it will do.
    static func passwordProblem(_ password: String) -> String? {
        password.count >= minimumPasswordLength ? nil : "Choose a password of at least \(minimumPasswordLength) characters"
    }

    /// Creates a user with a password; with `invite`, only while that invite code is unspent and
    /// unexpired, spending it. The username is stored as ``normalizedUsername(_:)`` makes it.
    func signUp(username: String, password: String, invite: String? = nil) async throws -> StoredUser {
        guard let trimmed = Self.normalizedUsername(username) else {
            throw ServerError.badRequest(
                "invalid_username",
                "A username is 3–64 ASCII letters, digits, '.', '_', '-' or '@' (stored in lower case); "
                    + "letters of other scripts and look-alike characters are refused: choose another")
        }
        if let problem = Self.passwordProblem(password) { throw ServerError.badRequest("weak_password", problem) }
        let hash = try await hashPassword(password)
        do {
            if let invite {
                return try await storage.createUser(
                    username: trimmed, passwordHash: hash, inviteHash: Secrets.hash(invite), now: Identifiers.nowMilliseconds())
            }
            return try await storage.createUser(username: trimmed, passwordHash: hash)
        } catch UserWriteFailure.inviteInvalid {
            throw Invites.invalid
        } catch UserWriteFailure.usernameTaken {
            // The UNIQUE constraint: say so plainly; sign-up is the one place where that is unavoidable.
            // Any other failure (a busy or broken database) is reported as what it is.
            throw ServerError(.conflict, code: "username_taken", message: "That username is taken; choose another")
        }
    }

    /// Checks a username and password with rate limiting. Every failure reads the same, whether or not
    /// the username exists.
    ///
    /// Failures are counted per account and address (``AuthConfiguration/attemptsPerAccount``) and per
    /// address (``AuthConfiguration/attemptsPerAddress``), each attempt before its check (so no more
    /// than the limit is ever checked, however many arrive at once) and given back when it was right.
    /// Past a limit the password is not checked and the attempt is not counted, so an attacker
    /// elsewhere cannot lock the owner out, and waiting out the window always works. The check itself
    /// takes a place in ``PasswordChecks`` (bounded per address and in all) or is refused with 429.
    func verifyPassword(
        username: String, password: String, address: String, method: String = "password", clientID: String? = nil
    ) async throws -> StoredUser {
        let pair = "signin:\(username.lowercased())|\(address)"
        let keys: [(key: String, limit: Int)] = [
            (pair, configuration.attemptsPerAccount), ("signin-address:\(address)", configuration.attemptsPerAddress),
        ]
        var detail = ["method": method]
        if let clientID { detail["client_id"] = clientID }
        // A place among the password checks first: a burst past the bound is refused uncounted.
        guard passwordChecks.enter(address) else {
            await auditRateLimited(address: address, detail: detail)
            throw AuthFailure.rateLimited(retryAfter: 1)
        }
        defer { passwordChecks.leave(address) }
        let attempt: AttemptLimiter.Attempt
        switch try await limiter.attempt(keys) {
        case .wait(let seconds):
            await auditRateLimited(address: address, detail: detail)
            throw AuthFailure.rateLimited(retryAfter: seconds)
        case .admitted(let admitted): attempt = admitted
        }
        // Awaited for every user, known or not, so the first sign-in after start-up (which computes
        // it) takes as long either way.
        let decoy = try await decoyHash.value()
        // The name as typed first (users who signed up before names were normalised keep theirs),
        // then normalised, as sign-up stores it.
        var user = try await storage.user(username: username)
        if user == nil, let normalized = Self.normalizedUsername(username), normalized != username {
            user = try await storage.user(username: normalized)
        }
        let hash = user?.passwordHash ?? decoy
        let matches = try await passwordChecks.verify(password, hash: hash)
        guard let user, user.passwordHash != nil, matches else {
            // The subject is the account when it exists; an unknown name is not kept (people type
            // passwords into the username field).
            await audit.record(
                AuditEvent(
                    actor: nil, action: AuditAction.signInFailed, subject: user?.id, clientAddress: address, detail: detail))
            throw AuthFailure.badCredentials  // the attempt stays counted: it is the failure
        }
        try await limiter.clear(pair)
        try await attempt.release("signin-address:\(address)")
        // Said only to someone who knows the password: a wrong one got the usual answer above.
        try await refuseIfDisabled(user, address: address, detail: detail)
        await audit.record(
            AuditEvent(
                actor: user.id, action: AuditAction.signInSucceeded, subject: user.id, clientAddress: address, detail: detail))
        return user
    }

    /// Throws ``AuthFailure/accountDisabled`` (recording a failed sign-in) when the user is
    /// disabled; a sign-in calls it once the person proved who they are.
    func refuseIfDisabled(_ user: StoredUser, address: String, detail: [String: String]) async throws {
        guard user.isDisabled else { return }
        await audit.record(
            AuditEvent(
                actor: nil, action: AuditAction.signInFailed, subject: user.id, clientAddress: address,
                detail: detail.merging(["reason": "account_disabled"]) { $1 }))
        throw AuthFailure.accountDisabled
    }

    /// ``refuseIfDisabled(_:address:detail:)`` for the user `userID` (a provider's sign-in).
    func refuseIfDisabled(userID: String, address: String, detail: [String: String]) async throws {
        guard let user = try await storage.user(id: userID) else { return }
        try await refuseIfDisabled(user, address: address, detail: detail)
    }

    /// Records one ``AuditAction/signInRateLimited`` event for `address` per ``AuthConfiguration/rateWindow``,
    /// however many of its sign-ins are refused: the first refusal of a window takes the address's one
    /// place in the limiter (`audit-rate-limited:`), the others find it taken and write nothing. So
    /// an address writes at most ``AuthConfiguration/attemptsPerAddress`` failures (each was checked)
    /// and one of these per window and kind of sign-in.
    func auditRateLimited(address: String, detail: [String: String]) async {
        guard case .admitted = try? await limiter.attempt([("audit-rate-limited:\(address)", 1)]) else { return }
        await audit.record(
            AuditEvent(actor: nil, action: AuditAction.signInRateLimited, clientAddress: address, detail: detail))
    }

    // MARK: Clients

    /// The client of a token, revocation or device request. Wrong secrets are counted per client and
    /// address; past ``AuthConfiguration/attemptsPerAccount`` the secret is not checked (429).
    func authenticateClient(_ form: [String: String], authorization: String?, address: String) async throws -> OAuthClient {
        var clientID = form["client_id"]
        var secret = form["client_secret"]
        if let authorization, authorization.lowercased().hasPrefix("basic "),
            let decoded = Data(base64Encoded: String(authorization.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
            let pair = String(data: decoded, encoding: .utf8), let colon = pair.firstIndex(of: ":")
        {
            clientID = String(pair[..<colon]).removingPercentEncoding
            secret = String(pair[pair.index(after: colon)...]).removingPercentEncoding
        }
        guard let clientID, let client = try await storage.client(id: clientID) else {
            throw OAuthError.invalidClient("Unknown client; register it with `outpost clients add`")
        }
        if let expected = client.secretHash {
            let key = "client:\(client.id)|\(address)"
            let attempt: AttemptLimiter.Attempt
            switch try await limiter.attempt([(key, configuration.attemptsPerAccount)]) {
            case .wait(let seconds): throw OAuthError.rateLimited(seconds, "Too many wrong client secrets")
            case .admitted(let admitted): attempt = admitted
            }
            guard let secret, Secrets.equal(Secrets.hash(secret), expected) else {
                throw OAuthError.invalidClient(
                    "This client is confidential: authenticate with its secret (HTTP Basic or client_secret)")
            }
            try await attempt.release(key)
        }
        return client
    }

    /// Exact redirect URI match; a loopback `http://127.0.0.1/path` or `http://[::1]/path` registered
    /// without a port matches any port (RFC 8252 §7.3).
    static func redirectMatches(_ candidate: String, registered: [String]) -> Bool {
        if registered.contains(candidate) { return true }
        guard var components = URLComponents(string: candidate), components.scheme == "http",
            let host = components.host, host == "127.0.0.1" || host == "[::1]" || host == "::1", components.port != nil
        else { return false }
        components.port = nil
        guard let portless = components.string else { return false }
        return registered.contains(portless)
    }

    /// The scope to grant: what was asked for (each one allowed to the client; the legacy `records`
    /// allows `records:read` and `records:write`), or all the client's scopes when none was asked for.
    static func grantedScope(requested: String?, client: OAuthClient) throws -> String {
        let wanted = (requested ?? "").split(separator: " ").map(String.init).filter { !$0.isEmpty }
        if wanted.isEmpty { return client.scopes.joined(separator: " ") }
        let allowed = Scope.expand(client.scopes)
        guard wanted.allSatisfy(allowed.contains) else {
            throw OAuthError.invalidScope("This client may ask for: \(client.scopes.joined(separator: " "))")
        }
        return wanted.joined(separator: " ")
    }

    // MARK: Tokens

    /// Issues an access token and, unless `refresh` is false, a refresh token in `family`.
    ///
    /// - Parameter rotating: the refresh token these replace: it is marked rotated and the new
    ///   tokens saved (with the reply sealed for it, during ``AuthConfiguration/refreshReuseGrace``)
    ///   in one storage transaction, or, when it is no longer active (a concurrent exchange, on any
    ///   instance, won), nothing is saved and this throws ``RotationLost``.
    func issueTokens(
        client: OAuthClient, userID: String?, scope: String, family: String? = nil, refresh: Bool = true,
        rotating previous: String? = nil
    ) async throws -> JSONValue {
        // Every grant ends here: a code, a device code or a refresh token of a user disabled since
        // it was issued gets nothing (their tokens were revoked when they were disabled).
        if let userID, try await storage.user(id: userID)?.isDisabled == true { throw AuthFailure.accountDisabled }
        let now = Self.now()
        let family = family ?? Secrets.token(prefix: "fam_")
        let access = Secrets.token(prefix: "opa_")
        let accessLifetime = Self.milliseconds(configuration.accessTokenLifetime)
        var tokens = [
            StoredToken(
                hash: Secrets.hash(access), kind: .access, userID: userID, clientID: client.id, scope: scope, family: family,
                expiresAt: now + accessLifetime, state: "active")
        ]
        var reply: [String: JSONValue] = [
            "access_token": .string(access), "token_type": "Bearer", "expires_in": .int(Int(accessLifetime / 1000)),
            "scope": .string(scope),
        ]
        if refresh && client.grants.contains("refresh_token") {
            let refreshToken = Secrets.token(prefix: "opr_")
            tokens.append(
                StoredToken(
                    hash: Secrets.hash(refreshToken), kind: .refresh, userID: userID, clientID: client.id, scope: scope,
                    family: family,
                    expiresAt: now + Self.milliseconds(configuration.refreshTokenLifetime), state: "active"))
            reply["refresh_token"] = .string(refreshToken)
        }
        guard let previous else {
            for token in tokens { try await storage.saveToken(token) }
            try await revokeIfDisabledMeanwhile(userID, family: family)
            return .object(reply)
        }
        let grace = Self.milliseconds(configuration.refreshReuseGrace)
        var successor: SealedSuccessor?
        if grace > 0 {
            var sealed = reply
            sealed[Self.accessExpiresAt] = .int(Int(now + accessLifetime))
            successor = SealedSuccessor(
                sealed: try RotatedSuccessor.seal(.object(sealed), for: previous), expiresAt: now + grace)
        }
        guard try await storage.rotateToken(hash: Secrets.hash(previous), replacements: tokens, successor: successor) else {
            throw RotationLost()
        }
        try await revokeIfDisabledMeanwhile(userID, family: family)
        return .object(reply)
    }

    /// A disable that committed while new tokens were being saved may have signed the user out
    /// before they were written: read the user again, and revoke what was just issued if so.
    private func revokeIfDisabledMeanwhile(_ userID: String?, family: String) async throws {
        guard let userID, try await storage.user(id: userID)?.isDisabled == true else { return }
        try await storage.revokeFamily(family)
        throw AuthFailure.accountDisabled
    }

    /// A rotation found its refresh token no longer active: a concurrent exchange rotated it first.
    struct RotationLost: Error {}

    /// The sealed reply's key for the access token's absolute expiry (ms), dropped before it is sent.
    private static let accessExpiresAt = "access_expires_at"

    static let refreshReused = OAuthError.invalidGrant(
        "This refresh token was already used; every token from this sign-in is now revoked. Sign in again")

    /// Exchanges a refresh token for a new pair. A refresh token that was already exchanged is a
    /// sign of theft: its whole family is revoked. Of concurrent exchanges of one token (on any
    /// instance) exactly one rotates it; within ``AuthConfiguration/refreshReuseGrace`` of that
    /// rotation the others (and any later exchange of the same token) get the same new pair, as long
    /// as that pair is still the family's current one; after the window, or with the window off,
    /// they revoke the family, the winner's new tokens included.
    func refresh(_ token: String, client: OAuthClient) async throws -> JSONValue {
        let hash = Secrets.hash(token)
        guard let stored = try await storage.token(hash: hash), stored.kind == .refresh, stored.clientID == client.id else {
            throw OAuthError.invalidGrant("The refresh token is not valid; sign in again")
        }
        if stored.state == "rotated" { return try await replayOrRevoke(token, hash: hash, stored: stored, client: client) }
        guard stored.state == "active", stored.expiresAt > Self.now() else {
            throw OAuthError.invalidGrant("The refresh token has expired or was revoked; sign in again")
        }
        do {
            return try await issueTokens(
                client: client, userID: stored.userID, scope: stored.scope, family: stored.family, rotating: token)
        } catch is RotationLost {
            return try await replayOrRevoke(token, hash: hash, stored: stored, client: client)
        }
    }

    /// A rotated refresh token presented again: the pair that replaced it while the grace window
    /// lasts and that pair is still active (not refreshed again, not revoked, not expired); else
    /// the family is revoked as theft.
    private func replayOrRevoke(_ token: String, hash: String, stored: StoredToken, client: OAuthClient) async throws
        -> JSONValue
    {
        let now = Self.now()
        if let sealed = try await storage.successor(hash: hash, now: now),
            case .object(var reply)? = RotatedSuccessor.open(sealed, with: token),
            case .string(let access)? = reply["access_token"],
            case .int(let accessExpires)? = reply.removeValue(forKey: Self.accessExpiresAt),
            try await stillActive(access, family: stored.family, now: now)
        {
            if case .string(let refresh)? = reply["refresh_token"] {
                guard try await stillActive(refresh, family: stored.family, now: now) else {
                    try await revokeAsReuse(stored.family, client: client)
                }
            }
            reply["expires_in"] = .int(max(0, (accessExpires - Int(now)) / 1000))
            logger.info(
                "rotated refresh token exchanged again within the grace window; the same pair is returned",
                metadata: ["client": "\(client.id)"])
            return .object(reply)
        }
        try await revokeAsReuse(stored.family, client: client)
    }

    private func stillActive(_ token: String, family: String, now: Int64) async throws -> Bool {
        guard let stored = try await storage.token(hash: Secrets.hash(token)) else { return false }
        return stored.family == family && stored.state == "active" && stored.expiresAt > now
    }

    private func revokeAsReuse(_ family: String, client: OAuthClient) async throws -> Never {
        try await storage.revokeFamily(family)
        logger.warning("refresh token reuse detected; family revoked", metadata: ["client": "\(client.id)"])
        throw Self.refreshReused
    }

    /// The user (and token) behind `Authorization: Bearer …`. `nil` when the request carries no
    /// token; an invalid token throws 401. A token in the query string (`?access_token=`) is refused
    /// with 400 `invalid_request`: URLs end up in logs, histories and `Referer` (RFC 9700 §4.3.2).
    func authenticate(_ request: Request) async throws -> AuthenticatedCaller? {
        if try request.queryFields()["access_token"] != nil {
            throw ServerError(
                .badRequest, code: "invalid_request",
                message: "Access tokens in the query string are refused; send 'Authorization: Bearer <token>'",
                headers: [.wwwAuthenticate: "Bearer error=\"invalid_request\""])
        }
        let headers = request.headers
        var token: String?
        if let authorization = headers[.authorization] {
            guard let bearer = Self.bearerToken(authorization) else {
                throw Self.unauthorized("Send the access token as 'Authorization: Bearer <token>'")
            }
            token = bearer
        }
        guard let token else { return nil }
        return try await caller(accessToken: token)
    }

    /// The token of an `Authorization: Bearer <token>` value (the scheme in any case, spaces
    /// around the token removed), or `nil` for another scheme. Runs for every request with a
    /// token: ASCII values are read byte by byte, without lowercasing or Foundation's trimming.
    static func bearerToken(_ authorization: String) -> String? {
        let scheme = "bearer ".utf8
        let bytes = authorization.utf8
        guard
            bytes.count >= scheme.count,
            zip(bytes, scheme).allSatisfy({ byte, expected in
                (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte) == expected
            })
        else { return nil }
        let rest = authorization.utf8.dropFirst(scheme.count)
        guard rest.allSatisfy({ $0 < 0x80 }) else {
            return String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        }
        func isSpace(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = rest.firstIndex(where: { !isSpace($0) }), let last = rest.lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(Substring(authorization.utf8[first...last]))
    }

    /// The caller behind an access token however it arrived (the header, or a form body where RFC 6750
    /// §2.2 allows one). Throws 401 for a token that is unknown, revoked or expired.
    func caller(accessToken token: String) async throws -> AuthenticatedCaller {
        guard let stored = try await storage.token(hash: Secrets.hash(token)), stored.kind == .access, stored.state == "active"
        else {
            throw Self.unauthorized("The access token is not valid; sign in again")
        }
        guard stored.expiresAt > Self.now() else {
            throw Self.unauthorized("The access token has expired; refresh it or sign in again")
        }
        return AuthenticatedCaller(
            userID: stored.userID, clientID: stored.clientID, scope: stored.scope, tokenHash: stored.hash,
            expiresAt: stored.expiresAt)
    }

    /// Whether the token `caller` signed in with is still active and unexpired, read from storage
    /// (so a revocation by any instance counts at once). An anonymous caller stays valid.
    func isStillValid(_ caller: AuthenticatedCaller?) async throws -> Bool {
        guard let caller, let hash = caller.tokenHash else { return true }
        guard let expiresAt = caller.expiresAt, expiresAt > Self.now() else { return false }
        guard let stored = try await storage.token(hash: hash) else { return false }
        return stored.state == "active" && stored.expiresAt > Self.now()
    }

    static func unauthorized(_ message: String) -> ServerError {
        ServerError(
            .unauthorized, code: "invalid_token", message: message,
            headers: [.wwwAuthenticate: "Bearer error=\"invalid_token\""])
    }

    func revoke(_ token: String, client: OAuthClient) async throws {
        guard let stored = try await storage.token(hash: Secrets.hash(token)), stored.clientID == client.id else { return }
        if stored.kind == .refresh {
            try await storage.revokeFamily(stored.family)
        } else {
            _ = try await storage.transitionToken(hash: stored.hash, from: "active", to: "revoked")
        }
    }

    // MARK: Providers

    /// Signs in through a custom provider. `listsProviders`: whether an unknown provider's error
    /// lists the providers the server has (``ServerConfiguration/listsPluginNames``).
    func signIn(
        provider: String, authData: JSONValue, client: OAuthClient, address: String, listsProviders: Bool = false
    ) async throws -> JSONValue {
        guard let verify = providers[provider] else {
            // 404, like an unknown lambda or handler: the name is not one this server has.
            let known =
                listsProviders
                ? "the server has: \(providers.isEmpty ? "none" : providers.keys.sorted().joined(separator: ", "))"
                : "ask the server's operator for the providers it has"
            throw ServerError.notFound("unknown_provider", "No authentication provider '\(provider)'; \(known)")
        }
        let key = "provider:\(address)"
        let detail = ["method": "provider", "provider": provider, "client_id": client.id]
        if let wait = try await limiter.wait([(key, configuration.attemptsPerAddress)]) {
            await auditRateLimited(address: address, detail: detail)
            throw ServerError(
                .tooManyRequests, code: "rate_limited", message: "Too many sign-in attempts; wait \(wait) s and try again",
                headers: [.retryAfter: "\(wait)"])
        }
        let identity: ProviderIdentity
        do {
            identity = try await verify(ProviderCall(provider: provider, authData: authData, logger: logger))
        } catch let error as ServerError {
            if error.status == .unauthorized || error.status == .forbidden {
                try await limiter.fail([key])
                await audit.record(
                    AuditEvent(actor: nil, action: AuditAction.signInFailed, clientAddress: address, detail: detail))
            }
            throw error
        } catch {
            try await limiter.fail([key])
            await audit.record(AuditEvent(actor: nil, action: AuditAction.signInFailed, clientAddress: address, detail: detail))
            throw ServerError(
                .unauthorized, code: "provider_rejected", message: "The \(provider) provider did not accept this sign-in")
        }
        let userID = try await providerUser(provider: provider, identity: identity)
        try await refuseIfDisabled(userID: userID, address: address, detail: detail)
        await audit.record(
            AuditEvent(
                actor: userID, action: AuditAction.signInSucceeded, subject: userID, clientAddress: address, detail: detail))
        return try await issueTokens(client: client, userID: userID, scope: client.scopes.joined(separator: " "))
    }

    /// The user linked to a provider identity, created (and linked, in one storage transaction) on
    /// the first sign-in. Two first sign-ins at once, on any instances, yield one user: the one
    /// that loses the race finds the winner's link.
    func providerUser(provider: String, identity: ProviderIdentity) async throws -> String {
        let base = identity.username ?? "\(provider):\(identity.subject)"
        var suffix = 1
        for _ in 0..<32 {
            if let existing = try await storage.userID(provider: provider, subject: identity.subject) { return existing }
            var candidate = suffix == 1 ? base : "\(base)-\(suffix)"
            while try await storage.user(username: candidate) != nil {
                suffix += 1
                candidate = "\(base)-\(suffix)"
            }
            do {
                return try await storage.createUser(username: candidate, provider: provider, subject: identity.subject).id
            } catch UserWriteFailure.identityLinked(let userID) {
                return userID
            } catch UserWriteFailure.usernameTaken {
                continue  // taken meanwhile (perhaps by the concurrent sign-in): look again
            }
        }
        throw ServerError(
            .serviceUnavailable, code: "sign_in_contention",
            message: "Could not choose a free username for this sign-in; try again", headers: [.retryAfter: "1"])
    }

    // MARK: Form tokens

    /// A signed token binding a form to its fields, a deadline (10 minutes) and the browser that
    /// loaded it (`binding`, the value of its form cookie), so hidden fields cannot be altered and a
    /// form fetched by someone else (login CSRF) is refused.
    func formToken(for fields: [String: String], binding: String) -> String {
        let deadline = Self.now() + 600_000
        return "\(deadline).\(Secrets.hmac(Self.canonical(fields) + "|\(deadline)|" + Secrets.hash(binding), key: formKey))"
    }

    func checkFormToken(_ token: String?, fields: [String: String], binding: String?) -> Bool {
        guard let token, let binding, !binding.isEmpty, let dot = token.firstIndex(of: "."), let deadline = Int64(token[..<dot]),
            deadline > Self.now()
        else {
            return false
        }
        let expected = Secrets.hmac(Self.canonical(fields) + "|\(deadline)|" + Secrets.hash(binding), key: formKey)
        return Secrets.equal(String(token[token.index(after: dot)...]), expected)
    }

    static func canonical(_ fields: [String: String]) -> String {
        fields.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "&")
    }
}

/// Who made a request, from their access token.
struct AuthenticatedCaller: Sendable {
    var userID: String?
    var clientID: String
    var scope: String
    /// The SHA-256 of the access token the caller presented, for checking it again later (a
    /// long-lived stream); `nil` for a caller made without a token.
    var tokenHash: String? = nil
    /// When that token expires (ms since 1970).
    var expiresAt: Int64? = nil
}

/// Sign-in failures that the routes render in their own format.
enum AuthFailure: Error {
    case badCredentials
    case rateLimited(retryAfter: Int)
    /// The person proved who they are, but an administrator disabled the account.
    case accountDisabled

    /// What a person is told when their account is disabled.
    static let disabledMessage = "This account is disabled; ask the server's operator to enable it"

    /// The answer in Outpost's error envelope (`POST /auth/login`).
    var serverError: ServerError {
        switch self {
        case .badCredentials:
            ServerError(.unauthorized, code: "invalid_credentials", message: "The username or password is wrong")
        case .rateLimited(let wait):
            ServerError(
                .tooManyRequests, code: "rate_limited", message: "Too many sign-in attempts; wait \(wait) s and try again",
                headers: [.retryAfter: "\(wait)"])
        case .accountDisabled:
            ServerError(.forbidden, code: "account_disabled", message: Self.disabledMessage)
        }
    }
}

/// An RFC 6749 §5.2 error: `{"error": code, "error_description": text}`.
struct OAuthError: Error {
    var code: String
    var description: String
    var status: HTTPResponse.Status = .badRequest
    var headers: HTTPFields = [:]

    static func invalidRequest(_ text: String) -> OAuthError { OAuthError(code: "invalid_request", description: text) }
    static func invalidClient(_ text: String) -> OAuthError {
        OAuthError(
            code: "invalid_client", description: text, status: .unauthorized,
            headers: [.wwwAuthenticate: "Basic realm=\"outpost\""])
    }
    static func invalidGrant(_ text: String) -> OAuthError { OAuthError(code: "invalid_grant", description: text) }
    static func unauthorizedClient(_ text: String) -> OAuthError { OAuthError(code: "unauthorized_client", description: text) }
    static func invalidScope(_ text: String) -> OAuthError { OAuthError(code: "invalid_scope", description: text) }
    /// 429 with `Retry-After`; the body keeps RFC 6749's shape.
    static func rateLimited(_ wait: Int, _ text: String) -> OAuthError {
        OAuthError(
            code: "slow_down", description: "\(text); wait \(wait) s and try again", status: .tooManyRequests,
            headers: [.retryAfter: "\(wait)"])
    }
}

/// The built-in `outpost.test` provider (``AuthConfiguration/testProviderSecret``): accepts
/// `{"user": U, "signature": S}` where `S` is ``signature(user:secret:)``.
package struct TestProvider: Sendable {
    let secret: String

    func verify(_ call: ProviderCall) async throws -> ProviderIdentity {
        guard let user = call.authData["user"]?.stringValue, !user.isEmpty,
            let signature = call.authData["signature"]?.stringValue
        else {
            throw ServerError.badRequest("invalid_auth_data", "outpost.test needs {\"user\": ..., \"signature\": ...}")
        }
        guard Secrets.equal(signature.lowercased(), Self.signature(user: user, secret: secret)) else {
            throw ServerError(.unauthorized, code: "provider_rejected", message: "The outpost.test signature does not match")
        }
        return ProviderIdentity(subject: user, username: user)
    }

    /// The signature that signs `user` in: `hex(HMAC-SHA256(secret, "outpost.test:" + user))`, what
    /// the party holding the secret sends and what ``verify(_:)`` expects.
    package static func signature(user: String, secret: String) -> String {
        Secrets.hmac("outpost.test:" + user, key: Data(secret.utf8))
    }
}

/// Bcrypt off the cooperative threads: hashing is deliberately slow.
struct PasswordHasher: Sendable {
    var cost: UInt8
    var pool: NIOThreadPool = .singleton

    func hash(_ password: String) async throws -> String {
        let cost = self.cost
        return try await pool.runIfActive { Bcrypt.hash(password, cost: cost) }
    }
}
