#if os(macOS) || os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
    import Foundation
    import Security

    /// ``KeychainItems`` over the Security framework's `SecItem` calls, on generic-password items.
    struct SystemKeychainItems: KeychainItems {
        func copy(_ item: KeychainItemID) -> (status: KeychainStatus, data: Data?) {
            var query = Self.query(item)
            query[kSecReturnData as String] = true
            query[kSecMatchLimit as String] = kSecMatchLimitOne
            var result: CFTypeRef?
            let status = SecItemCopyMatching(query as CFDictionary, &result)
            return (KeychainStatus(rawValue: status), result as? Data)
        }

        func add(_ item: KeychainItemID, data: Data, accessibility: KeychainAccessibility) -> KeychainStatus {
            var query = Self.query(item)
            query[kSecValueData as String] = data
            query[kSecAttrAccessible as String] = Self.accessible(accessibility)
            return KeychainStatus(rawValue: SecItemAdd(query as CFDictionary, nil))
        }

        func update(_ item: KeychainItemID, data: Data, accessibility: KeychainAccessibility) -> KeychainStatus {
            let changes: [String: Any] = [
                kSecValueData as String: data, kSecAttrAccessible as String: Self.accessible(accessibility),
            ]
            return KeychainStatus(rawValue: SecItemUpdate(Self.query(item) as CFDictionary, changes as CFDictionary))
        }

        func delete(_ item: KeychainItemID) -> KeychainStatus {
            KeychainStatus(rawValue: SecItemDelete(Self.query(item) as CFDictionary))
        }

        /// The attributes that name one item.
        static func query(_ item: KeychainItemID) -> [String: Any] {
            var query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword,
                kSecAttrService as String: item.service,
                kSecAttrAccount as String: item.account,
                // On macOS: the data-protection (iOS-style) Keychain, not the legacy file keychain and
                // its access prompts. Elsewhere it is the only Keychain and the flag changes nothing.
                kSecUseDataProtectionKeychain as String: true,
            ]
            if let group = item.accessGroup { query[kSecAttrAccessGroup as String] = group }
            return query
        }

        static func accessible(_ accessibility: KeychainAccessibility) -> CFString {
            switch accessibility {
            case .afterFirstUnlock: kSecAttrAccessibleAfterFirstUnlock
            case .afterFirstUnlockThisDeviceOnly: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            case .whenUnlocked: kSecAttrAccessibleWhenUnlocked
            case .whenUnlockedThisDeviceOnly: kSecAttrAccessibleWhenUnlockedThisDeviceOnly
            }
        }
    }
#endif
