import Crypto
import Foundation
import Logging
@_spi(OutpostInternal) import OutpostSupport

/// The refresh tokens upstream providers issued for users (Apple issues one with every code), kept
/// so that deleting an account can revoke them, as Apple requires of apps that offer Sign in with
/// Apple. Never kept in the clear: each is sealed (AES-GCM) with a key derived (HKDF-SHA256) from
/// the server's secret `upstream_token_key` in the database, and bound to its user and provider
/// (the authenticated data), so a sealed token copied to another row does not open.
struct UpstreamRefreshTokens: Sendable {
    let storage: any UpstreamSessionStorage
    let secret: Data

    private static let info = Data("outpost upstream refresh token v1".utf8)

    /// The kept tokens of `storage`, or `nil` when it keeps none.
    static func make(storage: any Storage) async throws -> UpstreamRefreshTokens? {
        guard let sessions = storage as? any UpstreamSessionStorage else { return nil }
        return UpstreamRefreshTokens(storage: sessions, secret: try await storage.secret(named: "upstream_token_key"))
    }

    private var key: SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: secret), info: Self.info, outputByteCount: 32)
    }

    private static func context(userID: String, provider: String) -> Data {
        Data("\(userID)\u{0}\(provider)".utf8)
    }

    func keep(_ refreshToken: String, userID: String, provider: String) async throws {
        let box = try AES.GCM.seal(
            Data(refreshToken.utf8), using: key, authenticating: Self.context(userID: userID, provider: provider))
        guard let combined = box.combined else { throw CryptoKitError.incorrectParameterSize }
        try await storage.saveUpstreamToken(
            userID: userID, provider: provider, sealed: Base64URL.encode(combined), now: AuthService.now())
    }

    /// The user's kept tokens, opened, by provider name; a row that does not open is left out.
    func tokens(userID: String) async throws -> [(provider: String, token: String)] {
        try await storage.upstreamTokens(userID: userID).compactMap { row in
            guard let bytes = Base64URL.decode(row.sealed), let box = try? AES.GCM.SealedBox(combined: bytes),
                let plain = try? AES.GCM.open(
                    box, using: key, authenticating: Self.context(userID: userID, provider: row.provider))
            else { return nil }
            return (row.provider, String(decoding: plain, as: UTF8.self))
        }
    }
}

/// Revokes every refresh token an upstream provider issued for the user before the account is
/// deleted (installed on every ``AccountDeleter``, before the configured hooks).
///
/// Apple requires apps to revoke the user's tokens when the account is deleted, so a revocation that
/// fails stops the deletion: 502 `upstream_revocation_failed`, nothing removed, the user tries again.
/// A provider without a revocation endpoint, or removed from the server since, has nothing to
/// revoke with: its token is dropped with the account.
struct UpstreamTokenRevocation: AccountDeletionHook {
    let storage: any Storage
    let configuration: FederationConfiguration

    func accountWillBeDeleted(_ account: DeletingAccount) async throws {
        guard let kept = try await UpstreamRefreshTokens.make(storage: storage),
            let providers = storage as? any UpstreamProviderStorage
        else { return }
        let endpoint = UpstreamTokenEndpoint(configuration: configuration)
        for (name, token) in try await kept.tokens(userID: account.userID) {
            guard let provider = try await providers.upstreamProvider(name: name) else { continue }
            do {
                let endpoints = try await endpoint.documents.endpoints(provider)
                if try await endpoint.revoke(refreshToken: token, provider: provider, endpoints: endpoints) {
                    account.logger.info(
                        "revoked an upstream refresh token", metadata: ["user": "\(account.userID)", "provider": "\(name)"])
                }
            } catch {
                account.logger.warning(
                    "revoking an upstream refresh token failed",
                    metadata: ["user": "\(account.userID)", "provider": "\(name)", "error": "\(error)"])
                throw ServerError(
                    .badGateway, code: "upstream_revocation_failed",
                    message: "The account was not deleted: its sign-in with \(name) must be revoked first, and \(name) "
                        + "did not confirm the revocation; nothing was removed, try again later")
            }
            try await kept.storage.removeUpstreamToken(userID: account.userID, provider: name)
        }
    }
}
