import Foundation
import JWTKit

/// The claims of an upstream provider's ID token that sign-in reads (OpenID Connect Core §2).
/// jwt-kit checks the signature and the audience (``JWTIdentityToken``); ``UpstreamTokenVerifier``
/// checks the rest with the configured leeway.
struct UpstreamIDToken: JWTIdentityToken {
    var issuer: IssuerClaim
    var subject: SubjectClaim
    var audience: AudienceClaim
    var expires: ExpirationClaim
    var issuedAt: IssuedAtClaim
    var nonce: String?
    var email: String?
    /// A JSON boolean, or Apple's `"true"` / `"false"` strings.
    var emailVerified: BoolClaim?

    enum CodingKeys: String, CodingKey {
        case issuer = "iss", subject = "sub", audience = "aud", expires = "exp", issuedAt = "iat", nonce, email
        case emailVerified = "email_verified"
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// A person as an upstream provider vouched for them.
struct UpstreamIdentity: Sendable, Equatable {
    var issuer: String
    var subject: String
    var email: String?
    var emailVerified: Bool?
    /// The token's `exp`.
    var expiresAt: Date
    /// The client id of the provider's that the token was issued to (its `aud`).
    var clientID: String? = nil
}
