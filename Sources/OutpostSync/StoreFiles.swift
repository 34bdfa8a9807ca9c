public import Foundation
public import OutpostCore

/// The store's folder and file permissions.
enum StoreFiles {
    static let databaseName = "records.sqlite"

    /// Creates `folder` (and its parents) owner-only, and makes an existing one owner-only. On iOS,
    /// tvOS, watchOS and visionOS the folder also gets the database's protection class
    /// (`protection`): files created in a folder take its class, so SQLite's `-wal` and `-shm`
    /// files, made and remade as the database is used, have the database's.
    static func prepare(folder: URL) throws {
        var attributes: [FileAttributeKey: Any] = [.posixPermissions: 0o700]
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
            attributes[.protectionKey] = protection
        #endif
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: attributes)
        try FileManager.default.setAttributes(attributes, ofItemAtPath: folder.path)
    }

    #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        /// Encrypted until the device is first unlocked after a restart, so that a sync in the
        /// background (and an extension) can still open the store while the device is locked.
        static let protection = FileProtectionType.completeUntilFirstUserAuthentication
    #endif

    /// Makes the database file and SQLite's side files owner-only; on iOS, tvOS, watchOS and
    /// visionOS also of the folder's protection class (`protection`), for files made before the
    /// folder had it.
    static func restrict(file: URL) throws {
        var attributes: [FileAttributeKey: Any] = [.posixPermissions: 0o600]
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
            attributes[.protectionKey] = protection
        #endif
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let path = file.path + suffix
            if FileManager.default.fileExists(atPath: path) {
                try FileManager.default.setAttributes(attributes, ofItemAtPath: path)
            }
        }
    }
}

extension SyncedStore {
    /// The folder of one account's store: `<configuration folder>/sync/<account>`.
    ///
    /// - Parameters:
    ///   - location: where the application keeps its files (see `ConfigurationFolder`).
    ///   - application: the application's folder name.
    ///   - account: the signed-in user's id; 1–128 letters, digits, `_`, `-` or `.`.
    /// - Throws: `OutpostError` `invalidRequest` for an account that is not a safe folder name, or
    ///   the error of `ConfigurationFolder/url(for:application:)`.
    public static func folder(
        for location: ConfigurationFolder.Location, application: String, account: String
    ) throws -> URL {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")
        guard (1...128).contains(account.count), account.allSatisfy(allowed.contains), account != ".", account != ".."
        else {
            throw OutpostError(
                .invalidRequest, "The account \(account.debugDescription) is not a folder name",
                suggestion: "Pass the user's id: 1–128 letters, digits, '_', '-' or '.'")
        }
        return try ConfigurationFolder.url(for: location, application: application)
            .appending(path: "sync", directoryHint: .isDirectory)
            .appending(path: account, directoryHint: .isDirectory)
    }
}
