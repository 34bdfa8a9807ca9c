#if canImport(Security)
    public import Foundation
    import Security

    /// Keeps credentials in the Keychain (Apple platforms only), as generic passwords of `service`,
    /// readable after the first unlock on this device only.
    public struct KeychainCredentialStore: CredentialStore {
        /// The Keychain service name, e.g. your bundle identifier.
        public var service: String

        public init(service: String) { self.service = service }

        private func query(_ account: String) -> [String: Any] {
            [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
                kSecAttrAccount as String: account,
            ]
        }

        public func load(account: String) async throws -> Credential? {
            var item: CFTypeRef?
            var query = query(account)
            query[kSecReturnData as String] = true
            query[kSecMatchLimit as String] = kSecMatchLimitOne
            let status = SecItemCopyMatching(query as CFDictionary, &item)
            if status == errSecItemNotFound { return nil }
            guard status == errSecSuccess, let data = item as? Data else {
                throw AuthError(.storeFailed, "The Keychain could not be read (OSStatus \(status))")
            }
            do {
                return try JSONDecoder().decode(Credential.self, from: data)
            } catch {
                throw AuthError(
                    .storeCorrupt, "The Keychain item of \(account) is not a credential; remove it and sign in again",
                    underlying: error)
            }
        }

        public func save(_ credential: Credential, account: String) async throws {
            let data = try JSONEncoder().encode(credential)
            let attributes: [String: Any] = [
                kSecValueData as String: data, kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly,
            ]
            var status = SecItemUpdate(query(account) as CFDictionary, attributes as CFDictionary)
            if status == errSecItemNotFound {
                status = SecItemAdd(query(account).merging(attributes) { $1 } as CFDictionary, nil)
            }
            guard status == errSecSuccess else {
                throw AuthError(.storeFailed, "The Keychain could not be written (OSStatus \(status))")
            }
        }

        public func remove(account: String) async throws {
            let status = SecItemDelete(query(account) as CFDictionary)
            guard status == errSecSuccess || status == errSecItemNotFound else {
                throw AuthError(.storeFailed, "The Keychain item could not be removed (OSStatus \(status))")
            }
        }
    }
#endif
