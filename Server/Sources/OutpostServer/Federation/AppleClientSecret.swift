import Foundation
import JWTKit

/// The client secret Sign in with Apple's REST API takes (`/auth/token`, `/auth/revoke`): a JWT the
/// server signs with ES256 and the key Apple issued (the `.p8` file), with `kid` the key's id,
/// `iss` the team id, `sub` the client id (the app's bundle id or a Services ID), `aud`
/// `https://appleid.apple.com`, and an expiry at most six months away.
struct AppleClientSecret: Sendable {
    static let audience = "https://appleid.apple.com"
    /// Apple refuses a secret that is valid for longer than six months.
    static let longestLifetime: TimeInterval = 15_777_000

    struct Claims: JWTPayload {
        var iss: IssuerClaim
        var iat: IssuedAtClaim
        var exp: ExpirationClaim
        var aud: AudienceClaim
        var sub: SubjectClaim

        func verify(using algorithm: some JWTAlgorithm) async throws {
            try exp.verifyNotExpired()
        }
    }

    var teamID: String
    var keyID: String
    /// The `.p8` file's contents: a PKCS#8 PEM P-256 private key.
    var privateKeyPEM: String

    /// Signs a secret for `clientID`, valid for `lifetime` (at most six months) from `now`.
    func make(clientID: String, now: Date = Date(), lifetime: TimeInterval = 3600) async throws -> String {
        let key = try ES256PrivateKey(pem: privateKeyPEM)
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: key, kid: JWKIdentifier(string: keyID))
        let claims = Claims(
            iss: IssuerClaim(value: teamID), iat: IssuedAtClaim(value: now),
            exp: ExpirationClaim(value: now.addingTimeInterval(min(lifetime, Self.longestLifetime))),
            aud: AudienceClaim(value: [Self.audience]), sub: SubjectClaim(value: clientID))
        return try await keys.sign(claims, kid: JWKIdentifier(string: keyID))
    }
}

extension UpstreamProvider {
    /// Apple's issuer; a provider of kind ``Kind/apple`` normally has it.
    public static let appleIssuer = "https://appleid.apple.com"

    /// The signer of the provider's Apple client secret, when its team id, key id and key are stored.
    var appleClientSecret: AppleClientSecret? {
        guard let appleTeamID, let appleKeyID, let applePrivateKeyPEM else { return nil }
        return AppleClientSecret(teamID: appleTeamID, keyID: appleKeyID, privateKeyPEM: applePrivateKeyPEM)
    }

    /// Checks a provider before it is stored: a name of letters, digits, `.`, `_`, `-`; an `https`
    /// issuer (or `http` to a loopback address); at least one client id; Apple's signing key, when
    /// given, readable as a P-256 key and given with its team and key ids. Signs one client secret
    /// with the key to prove it.
    package func validated() async throws -> UpstreamProvider {
        guard (1...64).contains(name.utf8.count),
            name.utf8.allSatisfy({ byte in
                (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                    || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                    || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: ".")
                    || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            })
        else {
            throw ServerError.badRequest("invalid_provider", "A provider name is 1–64 letters, digits, '.', '_' or '-'")
        }
        guard let url = URL(string: issuer), UpstreamDocuments.isAllowed(url), url.query == nil, url.fragment == nil else {
            throw ServerError.badRequest(
                "invalid_issuer", "The issuer must be an https URL without query or fragment (http only to a loopback address)")
        }
        guard !clientIDs.isEmpty, clientIDs.allSatisfy({ !$0.isEmpty }) else {
            throw ServerError.badRequest(
                "invalid_provider", "Give at least one --client-id: the id the provider issued to the app")
        }
        let appleParts = [appleTeamID, appleKeyID, applePrivateKeyPEM].compactMap { $0 }
        guard appleParts.isEmpty || appleParts.count == 3 else {
            throw ServerError.badRequest(
                "invalid_provider", "Sign in with Apple needs --apple-team-id, --apple-key-id and --apple-private-key together")
        }
        if let signer = appleClientSecret, let clientID = clientIDs.first {
            do {
                _ = try await signer.make(clientID: clientID)
            } catch {
                throw ServerError.badRequest(
                    "invalid_provider", "The Apple private key is not a P-256 key in PEM (the .p8 file Apple gave)")
            }
        }
        return self
    }
}
