import Foundation
@_spi(OutpostInternal) import OutpostSupport

/// The credential store over a set of Keychain items: what `KeychainCredentialStore` does on
/// Apple platforms, written against ``KeychainItems`` so that it runs (and is tested) everywhere.
///
/// - Each credential is one generic-password item of `service` (and `accessGroup`), keyed by account.
/// - A save adds the item and, when it exists, updates it; when the update finds it gone (removed
///   in between by another process or extension), it adds again.
/// - A locked Keychain (``KeychainStatus/interactionNotAllowed``) is
///   ``AuthError/Code/credentialStoreLocked``, never "no credential".
/// - The calls run in order on the shared blocking threads (``SerialBlockingQueue``).
struct KeychainStore: CredentialStore {
    var service: String
    var accessGroup: String?
    var accessibility: KeychainAccessibility
    let items: any KeychainItems
    let queue: SerialBlockingQueue

    /// How many add-then-update rounds a save makes before giving up (each round lost a race).
    static let saveRounds = 3

    func item(_ account: String) -> KeychainItemID {
        KeychainItemID(service: service, account: account, accessGroup: accessGroup)
    }

    func load(account: String) async throws -> Credential? {
        let (items, id) = (self.items, self.item(account))
        let (status, data) = try await queue.run { items.copy(id) }
        switch status {
        case .success:
            guard let data else { throw Self.error(status, doing: "read", account: account, accessGroup: accessGroup) }
            do {
                return try JSONDecoder().decode(Credential.self, from: data)
            } catch {
                throw AuthError(
                    .storeCorrupt, "The Keychain item of \(account) is not a credential; remove it and sign in again",
                    underlying: error)
            }
        case .itemNotFound:
            return nil
        default:
            throw Self.error(status, doing: "read", account: account, accessGroup: accessGroup)
        }
    }

    func save(_ credential: Credential, account: String) async throws {
        let data = try JSONEncoder().encode(credential)
        let (items, id, accessibility) = (self.items, self.item(account), self.accessibility)
        let status = try await queue.run { Self.upsert(id, data: data, accessibility: accessibility, in: items) }
        guard status == .success else {
            throw Self.error(status, doing: "written", account: account, accessGroup: accessGroup)
        }
    }

    func remove(account: String) async throws {
        let (items, id) = (self.items, self.item(account))
        let status = try await queue.run { items.delete(id) }
        guard status == .success || status == .itemNotFound else {
            throw Self.error(status, doing: "cleared", account: account, accessGroup: accessGroup)
        }
    }

    /// Adds `item`, or updates it when it exists; an update that finds it gone adds again. Another
    /// writer can win each step, so this goes round at most ``saveRounds`` times. Blocks.
    static func upsert(
        _ item: KeychainItemID, data: Data, accessibility: KeychainAccessibility, in items: any KeychainItems
    ) -> KeychainStatus {
        var status = KeychainStatus.duplicateItem
        for _ in 0..<saveRounds {
            status = items.add(item, data: data, accessibility: accessibility)
            guard status == .duplicateItem else { return status }
            status = items.update(item, data: data, accessibility: accessibility)
            guard status == .itemNotFound else { return status }
        }
        return status
    }

    /// The ``AuthError`` for a failed call: a locked Keychain is
    /// ``AuthError/Code/credentialStoreLocked``, the rest ``AuthError/Code/storeFailed``.
    static func error(_ status: KeychainStatus, doing operation: String, account: String, accessGroup: String?)
        -> AuthError
    {
        switch status {
        case .interactionNotAllowed:
            AuthError(
                .credentialStoreLocked,
                "The Keychain item of \(account) cannot be \(operation) before the device is first unlocked; "
                    + "the credential is kept: try again once the user has unlocked the device")
        case .missingEntitlement:
            AuthError(
                .storeFailed,
                "The app may not use the Keychain access group \(accessGroup ?? "(default)") (\(status)); "
                    + "add it to the keychain-access-groups entitlement of the app and each extension")
        default:
            AuthError(.storeFailed, "The Keychain item of \(account) could not be \(operation) (\(status))")
        }
    }
}
