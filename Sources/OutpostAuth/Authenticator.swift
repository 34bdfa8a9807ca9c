public import Foundation
public import Logging
@_spi(OutpostInternal) public import OutpostCore
@_spi(OutpostInternal) import OutpostSupport

/// Signs a user or a client in with OAuth 2.0, keeps the credential fresh and stored, and signs out.
///
/// ```swift
/// let auth = try await Authenticator.discover(
///     issuer: URL(string: "http://127.0.0.1:8080")!, client: client,
///     registration: ClientRegistration(clientID: "outpost-cli", redirectURI: URL(string: "http://127.0.0.1/callback")),
///     store: FileCredentialStore(fileURL: FileCredentialStore.defaultLocation(application: "outpost")))
/// let credential = try await auth.signInWithBrowser()          // or signInWithDeviceCode, signIn(username:password:)...
/// let api = OutpostClient(configuration: config, middlewares: [AuthMiddleware(authenticator: auth)])
/// ```
///
/// Every flow saves the credential in the configured store; ``credential()`` loads it on first
/// use. Refreshes are shared: however many callers need one at once, one token request is made,
/// and with a ``FileCredentialStore`` two processes never both spend the same refresh token.
///
/// A refresh commits only if the credential it started from is still the current one: one that
/// finishes after a sign-out, a ``setCredential(_:)`` or a new sign-in drops its tokens (and, when
/// the server refused it, deletes nothing), so it never brings back a signed-out session or
/// overwrites the next user's credential.
public actor Authenticator {
    /// How this authenticator was set up.
    public nonisolated let configuration: Configuration
    nonisolated let tokens: TokenEndpoint
    /// Verifies ID tokens against the issuer's JWKS (OpenID Connect).
    nonisolated let idTokens: IDTokenVerifier

    private var cached: Credential?
    private var loaded = false
    private var refreshTask: Task<Credential, any Error>?
    /// Which refresh ``refreshTask`` is, so that only it clears the slot.
    private var refreshNumber = 0
    /// Bumped by every change of credential in this process (sign-in, ``setCredential(_:)``,
    /// sign-out): a refresh spends and commits only while the generation it started in is current,
    /// and a change's own write lands only while it is the latest change.
    private var credentialGeneration = 0
    private var pending: [String: AuthorizationRequest] = [:]
    /// One store access of this authenticator at a time, in the order they were asked for
    /// (``acquireStoreTurn()``): a change's write and a refresh's reading of the store never cross.
    private var storeTurnTaken = false
    private var storeTurnWaiters: [CheckedContinuation<Void, Never>] = []

    private var registration: ClientRegistration { configuration.registration }
    private var endpoints: Endpoints { configuration.endpoints }
    private var logger: Logger { configuration.logger }

    /// An authenticator that sends its token, device, revocation and provider requests through
    /// `client`'s transport and ``Configuration/middlewares`` (not the client's middlewares, so the
    /// client may carry an ``AuthMiddleware`` of this very authenticator).
    public init(configuration: Configuration, client: OutpostClient) {
        self.configuration = configuration
        let tokens = TokenEndpoint(
            client: client, registration: configuration.registration, logger: configuration.logger, now: configuration.now,
            middlewares: configuration.middlewares)
        self.tokens = tokens
        let jwks = configuration.endpoints.jwks
        self.idTokens = IDTokenVerifier(
            issuer: configuration.endpoints.issuer?.absoluteString ?? "", clientID: configuration.registration.clientID,
            leeway: configuration.idTokenLeeway, now: configuration.now,
            keySet: {
                guard let jwks else { throw AuthError(.notConfigured, "No JWKS endpoint is configured") }
                let response = try await tokens.send(Request(method: .get, path: jwks.absoluteString))
                guard (200..<300).contains(response.status) else {
                    throw AuthError(.discoveryFailed, "The JWKS endpoint answered \(response.status)", oauthError: nil)
                }
                return response.body
            })
    }

    /// Reads the server's discovery metadata and makes an authenticator for its endpoints: the
    /// OpenID Provider configuration when the registration's scopes include `openid` (it names the
    /// JWKS that ID tokens are verified with), else the RFC 8414 metadata.
    ///
    /// Only the endpoints the metadata lists are used; `overrides` add the ones it leaves out (e.g.
    /// django-oauth-toolkit's device endpoint) or replace wrong ones.
    ///
    /// The browser flows open URLs with `browser` (in an app extension, pass ``NoBrowser``: sign in
    /// there with ``signInWithWebAuthentication(_:scopes:)``).
    ///
    /// - Throws: ``AuthError`` ``AuthError/Code/discoveryFailed``.
    public static func discover(
        issuer: URL, client: OutpostClient, registration: ClientRegistration,
        store: any CredentialStore = InMemoryCredentialStore(),
        overrides: Endpoints.Overrides = Endpoints.Overrides(),
        browser: any BrowserOpening,
        logger: Logger = Logger(label: "outpost.auth", factory: { _ in SwiftLogNoOpLogHandler() })
    ) async throws -> Authenticator {
        let endpoints =
            registration.scopes.contains(Self.openIDScope)
            ? try await Endpoints.discoverOpenID(issuer: issuer, client: client).applying(overrides)
            : try await Endpoints.discover(issuer: issuer, client: client, overrides: overrides)
        return Authenticator(
            configuration: Configuration(
                registration: registration, endpoints: endpoints, store: store, browser: browser, logger: logger),
            client: client)
    }

    /// As ``discover(issuer:client:registration:store:overrides:browser:logger:)`` with the
    /// platform's browser (``SystemBrowser``), which app extensions cannot use.
    @available(iOSApplicationExtension, unavailable)
    @available(macCatalystApplicationExtension, unavailable)
    @available(tvOSApplicationExtension, unavailable)
    @available(visionOSApplicationExtension, unavailable)
    public static func discover(
        issuer: URL, client: OutpostClient, registration: ClientRegistration,
        store: any CredentialStore = InMemoryCredentialStore(),
        overrides: Endpoints.Overrides = Endpoints.Overrides(),
        logger: Logger = Logger(label: "outpost.auth", factory: { _ in SwiftLogNoOpLogHandler() })
    ) async throws -> Authenticator {
        try await discover(
            issuer: issuer, client: client, registration: registration, store: store, overrides: overrides,
            browser: SystemBrowser(), logger: logger)
    }

    // MARK: The current credential

    /// The current credential as it is (maybe expired), loaded from the store on first use; `nil` when signed out.
    ///
    /// - Throws: the store's error, e.g. ``AuthError`` ``AuthError/Code/credentialStoreLocked``
    ///   (the Keychain before the device's first unlock): not signed out, just unreadable for now.
    public func credential() async throws -> Credential? {
        if loaded { return cached }
        let stored = try await configuration.store.load(account: configuration.account)
        if !loaded {
            cached = stored
            loaded = true
        }
        return cached
    }

    /// The current credential, refreshed first when it expires within the refresh margin (at most
    /// half the token's lifetime, so a fresh short-lived token is never refreshed) and has a refresh
    /// token; `nil` when signed out. Costs no I/O when no refresh is due.
    ///
    /// - Throws: ``AuthError`` when a due refresh fails (``AuthError/Code/invalidGrant`` means: sign in again).
    public func validCredential() async throws -> Credential? {
        guard let current = try await credential() else { return nil }
        guard current.refreshToken != nil,
            current.expires(within: configuration.refreshMargin(for: current), of: configuration.now())
        else { return current }
        return try await sharedRefresh(rejected: nil)
    }

    /// Refreshes now, whatever the expiry.
    ///
    /// - Throws: ``AuthError`` ``AuthError/Code/notSignedIn``, ``AuthError/Code/invalidGrant`` (the refresh
    ///   token is dead: the local credential is removed; sign in again), or a transport failure.
    @discardableResult
    public func refresh() async throws -> Credential {
        guard let current = try await credential() else {
            throw AuthError(.notSignedIn, "There is no credential to refresh; sign in first")
        }
        return try await sharedRefresh(rejected: current.accessToken)
    }

    /// Called when the server refused `accessToken` (HTTP 401): refreshes unless someone already
    /// did, and returns the credential to retry with. Concurrent callers share one refresh.
    public func refreshAfterRejection(of accessToken: String) async throws -> Credential {
        if let cached, loaded, cached.accessToken != accessToken { return cached }
        return try await sharedRefresh(rejected: accessToken)
    }

    /// One refresh at a time in this process; `coordinatedRefresh` handles other processes.
    private func sharedRefresh(rejected: String?) async throws -> Credential {
        if let running = refreshTask { return try await running.value }
        refreshNumber += 1
        let number = refreshNumber
        let generation = credentialGeneration
        let configuration = configuration
        let tokens = tokens
        let idTokens = idTokens
        let access = StoreAccess(
            isCurrent: { [self] in await self.credentialGeneration == generation },
            acquireTurn: { [self] in await self.acquireStoreTurn() },
            releaseTurn: { [self] in await self.releaseStoreTurn() },
            commit: { [self] fresh, replacing in
                try await self.writeStore(fresh, generation: generation, replacing: replacing)
            })
        let task = Task {
            try await ExpiringActivity.run(reason: "Refreshing the sign-in") {
                try await Self.coordinatedRefresh(
                    configuration: configuration, tokens: tokens, idTokens: idTokens, rejected: rejected, access: access)
            }
        }
        refreshTask = task
        do {
            let fresh = try await task.value
            if refreshNumber == number { refreshTask = nil }
            if credentialGeneration == generation {
                cached = fresh
                loaded = true
            }
            return fresh
        } catch {
            if refreshNumber == number { refreshTask = nil }
            if credentialGeneration == generation, let error = error as? AuthError,
                error.code == .invalidGrant || error.code == .notSignedIn
            {
                cached = nil
                loaded = true
            }
            throw error
        }
    }

    /// What a refresh running outside the actor may do with the authenticator's state.
    struct StoreAccess: Sendable {
        /// Whether the credential generation the refresh started in is still the current one.
        var isCurrent: @Sendable () async -> Bool
        /// Takes and gives back the authenticator's store turn (``acquireStoreTurn()``).
        var acquireTurn: @Sendable () async -> Void
        var releaseTurn: @Sendable () async -> Void
        /// Writes the refresh's outcome (``Commit``), inside the store turn and exclusive access.
        var commit: Commit

        /// Runs `body` in the store turn.
        func inTurn(_ body: () async throws -> RefreshStep) async throws -> RefreshStep {
            await acquireTurn()
            do {
                let result = try await body()
                await releaseTurn()
                return result
            } catch {
                await releaseTurn()
                throw error
            }
        }
    }

    /// Writes a refresh's outcome (a credential, or `nil` to remove a dead one) in place of the
    /// credential it started from; false when that one is no longer current.
    typealias Commit = @Sendable (_ fresh: Credential?, _ replacing: Credential) async throws -> Bool

    /// What a step of a refresh inside the store turn found or did.
    enum RefreshStep: Sendable {
        /// Fresh enough (another process refreshed it): nothing to spend.
        case current(Credential)
        /// This process holds the refresh lease (or needs none) and refreshes `latest`.
        case refresh(latest: Credential)
        /// Another process holds the refresh lease until then.
        case wait(until: Date)
        /// The outcome was written (or, when false, dropped: the credential changed meanwhile).
        case committed(Bool)
    }

    /// Refreshes the stored credential, agreeing with other processes sharing the store:
    ///
    /// 1. Briefly, inside the store's exclusive access: read the credential (another process may
    ///    have refreshed it, or signed out) and claim the store's ``RefreshLease``; when another
    ///    process holds it, wait for that process to finish and start again.
    /// 2. With no lock held: spend the refresh token, and verify the new ID token.
    /// 3. Briefly again: store the result (through `commit`, only in place of the credential it
    ///    started from) and release the lease.
    ///
    /// `isCurrent` says whether the refresh is still wanted: a sign-out, a sign-in or
    /// ``setCredential(_:)`` in this process since it started means the stored credential is no
    /// longer the one it was started for, and must not be spent (its tokens would be dropped).
    private static func coordinatedRefresh(
        configuration: Configuration, tokens: TokenEndpoint, idTokens: IDTokenVerifier, rejected: String?,
        access: StoreAccess
    ) async throws -> Credential {
        let store = configuration.store
        let account = configuration.account
        let lease = store.refreshLease
        let holder = UUID().uuidString
        var pause = Duration.milliseconds(20)
        while true {
            let start = try await access.inTurn {
                try await store.withExclusiveAccess(account: account) { () async throws -> RefreshStep in
                    // The store is the truth: another process may have refreshed, or signed out.
                    guard let latest = try await store.load(account: account) else {
                        throw AuthError(.notSignedIn, "The stored credential is gone (signed out elsewhere?); sign in again")
                    }
                    // Checked after the read: this process changes its credential only after moving on
                    // from the refresh's generation, so a read followed by a current generation is the
                    // credential the refresh was started for (or another process's refresh of it).
                    guard await access.isCurrent() else { throw overtaken }
                    let expiring = latest.expires(within: configuration.refreshMargin(for: latest), of: configuration.now())
                    let rejectedStill = rejected.map { StateGenerator.equal($0, latest.accessToken) } ?? false
                    if !expiring, !rejectedStill { return .current(latest) }
                    guard latest.refreshToken != nil else {
                        throw AuthError(.invalidGrant, "The credential has no refresh token; sign in again")
                    }
                    if let lease, case .heldElsewhere(let until) = try await lease.claim(account: account, holder: holder) {
                        return .wait(until: until)
                    }
                    return .refresh(latest: latest)
                }
            }
            switch start {
            case .committed:
                throw overtaken
            case .current(let latest):
                configuration.logger.debug("credential already refreshed elsewhere")
                return latest
            case .wait(let until):
                // Another process is refreshing: look again soon, and at the latest when its lease ends.
                let left = until.timeIntervalSinceNow
                try await configuration.sleep(min(pause, .milliseconds(max(1, Int(left * 1000)))))
                pause = min(pause * 2, .milliseconds(500))
            case .refresh(let latest):
                return try await spend(
                    latest, configuration: configuration, tokens: tokens, idTokens: idTokens, access: access,
                    release: {
                        guard let lease else { return }
                        try? await lease.release(account: account, holder: holder)
                    })
            }
        }
    }

    /// A refresh whose credential was replaced or removed in this process while it ran.
    private static var overtaken: AuthError {
        AuthError(
            .cancelled,
            "The credential was replaced or removed (sign-out, another sign-in) while it was being refreshed; "
                + "the refreshed tokens were dropped")
    }

    /// Steps 2 and 3 of ``coordinatedRefresh(configuration:tokens:idTokens:rejected:access:)``:
    /// spends `latest`'s refresh token with no lock held, then stores the outcome and calls
    /// `release` in the store turn and the store's exclusive access.
    private static func spend(
        _ latest: Credential, configuration: Configuration, tokens: TokenEndpoint, idTokens: IDTokenVerifier,
        access: StoreAccess, release: @escaping @Sendable () async -> Void
    ) async throws -> Credential {
        let commit = access.commit
        let store = configuration.store
        let account = configuration.account
        let logger = configuration.logger
        let refreshToken = latest.refreshToken ?? ""
        var fresh: Credential
        let idToken: String?
        do {
            (fresh, idToken) = try await tokens.requestTokenAndIDToken(
                grant: "refresh_token", [("refresh_token", refreshToken)], endpoint: configuration.endpoints.token,
                fallbackScopes: latest.scopes, previousRefreshToken: refreshToken)
        } catch let error as AuthError where error.code == .invalidGrant {
            // Only the credential whose refresh token was refused goes, never one set since.
            let outcome = try? await access.inTurn {
                try await store.withExclusiveAccess(account: account) { () async throws -> RefreshStep in
                    let removed = (try? await commit(nil, latest)) ?? false
                    await release()
                    return .committed(removed)
                }
            }
            let removed = if case .committed(true)? = outcome { true } else { false }
            logger.debug(
                removed ? "refresh token refused; the credential is removed" : "refresh token refused",
                metadata: ["oauth.error": "invalid_grant"])
            throw error
        } catch {
            _ = try? await access.inTurn {
                try await store.withExclusiveAccess(account: account) { () async throws -> RefreshStep in
                    await release()
                    return .committed(false)
                }
            }
            throw error
        }
        fresh.idToken = await Self.refreshedIDToken(
            idToken, previous: latest.idToken, accessToken: fresh.accessToken, verifier: idTokens, logger: logger)
        let saved = fresh
        let committed: Bool
        do {
            let outcome = try await access.inTurn {
                try await store.withExclusiveAccess(account: account) { () async throws -> RefreshStep in
                    let written: Bool
                    do {
                        written = try await commit(saved, latest)
                    } catch let error as AuthError where error.code == .credentialStoreLocked {
                        await release()
                        throw error
                    } catch {
                        // The old refresh token is spent: keep the new one in memory rather than lose it.
                        logger.info("refreshed credential could not be saved", metadata: ["error": "\(type(of: error))"])
                        written = true
                    }
                    await release()
                    return .committed(written)
                }
            }
            committed = if case .committed(true) = outcome { true } else { false }
        } catch let error as AuthError where error.code == .credentialStoreLocked {
            throw error
        } catch let error as AuthError where error.code == .storeFailed {
            // The store's lock could not be had: keep the new tokens in memory rather than lose them.
            logger.info("refreshed credential could not be saved", metadata: ["error": "storeFailed"])
            return fresh
        }
        guard committed else {
            logger.info("refresh overtaken: the credential changed while it ran; its tokens are dropped")
            throw overtaken
        }
        logger.info("credential refreshed")
        return fresh
    }

    /// Keeps and stores a new credential.
    func signedIn(_ credential: Credential, grant: String) async throws -> Credential {
        credentialGeneration += 1  // a refresh still running must not overwrite this credential
        let generation = credentialGeneration
        refreshTask = nil
        cached = credential
        loaded = true
        logger.info("signed in", metadata: ["oauth.grant": "\(grant)"])
        do {
            try await writeInTurn(credential, generation: generation)
        } catch let error as AuthError {
            throw error
        } catch {
            throw AuthError(.storeFailed, "Signed in, but the credential could not be saved", underlying: error)
        }
        return credential
    }

    /// Replaces the credential with one obtained elsewhere (e.g. a token handed over by another
    /// app), or, with `nil`, signs out locally without revoking anything. The authenticator uses it
    /// from the next request on; a refresh still running is not allowed to overwrite it.
    ///
    /// - Throws: ``AuthError`` ``AuthError/Code/storeFailed`` when the store could not save or remove it.
    public func setCredential(_ credential: Credential?) async throws {
        credentialGeneration += 1
        let generation = credentialGeneration
        refreshTask = nil
        cached = credential
        loaded = true
        do {
            try await writeInTurn(credential, generation: generation)
        } catch let error as AuthError {
            throw error
        } catch {
            throw AuthError(.storeFailed, "The credential could not be stored", underlying: error)
        }
        logger.debug(credential == nil ? "credential cleared" : "credential set")
    }

    // MARK: Writing the store

    /// Waits for the store turn: one store access of this authenticator at a time, handed over in
    /// the order asked for. A change of credential asks before its first suspension, so a refresh
    /// that starts after it reads the store only once the change is written.
    private func acquireStoreTurn() async {
        if storeTurnTaken {
            await withCheckedContinuation { storeTurnWaiters.append($0) }  // resumed holding the turn
        } else {
            storeTurnTaken = true
        }
    }

    private func releaseStoreTurn() {
        if storeTurnWaiters.isEmpty {
            storeTurnTaken = false
        } else {
            storeTurnWaiters.removeFirst().resume()
        }
    }

    /// A change of credential's write: in the store turn, then the store's exclusive access.
    private func writeInTurn(_ credential: Credential?, generation: Int) async throws {
        await acquireStoreTurn()
        defer { releaseStoreTurn() }
        let store = configuration.store
        try await store.withExclusiveAccess(account: configuration.account) {
            _ = try await self.writeStore(credential, generation: generation)
        }
    }

    /// Writes `credential` to the store (with `nil`, removes it) while `generation` is the current
    /// credential generation (no later sign-in, ``setCredential(_:)`` or sign-out), and, with
    /// `replacing`, only while the store still holds that credential (another process may have
    /// changed it; when it holds the very tokens being written, nothing is written and this counts
    /// as written). Returns whether the credential is in the store.
    ///
    /// The caller holds the store turn and the store's exclusive access.
    private func writeStore(_ credential: Credential?, generation: Int, replacing expected: Credential? = nil)
        async throws -> Bool
    {
        guard generation == credentialGeneration else { return false }
        let store = configuration.store
        let account = configuration.account
        if let expected {
            let current = try await store.load(account: account)
            guard let current, Self.same(current, expected) else {
                // Another process stored the very pair this refresh got (the server's reuse grace
                // window answers both with one pair): nothing to write.
                if let current, let credential, Self.same(current, credential) { return true }
                loaded = false  // read the store again next time
                return false
            }
            // A sign-out or sign-in may have come in while the store was read.
            guard generation == credentialGeneration else { return false }
        }
        if let credential {
            try await store.save(credential, account: account)
        } else {
            try await store.remove(account: account)
        }
        return true
    }

    /// Whether two credentials carry the same tokens.
    private static func same(_ first: Credential, _ second: Credential) -> Bool {
        StateGenerator.equal(first.accessToken, second.accessToken)
            && StateGenerator.equal(first.refreshToken ?? "", second.refreshToken ?? "")
    }

    // MARK: Browser flows

    /// Makes an authorization request (a URL to open) and remembers it until its redirect comes back
    /// through ``completeAuthorization(from:)``: a fresh `state` (256 random bits) and, for
    /// ``ResponseType/code``, a PKCE S256 pair.
    ///
    /// - Parameters:
    ///   - responseType: ``ResponseType/code`` (default) or the legacy implicit ``ResponseType/token``.
    ///   - scopes: Default: the registration's scopes.
    ///   - redirectURI: Default: the registration's redirect URI (e.g. `myapp://oauth/callback`).
    /// - Throws: ``AuthError`` ``AuthError/Code/notConfigured`` without an authorization endpoint or redirect URI.
    public func authorizationRequest(responseType: ResponseType = .code, scopes: [String]? = nil, redirectURI: URL? = nil)
        throws -> AuthorizationRequest
    {
        guard let endpoint = endpoints.authorization else {
            throw AuthError(
                .notConfigured, "No authorization endpoint is configured; use discovery or set Endpoints.authorization")
        }
        guard let redirect = redirectURI ?? registration.redirectURI else {
            throw AuthError(.notConfigured, "No redirect URI is configured; set ClientRegistration.redirectURI")
        }
        let scopes = scopes ?? registration.scopes
        let state = StateGenerator.make()
        let pkce = responseType == .code ? PKCE() : nil
        let nonce = responseType == .code && scopes.contains(Self.openIDScope) ? StateGenerator.make() : nil
        var items = [
            URLQueryItem(name: "response_type", value: responseType.rawValue),
            URLQueryItem(name: "client_id", value: registration.clientID),
            URLQueryItem(name: "redirect_uri", value: redirect.absoluteString),
        ]
        if !scopes.isEmpty { items.append(URLQueryItem(name: "scope", value: scopes.joined(separator: " "))) }
        items.append(URLQueryItem(name: "state", value: state))
        if let pkce {
            items.append(URLQueryItem(name: "code_challenge", value: pkce.challenge))
            items.append(URLQueryItem(name: "code_challenge_method", value: pkce.method))
        }
        if let nonce { items.append(URLQueryItem(name: "nonce", value: nonce)) }
        guard var components = URLComponents(url: endpoint, resolvingAgainstBaseURL: false) else {
            throw AuthError(.notConfigured, "The authorization endpoint is not a valid URL")
        }
        let query =
            (components.percentEncodedQuery.map { $0 + "&" } ?? "")
            + items.map { FormEncoding.escape($0.name) + "=" + FormEncoding.escape($0.value ?? "") }.joined(separator: "&")
        components.percentEncodedQuery = query
        guard let url = components.url else { throw AuthError(.notConfigured, "The authorization URL could not be built") }
        let now = configuration.now()
        let lifetime = configuration.authorizationLifetime.inSeconds
        pending = pending.filter { now.timeIntervalSince($0.value.createdAt) < lifetime }
        let request = AuthorizationRequest(
            url: url, state: state, redirectURI: redirect, responseType: responseType, scopes: scopes, nonce: nonce, pkce: pkce,
            createdAt: now)
        pending[state] = request
        return request
    }

    /// Finishes a browser sign-in with the URL the browser was redirected to (from the loopback
    /// listener, or handed in by the app's URL handler or x-callback-url router).
    ///
    /// Checks the `state` against the pending requests (each redeemable once), then exchanges the
    /// code with its PKCE verifier, or reads the implicit flow's token from the fragment, and saves the credential.
    ///
    /// - Throws: ``AuthError``: ``AuthError/Code/stateMismatch`` (unknown, used or missing state),
    ///   ``AuthError/Code/accessDenied`` (the user declined), ``AuthError/Code/invalidRedirect``,
    ///   or a token endpoint error such as ``AuthError/Code/invalidGrant``.
    @discardableResult
    public func completeAuthorization(from redirectURL: URL) async throws -> Credential {
        guard let result = RedirectResult.parse(redirectURL) else {
            throw AuthError(.invalidRedirect, "The redirect carries neither a code, a token nor an error")
        }
        guard let state = result.state, let request = pending.values.first(where: { StateGenerator.equal($0.state, state) })
        else {
            logger.debug("redirect refused: state mismatch")
            throw AuthError(
                .stateMismatch, "The redirect's state matches no sign-in this app started; it is refused (possible forgery)")
        }
        pending[request.state] = nil
        switch result {
        case .error(let error, let description, _):
            logger.info("browser sign-in ended with an error", metadata: ["oauth.error": "\(error)"])
            if error == "access_denied" {
                throw AuthError(.accessDenied, "The user declined the sign-in", oauthError: error, serverMessage: description)
            }
            throw AuthError(
                .invalidRedirect, "The server ended the sign-in with an error", oauthError: error, serverMessage: description)
        case .code(let code, _):
            guard request.responseType == .code, let pkce = request.pkce else {
                throw AuthError(.invalidRedirect, "A code came back to an implicit-flow request")
            }
            let answer = try await tokens.requestTokenAndIDToken(
                grant: "authorization_code",
                [("code", code), ("redirect_uri", request.redirectURI.absoluteString), ("code_verifier", pkce.verifier)],
                endpoint: endpoints.token, fallbackScopes: request.scopes)
            var credential = answer.credential
            if let nonce = request.nonce {
                guard let idToken = answer.idToken else {
                    throw AuthError(
                        .idTokenInvalid,
                        "The sign-in asked for 'openid' but the token response has no id_token; is this an OpenID Connect server?"
                    )
                }
                credential.idToken = try await verifiedIDToken(idToken, nonce: nonce, accessToken: credential.accessToken)
            }
            return try await signedIn(credential, grant: "authorization_code")
        case .token(let fields, _):
            guard request.responseType == .token else {
                throw AuthError(.invalidRedirect, "A token came back to an authorization-code request; refusing it")
            }
            let json = JSONValue.object(fields.mapValues { JSONValue.string($0) })
            var credential = try TokenEndpoint.credential(from: json, now: configuration.now(), fallbackScopes: request.scopes)
            credential.refreshToken = nil  // the implicit grant never issues refresh tokens (RFC 6749 4.2.2)
            return try await signedIn(credential, grant: "implicit")
        }
    }

    /// Forgets a pending authorization request, e.g. when the app learns that the user gave up.
    public func cancelAuthorization(_ request: AuthorizationRequest) {
        pending[request.state] = nil
    }

    /// Signs in through the browser with the authorization code grant and PKCE, receiving the
    /// redirect on a loopback listener (`http://127.0.0.1:{port}/callback`, RFC 8252). For CLIs and desktop programs.
    ///
    /// The listener's path is the path of the registration's redirect URI when that is a loopback
    /// one, else `/callback`. Register `http://127.0.0.1/callback` (no port) at the server.
    ///
    /// - Throws: ``AuthError``: ``AuthError/Code/cancelled`` when the task is cancelled,
    ///   ``AuthError/Code/timeout``, ``AuthError/Code/accessDenied``, ``AuthError/Code/browserFailed``...
    @discardableResult
    public func signInWithBrowser(scopes: [String]? = nil) async throws -> Credential {
        var path = "/callback"
        if let redirect = registration.redirectURI, redirect.scheme == "http",
            ["127.0.0.1", "localhost", "[::1]", "::1"].contains(redirect.host ?? ""),
            !redirect.path.isEmpty
        {
            path = redirect.path
        }
        let listener = try LoopbackRedirectListener.start(path: path, timeout: configuration.browserTimeout)
        let request: AuthorizationRequest
        do {
            request = try authorizationRequest(responseType: .code, scopes: scopes, redirectURI: listener.redirectURI)
            try await configuration.browser.open(request.url)
        } catch {
            listener.cancel()
            throw error
        }
        let redirect: URL
        do {
            redirect = try await listener.redirect()
        } catch {
            pending[request.state] = nil
            logger.info(
                "browser sign-in did not complete", metadata: ["reason": "\((error as? AuthError)?.code.rawValue ?? "error")"])
            throw error
        }
        return try await completeAuthorization(from: redirect)
    }

    /// Signs in through a web authentication session that hands the redirect back (on Apple
    /// platforms `SystemWebAuthenticator`, an `ASWebAuthenticationSession`), with the authorization
    /// code grant and PKCE, to the registration's custom-scheme or `https` redirect URI.
    ///
    /// The redirect goes through the same checks as ``completeAuthorization(from:)``: its `state`
    /// must be the one this request sent, and the code is redeemed with its PKCE verifier.
    ///
    /// - Throws: ``AuthError``: ``AuthError/Code/notConfigured`` (no redirect URI, or an `http`
    ///   one: use ``signInWithBrowser(scopes:)``), ``AuthError/Code/cancelled`` (the user closed the
    ///   sheet, or the task was cancelled), ``AuthError/Code/stateMismatch``,
    ///   ``AuthError/Code/accessDenied``, ``AuthError/Code/browserFailed``...
    @discardableResult
    public func signInWithWebAuthentication(_ session: any WebAuthenticating, scopes: [String]? = nil) async throws
        -> Credential
    {
        guard let redirectURI = registration.redirectURI else {
            throw AuthError(.notConfigured, "No redirect URI is configured; set ClientRegistration.redirectURI")
        }
        let callback = try WebAuthenticationCallback(redirectURI: redirectURI)
        let request = try authorizationRequest(responseType: .code, scopes: scopes, redirectURI: redirectURI)
        let redirect: URL
        do {
            redirect = try await session.authenticate(at: request.url, callback: callback)
            try Task.checkCancellation()
        } catch {
            pending[request.state] = nil
            let failure: AuthError
            if let error = error as? AuthError {
                failure = error
            } else if error is CancellationError || Task.isCancelled {
                failure = AuthError(.cancelled, "The sign-in was cancelled", underlying: error)
            } else {
                failure = AuthError(.browserFailed, "The sign-in session failed", underlying: error)
            }
            logger.info("web sign-in did not complete", metadata: ["reason": "\(failure.code)"])
            throw failure
        }
        guard callback.matches(redirect) else {
            pending[request.state] = nil
            throw AuthError(.invalidRedirect, "The sign-in session came back to another address than the redirect URI")
        }
        let returnedState = RedirectResult.parse(redirect)?.state
        if returnedState.map({ !StateGenerator.equal($0, request.state) }) ?? true {
            // Another sign-in's state, or none: this request ends here; the checks below say why.
            pending[request.state] = nil
        }
        if let returnedState, !StateGenerator.equal(returnedState, request.state) {
            logger.debug("redirect refused: state mismatch")
            throw AuthError(
                .stateMismatch, "The redirect's state is not the one this sign-in sent; it is refused (possible forgery)")
        }
        return try await completeAuthorization(from: redirect)
    }

    // MARK: Direct grants

    /// The resource owner password grant (RFC 6749 4.3), for first-party clients the server allows it.
    ///
    /// - Throws: ``AuthError``: ``AuthError/Code/invalidGrant`` (wrong username or password),
    ///   ``AuthError/Code/rateLimited``, ``AuthError/Code/unauthorizedClient``...
    @discardableResult
    public func signIn(username: String, password: String, scopes: [String]? = nil) async throws -> Credential {
        let scopes = scopes ?? registration.scopes
        var fields = [("username", username), ("password", password)]
        if !scopes.isEmpty { fields.append(("scope", scopes.joined(separator: " "))) }
        let credential = try await tokens.requestToken(
            grant: "password", fields, endpoint: endpoints.token, fallbackScopes: scopes)
        return try await signedIn(credential, grant: "password")
    }

    /// The client credentials grant (RFC 6749 4.4): the client signs in as itself, with its secret.
    @discardableResult
    public func signInWithClientCredentials(scopes: [String]? = nil) async throws -> Credential {
        let scopes = scopes ?? registration.scopes
        let fields = scopes.isEmpty ? [] : [("scope", scopes.joined(separator: " "))]
        let credential = try await tokens.requestToken(
            grant: "client_credentials", fields, endpoint: endpoints.token, fallbackScopes: scopes)
        return try await signedIn(credential, grant: "client_credentials")
    }

    /// The device authorization grant (RFC 8628), for devices and terminals without a browser:
    /// `onUserCode` shows the user code and the verification URL; then the token endpoint is
    /// polled at the server's interval (5 s more after each `slow_down`) until the user finishes.
    ///
    /// The flow ends at the latest when the device code expires (`expires_in`, counted from the
    /// server's answer, the time `onUserCode` takes included): the last wait is cut short to end at
    /// the expiry, and no poll is made after it. Cancel the task to stop it sooner (the user chose
    /// another way to sign in): the wait ends at once.
    ///
    /// - Throws: ``AuthError``: ``AuthError/Code/accessDenied``, ``AuthError/Code/expiredToken``
    ///   (the code expired first: start again), ``AuthError/Code/cancelled`` (the task was cancelled)...
    @discardableResult
    public func signInWithDeviceCode(scopes: [String]? = nil, onUserCode: @Sendable (DeviceCode) async -> Void)
        async throws -> Credential
    {
        guard let endpoint = endpoints.deviceAuthorization else {
            throw AuthError(.notConfigured, "No device authorization endpoint is configured")
        }
        let scopes = scopes ?? registration.scopes
        let response = try await tokens.post(endpoint, fields: scopes.isEmpty ? [] : [("scope", scopes.joined(separator: " "))])
        let json = try TokenEndpoint.successJSON(response, what: "device authorization")
        guard let deviceCode = json["device_code"]?.stringValue, let userCode = json["user_code"]?.stringValue,
            let verification = (json["verification_uri"] ?? json["verification_url"])?.stringValue.flatMap(URL.init(string:))
        else {
            throw AuthError(
                .invalidResponse, "The device authorization response lacks device_code, user_code or verification_uri")
        }
        let expiresIn = json["expires_in"]?.doubleValue ?? 600
        let deadline = configuration.now().addingTimeInterval(expiresIn)
        var interval = max(1, json["interval"]?.doubleValue ?? 5)
        let code = DeviceCode(
            userCode: userCode, verificationURI: verification,
            verificationURIComplete: json["verification_uri_complete"]?.stringValue.flatMap(URL.init(string:)),
            expiresIn: .seconds(expiresIn), interval: .seconds(interval))
        await onUserCode(code)
        while true {
            let remaining = deadline.timeIntervalSince(configuration.now())
            if remaining <= 0 {
                throw AuthError(.expiredToken, "The device code expired before the user finished; start again")
            }
            do {
                try Task.checkCancellation()
                try await configuration.sleep(.seconds(min(interval, remaining)))
            } catch {
                throw AuthError(.cancelled, "The device sign-in was cancelled")
            }
            if configuration.now() >= deadline {
                throw AuthError(.expiredToken, "The device code expired before the user finished; start again")
            }
            do {
                let credential = try await tokens.requestToken(
                    grant: "urn:ietf:params:oauth:grant-type:device_code", [("device_code", deviceCode)],
                    endpoint: endpoints.token, fallbackScopes: scopes)
                return try await signedIn(credential, grant: "device_code")
            } catch let error as AuthError where error.code == .authorizationPending {
                continue
            } catch let error as AuthError where error.code == .slowDown {
                interval += 5
                logger.debug("device flow: slowing down", metadata: ["oauth.interval_s": "\(interval)"])
            }
        }
    }

    /// Signs in with a custom authentication provider (`POST /auth/login` with
    /// `{"provider": ..., "auth_data": ..., "client_id": ...}`), e.g. a Facebook token checked by
    /// the server's `com.example` plugin.
    ///
    /// - Throws: ``AuthError``: ``AuthError/Code/invalidGrant`` when the provider refused the data,
    ///   ``AuthError/Code/rateLimited``, ``AuthError/Code/serverError`` (with the server's code)...
    @discardableResult
    public func signIn(provider: String, data: JSONValue) async throws -> Credential {
        guard let endpoint = endpoints.providerLogin else {
            throw AuthError(.notConfigured, "No provider login endpoint is configured; set Endpoints.providerLogin")
        }
        let body: JSONValue = ["provider": .string(provider), "auth_data": data, "client_id": .string(registration.clientID)]
        let response = try await tokens.send(Request(method: .post, path: endpoint.absoluteString, body: .json(body)))
        guard (200..<300).contains(response.status) else {
            var error = TokenEndpoint.error(from: response)
            if error.code == .serverError, [400, 401, 403].contains(response.status) {
                error.code = .invalidGrant
                error.message = "The \(provider) provider refused the sign-in data"
            }
            throw error
        }
        let json = try TokenEndpoint.successJSON(response, what: "provider login")
        let credential = try TokenEndpoint.credential(from: json, now: configuration.now(), fallbackScopes: registration.scopes)
        return try await signedIn(credential, grant: "provider")
    }

    // MARK: Revocation and sign-out

    /// Revokes a token at the server (RFC 7009). Revoking a refresh token ends its whole family.
    ///
    /// - Throws: ``AuthError`` ``AuthError/Code/notConfigured`` or the server's refusal.
    public func revoke(_ token: String, hint: TokenTypeHint? = nil) async throws {
        guard let endpoint = endpoints.revocation else {
            throw AuthError(.notConfigured, "No revocation endpoint is configured")
        }
        var fields = [("token", token)]
        if let hint { fields.append(("token_type_hint", hint.rawValue)) }
        let response = try await tokens.post(endpoint, fields: fields)
        guard (200..<300).contains(response.status) else { throw TokenEndpoint.error(from: response) }
    }

    /// Signs out: optionally ends the browser session first (opens the logout endpoint), then
    /// removes the local credential, then revokes its tokens at the server.
    ///
    /// The local credential is gone even when revocation fails.
    ///
    /// - Parameters:
    ///   - revoke: Revoke the refresh and access tokens at the server. Default: `true`.
    ///   - endBrowserSession: Open `Endpoints.logout` in the browser first. Default: `false`.
    /// - Throws: ``AuthError`` ``AuthError/Code/storeFailed``, or ``AuthError/Code/revocationFailed``
    ///   (the local credential was removed nonetheless).
    public func signOut(revoke: Bool = true, endBrowserSession: Bool = false) async throws {
        if endBrowserSession, let logout = endpoints.logout {
            var components = URLComponents(url: logout, resolvingAgainstBaseURL: false)
            if let redirect = registration.redirectURI, redirect.scheme != "http" {
                let items = components?.queryItems ?? []
                components?.queryItems = items + [URLQueryItem(name: "redirect_uri", value: redirect.absoluteString)]
            }
            if let url = components?.url {
                do {
                    try await configuration.browser.open(url)
                } catch {
                    logger.info("browser sign-out could not be opened")
                }
            }
        }
        if let running = refreshTask { _ = try? await running.value }
        let credential = try? await credential()
        credentialGeneration += 1
        let generation = credentialGeneration
        refreshTask = nil
        cached = nil
        loaded = true
        pending.removeAll()
        try await writeInTurn(nil, generation: generation)
        logger.info("signed out")
        guard revoke, let credential, endpoints.revocation != nil else { return }
        do {
            if let refreshToken = credential.refreshToken { try await self.revoke(refreshToken, hint: .refreshToken) }
            try await self.revoke(credential.accessToken, hint: .accessToken)
        } catch {
            throw AuthError(
                .revocationFailed, "Signed out locally, but the server could not revoke the tokens", underlying: error)
        }
    }
}
