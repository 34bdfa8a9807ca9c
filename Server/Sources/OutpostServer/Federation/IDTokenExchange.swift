import Foundation
@_spi(OutpostInternal) import OutpostCore

/// The native sign-in: an app that signed the person in with an upstream provider (Sign in with
/// Apple, Google) exchanges that provider's ID token for the server's own tokens, with RFC 8693
/// token exchange at the token endpoint:
///
///     POST /oauth/token
///     grant_type=urn:ietf:params:oauth:grant-type:token-exchange
///     &subject_token=<the ID token>&subject_token_type=urn:ietf:params:oauth:token-type:id_token
///     &provider=apple&nonce=<the raw nonce>&client_id=...
///     [&authorization_code=<Apple's code, redeemed for the refresh token kept for revocation>]
///
/// The identity (issuer and subject) is linked to one user; the first sign-in creates that user.
/// An identity is never linked to an existing user because the e-mail addresses match.
struct IDTokenExchange: Sendable {
    static let grantType = "urn:ietf:params:oauth:grant-type:token-exchange"
    static let idTokenType = "urn:ietf:params:oauth:token-type:id_token"
    static let accessTokenType = "urn:ietf:params:oauth:token-type:access_token"

    let auth: AuthService
    let providers: any UpstreamProviderStorage
    let verifier: UpstreamTokenVerifier
    let endpoint: UpstreamTokenEndpoint

    init(auth: AuthService, configuration: FederationConfiguration) {
        self.endpoint = UpstreamTokenEndpoint(configuration: configuration)
        self.auth = auth
        self.providers = auth.storage as? any UpstreamProviderStorage ?? NoUpstreamProviders()
        self.verifier = UpstreamTokenVerifier(
            cache: UpstreamKeyCache(configuration: configuration, logger: auth.logger), leeway: configuration.leeway)
    }

    func exchange(_ fields: [String: String], client: OAuthClient, address: String) async throws -> JSONValue {
        guard let token = fields["subject_token"], !token.isEmpty else {
            throw OAuthError.invalidRequest("subject_token is missing: send the upstream provider's ID token")
        }
        guard fields["subject_token_type"] == Self.idTokenType else {
            throw OAuthError.invalidRequest("subject_token_type must be \(Self.idTokenType)")
        }
        if let requested = fields["requested_token_type"], requested != Self.accessTokenType {
            throw OAuthError.invalidRequest("requested_token_type may only be \(Self.accessTokenType)")
        }
        guard let name = fields["provider"], !name.isEmpty else {
            throw OAuthError.invalidRequest("provider is missing: send the name the operator gave the provider")
        }
        let scope = try AuthService.grantedScope(requested: fields["scope"], client: client)
        let (provider, identity) = try await verify(
            token, provider: name, nonce: fields["nonce"], address: address, clientID: client.id)
        // Redeemed before anyone is signed in: a code the provider refuses fails the exchange.
        let refreshToken = try await redeemAppCode(fields["authorization_code"], identity: identity, provider: provider)
        let userID = try await user(identity, provider: provider)
        try await auth.refuseIfDisabled(
            userID: userID, address: address,
            detail: ["method": "token_exchange", "provider": provider.name, "client_id": client.id])
        if let refreshToken {
            try await UpstreamRefreshTokens.make(storage: auth.storage)?.keep(
                refreshToken, userID: userID, provider: provider.name)
        }
        await auth.audit.record(
            AuditEvent(
                actor: userID, action: AuditAction.signInSucceeded, subject: userID, clientAddress: address,
                detail: ["method": "token_exchange", "provider": provider.name, "client_id": client.id]))
        let reply = try await auth.issueTokens(client: client, userID: userID, scope: scope)
        guard case .object(var members) = reply else { return reply }
        members["issued_token_type"] = .string(Self.accessTokenType)
        return .object(members)
    }

    /// The user an identity signs in: the one it is linked to, or a new one on its first sign-in
    /// (named `provider:subject`). Keeps the e-mail the token gave. The native exchange and the web
    /// sign-in (``UpstreamWebSignIn``) both sign people in through it.
    func user(_ identity: UpstreamIdentity, provider: UpstreamProvider) async throws -> String {
        let userID = try await auth.providerUser(
            provider: identity.issuer,
            identity: ProviderIdentity(subject: identity.subject, username: "\(provider.name):\(identity.subject)"))
        try await keepEmail(identity)
        return userID
    }

    /// Redeems the authorization code the app got with the ID token (Sign in with Apple gives one)
    /// for the refresh token the server keeps, sealed, to revoke when the account is deleted.
    private func redeemAppCode(_ code: String?, identity: UpstreamIdentity, provider: UpstreamProvider) async throws
        -> String?
    {
        guard let code, !code.isEmpty, auth.storage is any UpstreamSessionStorage else { return nil }
        guard code.utf8.count <= 4096 else { throw OAuthError.invalidRequest("authorization_code is too long") }
        do {
            return try await endpoint.redeem(
                code: code, redirectURI: nil, codeVerifier: nil, clientID: identity.clientID, provider: provider,
                endpoints: try await endpoint.documents.endpoints(provider)
            ).refreshToken
        } catch {
            auth.logger.warning(
                "redeeming an app's upstream code failed", metadata: ["provider": "\(provider.name)", "error": "\(error)"])
            throw OAuthError.invalidGrant(
                "\(provider.name) did not accept the authorization_code; sign in with \(provider.name) again")
        }
    }

    /// Links the identity of an ID token to a signed-in user (`POST /me/identities`): the person
    /// proves both, so no account is ever joined on an e-mail address. Returns the provider and the
    /// identity; an identity already linked to another user is 409 `identity_linked`.
    func link(_ token: String, provider name: String, nonce: String?, userID: String, address: String) async throws
        -> (UpstreamProvider, UpstreamIdentity)
    {
        let (provider, identity) = try await verify(token, provider: name, nonce: nonce, address: address)
        let owner = try await providers.linkIdentity(provider: identity.issuer, subject: identity.subject, userID: userID)
        guard owner == userID else {
            throw ServerError(
                .conflict, code: "identity_linked",
                message: "This \(provider.name) identity signs in to another account; sign in with it there to use it")
        }
        try await keepEmail(identity)
        return (provider, identity)
    }

    /// The provider and the checked identity of a token; refusals (`invalid_grant`) count against
    /// the client address, as failed provider sign-ins do.
    /// A refusal of a sign-in (`clientID` set; not of a link) is an audit event.
    private func verify(
        _ token: String, provider name: String, nonce: String?, address: String, clientID: String? = nil
    ) async throws -> (UpstreamProvider, UpstreamIdentity) {
        let key = "provider:\(address)"
        var detail = ["method": "token_exchange", "provider": name]
        if let clientID { detail["client_id"] = clientID }
        if let wait = try await auth.limiter.wait([(key, auth.configuration.attemptsPerAddress)]) {
            if clientID != nil { await auth.auditRateLimited(address: address, detail: detail) }
            throw OAuthError.rateLimited(wait, "Too many failed sign-ins from this address")
        }
        do {
            guard let provider = try await providers.upstreamProvider(name: name) else {
                throw OAuthError.invalidGrant(
                    "No upstream provider '\(name)' on this server; its operator adds one with `outpost providers add`")
            }
            let identity = try await verifier.verify(token, provider: provider, nonce: nonce)
            try await spend(token, identity: identity)
            return (provider, identity)
        } catch let error as OAuthError where error.code == "invalid_grant" {
            try await auth.limiter.fail([key])
            if clientID != nil {
                await auth.audit.record(
                    AuditEvent(actor: nil, action: AuditAction.signInFailed, clientAddress: address, detail: detail))
            }
            throw error
        }
    }

    /// Keeps the e-mail the token gave; a token without `email` (Apple's after the first sign-in
    /// may lack it) keeps what an earlier one gave.
    private func keepEmail(_ identity: UpstreamIdentity) async throws {
        guard identity.email != nil else { return }
        try await providers.saveIdentityEmail(
            provider: identity.issuer, subject: identity.subject, email: identity.email, verified: identity.emailVerified)
    }

    /// Records the token as exchanged until it expires, in storage so every instance sees it: a
    /// token is exchanged once, so one intercepted with its nonce cannot sign in a second time.
    func spend(_ token: String, identity: UpstreamIdentity) async throws {
        let now = AuthService.now()
        let expiry = Int64(identity.expiresAt.timeIntervalSince1970 * 1000) + AuthService.milliseconds(verifier.leeway)
        let full = try await auth.storage.reserveAttempt(
            [("id-token:" + Secrets.hash(token), 1)], at: now, since: 0, expiresAt: max(expiry, now + 1000))
        if full != nil {
            throw OAuthError.invalidGrant("This ID token was already exchanged; get a new one from the provider")
        }
    }
}

/// A storage without upstream providers: every exchange is refused as for an unknown provider.
struct NoUpstreamProviders: UpstreamProviderStorage {
    func upstreamProviders() async throws -> [UpstreamProvider] { [] }
    func upstreamProvider(name: String) async throws -> UpstreamProvider? { nil }
    func addUpstreamProvider(_ provider: UpstreamProvider) async throws -> Bool { false }
    func removeUpstreamProvider(name: String) async throws -> Bool { false }
    func saveIdentityEmail(provider: String, subject: String, email: String?, verified: Bool?) async throws {}
    func linkIdentity(provider: String, subject: String, userID: String) async throws -> String? { nil }
    func identityEmail(provider: String, subject: String) async throws -> (email: String?, verified: Bool?) { (nil, nil) }
    func linkedIdentities(userID: String) async throws -> [IdentityLink] { [] }
    func unlinkIdentity(provider: String, subject: String, userID: String) async throws -> IdentityUnlinking { .notLinked }
}
