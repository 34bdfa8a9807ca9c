public import Foundation
public import OutpostCore

/// The store's folder and file permissions.
enum StoreFiles {
    static let databaseName = "records.sqlite"

    /// Creates `folder` (and its parents) owner-only, and makes an existing one owner-only.
    static func prepare(folder: URL) throws {
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: folder.path)
    }

    /// Makes the database file and SQLite's side files owner-only; on iOS, tvOS, watchOS and
    /// visionOS also encrypted until the device is first unlocked after a restart
    /// (`completeUntilFirstUserAuthentication`), so that a sync in the background still works.
    static func restrict(file: URL) throws {
        var attributes: [FileAttributeKey: Any] = [.posixPermissions: 0o600]
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
            attributes[.protectionKey] = FileProtectionType.completeUntilFirstUserAuthentication
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
