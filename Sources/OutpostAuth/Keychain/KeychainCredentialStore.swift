#if os(macOS) || os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
    public import Foundation
    @_spi(OutpostInternal) import OutpostSupport

    /// Keeps credentials in the Keychain (Apple platforms): one generic-password item of
    /// ``service`` per account, in the data-protection Keychain (on macOS too: no legacy keychain,
    /// no access prompts).
    ///
    /// ```swift
    /// let store = KeychainCredentialStore(service: "com.example.notes", accessGroup: "ABCDE12345.com.example.shared")
    /// ```
    ///
    /// - ``accessGroup`` shares the sign-in with the app's extensions and widgets: each lists the
    ///   group in its `keychain-access-groups` entitlement.
    /// - ``sharedContainer`` (the App Group container they share, from
    ///   `FileManager.containerURL(forSecurityApplicationGroupIdentifier:)`) lets them agree which of
    ///   them refreshes the credential (a ``RefreshLease`` and a brief file lock there), so that an
    ///   app and its widget never spend one refresh token twice. Give it whenever ``accessGroup`` is
    ///   shared by more than one process.
    /// - ``accessibility`` says when the items can be read. The default,
    ///   ``Accessibility/afterFirstUnlockThisDeviceOnly``, lets a background refresh read them once
    ///   the user has unlocked the device after it started, and keeps them out of backups restored
    ///   to another device: a refresh token stays with the device it was issued to.
    /// - Before that first unlock a read fails with ``AuthError`` ``AuthError/Code/credentialStoreLocked``,
    ///   which is not "signed out": try again after the unlock.
    /// - The Keychain calls block; they run in order on the shared blocking threads, off the
    ///   cooperative pool.
    public struct KeychainCredentialStore: CredentialStore {
        /// When the items can be read (`kSecAttrAccessible`).
        public enum Accessibility: Sendable, Hashable {
            /// After the first unlock since the device started, until it restarts; kept in
            /// encrypted backups and moved to a new device.
            case afterFirstUnlock
            /// As ``afterFirstUnlock``, but never leaves this device. The default.
            case afterFirstUnlockThisDeviceOnly
            /// Only while the device is unlocked: no refresh in the background.
            case whenUnlocked
            /// As ``whenUnlocked``, but never leaves this device.
            case whenUnlockedThisDeviceOnly
        }

        /// The Keychain service name, e.g. your bundle identifier.
        public var service: String
        /// The Keychain access group shared with the app's extensions and widgets (team ID prefix
        /// included, e.g. `ABCDE12345.com.example.shared`); `nil` for the app's default group.
        public var accessGroup: String?
        /// When the items can be read. Default: ``Accessibility/afterFirstUnlockThisDeviceOnly``.
        public var accessibility: Accessibility
        /// The App Group container shared with the processes that use ``accessGroup``; `nil` when
        /// one process uses the items.
        public var sharedContainer: URL?
        private let queue = SerialBlockingQueue()

        public init(
            service: String, accessGroup: String? = nil, accessibility: Accessibility = .afterFirstUnlockThisDeviceOnly,
            sharedContainer: URL? = nil
        ) {
            self.service = service
            self.accessGroup = accessGroup
            self.accessibility = accessibility
            self.sharedContainer = sharedContainer
        }

        /// `Outpost/<service>.lock` and `.lease` in the shared container.
        private func sharedFile(_ suffix: String) -> URL? {
            let name = service.replacingOccurrences(of: "/", with: "_") + suffix
            return sharedContainer?.appending(path: "Outpost", directoryHint: .isDirectory).appending(path: name)
        }

        /// In the ``sharedContainer``: `Outpost/<service>.lease`.
        public var refreshLease: RefreshLease? {
            sharedFile(".lease").map { RefreshLease(fileURL: $0) }
        }

        /// With a ``sharedContainer``, holds a file lock there (`Outpost/<service>.lock`) while `body`
        /// runs; `body` is brief (no network call), so the lock is never held while the app is suspended.
        public func withExclusiveAccess<T: Sendable>(account: String, _ body: @Sendable () async throws -> T)
            async throws -> T
        {
            guard let lockFile = sharedFile(".lock") else { return try await body() }
            try await BlockingPool.shared.run {
                try FileManager.default.createDirectory(
                    at: lockFile.deletingLastPathComponent(), withIntermediateDirectories: true)
            }
            return try await CredentialFileLock(path: lockFile.path, timeout: .seconds(30)).run(body)
        }

        private var store: KeychainStore {
            let level: KeychainAccessibility =
                switch accessibility {
                case .afterFirstUnlock: .afterFirstUnlock
                case .afterFirstUnlockThisDeviceOnly: .afterFirstUnlockThisDeviceOnly
                case .whenUnlocked: .whenUnlocked
                case .whenUnlockedThisDeviceOnly: .whenUnlockedThisDeviceOnly
                }
            return KeychainStore(
                service: service, accessGroup: accessGroup, accessibility: level, items: SystemKeychainItems(), queue: queue)
        }

        /// - Throws: ``AuthError`` ``AuthError/Code/credentialStoreLocked`` before the device's first
        ///   unlock; ``AuthError/Code/storeCorrupt``; ``AuthError/Code/storeFailed``.
        public func load(account: String) async throws -> Credential? {
            try await store.load(account: account)
        }

        public func save(_ credential: Credential, account: String) async throws {
            try await store.save(credential, account: account)
        }

        public func remove(account: String) async throws {
            try await store.remove(account: account)
        }
    }
#endif
