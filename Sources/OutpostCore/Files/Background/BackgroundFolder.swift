import Foundation

/// The folders where background transfers keep files between launches: remainders of resumed
/// uploads (``BackgroundFiles/folder``) and received bodies (`URLSessionTransferSession`).
///
/// They are in Application Support, not Caches: the system may empty Caches while the app is
/// suspended, which would lose a remainder the system is still sending or a body not yet checked.
/// They are excluded from backups (`URLResourceValues.isExcludedFromBackup` on Apple platforms):
/// what they hold is only useful to the transfers in progress on this device.
enum BackgroundFolder {
    /// `outpost-background-<identifier>` in the user's Application Support folder (the temporary
    /// folder when there is none); the identifier's characters other than letters, digits and `.`
    /// become `_`.
    static func defaultURL(_ identifier: String) -> URL {
        let support = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
        let safe = String(
            identifier.unicodeScalars.map { CharacterSet.alphanumerics.contains($0) || $0 == "." ? Character($0) : "_" })
        return (support ?? FileManager.default.temporaryDirectory)
            .appendingPathComponent("outpost-background-\(safe.prefix(100))", isDirectory: true)
    }

    /// Creates `folder` owner-only if needed and excludes it, and so what it holds, from backups.
    static func prepare(_ folder: URL) throws {
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        #if os(iOS) || os(macOS) || os(tvOS) || os(watchOS) || os(visionOS)
            var values = URLResourceValues()
            values.isExcludedFromBackup = true
            var url = folder
            try url.setResourceValues(values)
        #endif
    }
}
