import Foundation

/// An OpenID Connect provider whose ID tokens the server accepts for sign-in
/// (`outpost providers add`), kept in the database so that every instance trusts the same ones.
public struct UpstreamProvider: Sendable, Hashable {
    /// How the provider's ID tokens carry the nonce the app sent.
    public enum Kind: String, Sendable, Hashable {
        /// The `nonce` claim is the raw nonce, as OpenID Connect Core §3.1.2.1 describes (Google and
        /// most providers).
        case openID = "oidc"
        /// Sign in with Apple: the app sends Apple the SHA-256 (lower-case hex) of the raw nonce, and
        /// the `nonce` claim is that hash.
        case apple
    }

    /// The name apps send (`provider`), e.g. `google` or `apple`.
    public var name: String
    /// The issuer identifier; the discovery document's `issuer` and every token's `iss` must be
    /// exactly this string.
    public var issuer: String
    public var kind: Kind
    /// The client ids the provider issued to the apps; a token's `aud` must name one of them.
    public var clientIDs: [String]
    /// The client secret the provider gave, for the calls the server makes to it. Never logged,
    /// never served.
    package var clientSecret: String?
    /// Sign in with Apple: the team id, the id of the key, and the key (PKCS#8 PEM) that sign the
    /// server's ES256 client secret. The key is never logged, never served.
    public var appleTeamID: String?
    public var appleKeyID: String?
    package var applePrivateKeyPEM: String?
    /// Milliseconds since 1970.
    public var createdAt: Int64

    package init(
        name: String, issuer: String, kind: Kind, clientIDs: [String], clientSecret: String? = nil,
        appleTeamID: String? = nil, appleKeyID: String? = nil, applePrivateKeyPEM: String? = nil, createdAt: Int64
    ) {
        self.name = name
        self.issuer = issuer
        self.kind = kind
        self.clientIDs = clientIDs
        self.clientSecret = clientSecret
        self.appleTeamID = appleTeamID
        self.appleKeyID = appleKeyID
        self.applePrivateKeyPEM = applePrivateKeyPEM
        self.createdAt = createdAt
    }

    /// Whether a client secret is stored (the secret itself is not shown).
    public var hasClientSecret: Bool { clientSecret != nil }
}

/// The upstream providers, and what the last sign-in through one said about the person's e-mail.
public protocol UpstreamProviderStorage: Sendable {
    /// Every provider, by name.
    func upstreamProviders() async throws -> [UpstreamProvider]
    func upstreamProvider(name: String) async throws -> UpstreamProvider?
    /// Adds a provider; `false` when its name or issuer is already registered.
    func addUpstreamProvider(_ provider: UpstreamProvider) async throws -> Bool
    /// Removes a provider; `false` when there is none by that name. Identities linked through it
    /// stay linked (adding the issuer again signs the same people in to the same users).
    func removeUpstreamProvider(name: String) async throws -> Bool
    /// Keeps the e-mail address of a linked identity as the provider gave it (an Apple private
    /// relay address included) and whether the provider said it was verified.
    func saveIdentityEmail(provider: String, subject: String, email: String?, verified: Bool?) async throws
    /// Links an identity to `userID` unless it is linked already (to anyone); returns the user it
    /// is linked to afterwards. Never moves a link from one user to another.
    func linkIdentity(provider: String, subject: String, userID: String) async throws -> String?
    /// The e-mail address kept for a linked identity, and whether it was verified.
    func identityEmail(provider: String, subject: String) async throws -> (email: String?, verified: Bool?)
    /// The identities linked to a user, by provider and subject.
    func linkedIdentities(userID: String) async throws -> [IdentityLink]
    /// Unlinks an identity from `userID`, in one transaction that keeps the user a way to sign
    /// in: the last identity of a user without a password stays linked.
    func unlinkIdentity(provider: String, subject: String, userID: String) async throws -> IdentityUnlinking
}

/// An identity linked to a user: the provider key it is stored under (an upstream provider's
/// issuer, or a sign-in plugin's provider name) and the subject, with the e-mail last kept.
public struct IdentityLink: Sendable, Hashable {
    public var provider: String
    public var subject: String
    public var email: String?
    public var emailVerified: Bool?

    public init(provider: String, subject: String, email: String?, emailVerified: Bool?) {
        self.provider = provider
        self.subject = subject
        self.email = email
        self.emailVerified = emailVerified
    }
}

/// What ``UpstreamProviderStorage/unlinkIdentity(provider:subject:userID:)`` did.
public enum IdentityUnlinking: Sendable, Equatable {
    case unlinked
    /// The identity is not linked to that user (or not linked at all).
    case notLinked
    /// It is the user's only way to sign in (no password, no other identity), so it stays.
    case lastSignInMethod
}

extension UpstreamProvider {
    /// Client ids as stored: a JSON array of strings.
    var clientIDsText: String {
        let data = (try? JSONSerialization.data(withJSONObject: clientIDs, options: [.sortedKeys])) ?? Data("[]".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    static func clientIDs(fromText text: String) -> [String] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String]) ?? []
    }
}
