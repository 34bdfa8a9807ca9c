import Crypto
import Foundation
import JWTKit
@_spi(OutpostInternal) import OutpostSupport

/// Checks an upstream provider's ID token as OpenID Connect Core §3.1.3.7 asks of a relying party:
/// the signature (RS256 or ES256, with the key the provider's key set names by `kid`), `iss`
/// exactly the provider's issuer, `aud` one of its client ids and no other audience, `exp` not
/// past and `iat` not in the future (each within ``FederationConfiguration/leeway``), and the
/// `nonce` the app sent. Every failure is an OAuth `invalid_grant` that says which check failed.
struct UpstreamTokenVerifier: Sendable {
    let cache: UpstreamKeyCache
    let leeway: Duration

    static let algorithms: Set<String> = ["RS256", "ES256"]

    func verify(_ token: String, provider: UpstreamProvider, nonce: String?, now: Date = Date()) async throws
        -> UpstreamIdentity
    {
        let header = try Self.header(token)
        guard let algorithm = header["alg"] as? String, Self.algorithms.contains(algorithm) else {
            throw OAuthError.invalidGrant("The ID token's algorithm is not accepted; RS256 and ES256 are")
        }
        guard let kid = header["kid"] as? String else {
            throw OAuthError.invalidGrant("The ID token names no key (kid); the server checks tokens with the key they name")
        }
        var set = try await keySet(provider)
        if !set.kids.contains(kid) {
            // The provider may have rotated its keys: fetch them again, unless that was done moments ago.
            guard let fresh = try await refetch(provider) else {
                throw OAuthError.invalidGrant(
                    "The ID token names a key (kid) that \(provider.name) does not publish; its keys were fetched again "
                        + "moments ago, so the token is refused")
            }
            guard fresh.kids.contains(kid) else {
                throw OAuthError.invalidGrant(
                    "The ID token names a key (kid) that \(provider.name) does not publish, even after fetching its keys again")
            }
            set = fresh
        }
        let claims: UpstreamIDToken
        do {
            claims = try await set.keys.verify(token, as: UpstreamIDToken.self, expectedAudiences: provider.clientIDs)
        } catch let error as JWTError {
            throw Self.refusal(error, provider: provider)
        } catch {
            throw OAuthError.invalidGrant("The ID token's claims cannot be read; iss, sub, aud, exp and iat are required")
        }
        guard claims.issuer.value == provider.issuer else {
            throw OAuthError.invalidGrant("The ID token's issuer (iss) is not \(provider.name)'s issuer \(provider.issuer)")
        }
        let seconds = TimeInterval(leeway.components.seconds)
        do {
            try claims.expires.verifyNotExpired(currentDate: now.addingTimeInterval(-seconds))
        } catch {
            throw OAuthError.invalidGrant("The ID token has expired (exp); get a new one from \(provider.name)")
        }
        guard claims.issuedAt.value <= now.addingTimeInterval(seconds) else {
            throw OAuthError.invalidGrant("The ID token was issued in the future (iat); check the clocks")
        }
        try Self.checkNonce(nonce, claim: claims.nonce, kind: provider.kind)
        return UpstreamIdentity(
            issuer: provider.issuer, subject: claims.subject.value, email: claims.email,
            emailVerified: claims.emailVerified?.value, expiresAt: claims.expires.value,
            clientID: claims.audience.value.first { provider.clientIDs.contains($0) })
    }

    /// The nonce check: the request's `nonce` is the raw value the app made; the token carries it
    /// as is (``UpstreamProvider/Kind/openID``) or as its SHA-256 in lower-case hex
    /// (``UpstreamProvider/Kind/apple``, whose requests take the hash).
    static func checkNonce(_ nonce: String?, claim: String?, kind: UpstreamProvider.Kind) throws {
        guard let nonce, !nonce.isEmpty else {
            throw OAuthError.invalidGrant("nonce is missing: send the raw nonce the app used when it asked for the ID token")
        }
        guard let claim else {
            throw OAuthError.invalidGrant("The ID token carries no nonce; ask the provider for one with the nonce sent here")
        }
        let expected = kind == .apple ? Hex.string(SHA256.hash(data: Data(nonce.utf8))) : nonce
        guard Secrets.equal(claim, expected) else {
            throw OAuthError.invalidGrant(
                kind == .apple
                    ? "The ID token's nonce is not the SHA-256 (hex) of the nonce sent; send the raw nonce"
                    : "The ID token's nonce is not the nonce sent")
        }
    }

    private static func refusal(_ error: JWTError, provider: UpstreamProvider) -> OAuthError {
        switch error.errorType {
        case .signatureVerificationFailed:
            return .invalidGrant("The ID token's signature does not verify with \(provider.name)'s key")
        case .claimVerificationFailure where error.failedClaim is AudienceClaim:
            return .invalidGrant(
                "The ID token's audience (aud) is not a client id registered for \(provider.name), "
                    + "or it names other audiences too")
        case .malformedToken:
            return .invalidGrant("The ID token is not a well-formed JWT")
        default:
            return .invalidGrant("The ID token was refused: \(error.reason ?? "\(error.errorType)")")
        }
    }

    private static func header(_ token: String) throws -> [String: Any] {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = Base64URL.decode(String(parts[0])),
            let header = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
        else { throw OAuthError.invalidGrant("The ID token is not a well-formed JWT") }
        return header
    }

    private func keySet(_ provider: UpstreamProvider) async throws -> UpstreamKeySet {
        do {
            return try await cache.keys(provider)
        } catch {
            throw OAuthError(
                code: "temporarily_unavailable",
                description: "\(provider.name)'s keys cannot be fetched now; try again later", status: .serviceUnavailable)
        }
    }

    private func refetch(_ provider: UpstreamProvider) async throws -> UpstreamKeySet? {
        do {
            return try await cache.refetch(provider)
        } catch {
            throw OAuthError(
                code: "temporarily_unavailable",
                description: "\(provider.name)'s keys cannot be fetched now; try again later", status: .serviceUnavailable)
        }
    }
}
