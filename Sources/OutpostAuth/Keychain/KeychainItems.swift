import Foundation

/// The result codes of the Keychain's item calls that ``KeychainStore`` tells apart: `OSStatus`
/// values, spelled out so that the logic around them compiles (and is tested) everywhere.
struct KeychainStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    var rawValue: Int32

    /// `errSecSuccess`.
    static let success = KeychainStatus(rawValue: 0)
    /// `errSecItemNotFound`.
    static let itemNotFound = KeychainStatus(rawValue: -25_300)
    /// `errSecDuplicateItem`.
    static let duplicateItem = KeychainStatus(rawValue: -25_299)
    /// `errSecInteractionNotAllowed`: the item's data-protection class is not available yet (the
    /// device has not been unlocked since it started, for `AfterFirstUnlock` items).
    static let interactionNotAllowed = KeychainStatus(rawValue: -25_308)
    /// `errSecMissingEntitlement`: the access group is not in the app's `keychain-access-groups`.
    static let missingEntitlement = KeychainStatus(rawValue: -34_018)

    var description: String { "OSStatus \(rawValue)" }
}

/// One generic-password item: `kSecAttrService`, `kSecAttrAccount` and, when set,
/// `kSecAttrAccessGroup`.
struct KeychainItemID: Hashable, Sendable {
    var service: String
    var account: String
    var accessGroup: String?
}

/// When an item can be read (`kSecAttrAccessible`).
enum KeychainAccessibility: Sendable, Hashable {
    case afterFirstUnlock
    case afterFirstUnlockThisDeviceOnly
    case whenUnlocked
    case whenUnlockedThisDeviceOnly
}

/// The Keychain's generic-password calls: `SecItemCopyMatching`, `SecItemAdd`, `SecItemUpdate`,
/// `SecItemDelete` on Apple platforms; an in-memory double in the tests. Each call blocks its
/// thread: ``KeychainStore`` makes them on the shared blocking threads, never on the cooperative pool.
protocol KeychainItems: Sendable {
    /// The item's data.
    func copy(_ item: KeychainItemID) -> (status: KeychainStatus, data: Data?)
    /// Adds the item; ``KeychainStatus/duplicateItem`` when it exists.
    func add(_ item: KeychainItemID, data: Data, accessibility: KeychainAccessibility) -> KeychainStatus
    /// Replaces the item's data and accessibility; ``KeychainStatus/itemNotFound`` when it does not exist.
    func update(_ item: KeychainItemID, data: Data, accessibility: KeychainAccessibility) -> KeychainStatus
    /// Deletes the item; ``KeychainStatus/itemNotFound`` when it does not exist.
    func delete(_ item: KeychainItemID) -> KeychainStatus
}
