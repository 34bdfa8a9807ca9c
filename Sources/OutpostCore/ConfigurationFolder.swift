public import Foundation

/// Where the client modules keep their files: the credentials file, the outbox journal, the
/// accounts list.
///
/// ```swift
/// let folder = try ConfigurationFolder.url(for: .appGroup("group.com.example.notes"), application: "notes")
/// let outbox = try await Outbox.open(.init(fileURL: folder.appending(path: "outbox.journal")), client: client)
/// ```
///
/// The folder is not created here: each store creates it, owner-only (0700), when it first writes,
/// and its files are owner-only (0600).
public enum ConfigurationFolder {
    /// Which folder.
    public enum Location: Sendable, Hashable {
        /// The platform's per-user place for an application's files:
        /// `Library/Application Support/<application>` in the app's container on Apple platforms
        /// (backed up, never purged, writable on iOS), `$XDG_CONFIG_HOME/<application>` (when
        /// absolute) or `~/.config/<application>` elsewhere.
        case standard
        /// `Library/Application Support/<application>` in the shared container of an App Group,
        /// e.g. `group.com.example.notes`, so that an app and its extensions and widgets see the
        /// same files. Apple platforms only; the app needs the group in its
        /// `com.apple.security.application-groups` entitlement.
        case appGroup(String)
        /// A folder of your choice, used as it is (no application subfolder is added).
        case custom(URL)
    }

    /// The folder for `application`'s files at `location`.
    ///
    /// - Throws: ``OutpostError`` ``OutpostError/Code/folderUnavailable`` for an App Group that the
    ///   app is not entitled to, or any App Group off Apple platforms.
    public static func url(for location: Location, application: String) throws -> URL {
        switch location {
        case .standard:
            return standardURL(application: application)
        case .custom(let folder):
            return folder
        case .appGroup(let identifier):
            #if os(macOS) || os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
                return try appGroupContainer(identifier)
                    .appending(path: "Library/Application Support", directoryHint: .isDirectory)
                    .appending(path: application, directoryHint: .isDirectory)
            #else
                throw OutpostError(
                    .folderUnavailable, "App Group containers exist on Apple platforms only (asked for \(identifier))",
                    suggestion: "Use ConfigurationFolder.Location.standard or .custom on this platform")
            #endif
        }
    }

    /// The folder of ``Location/standard``.
    @_spi(OutpostInternal) public static func standardURL(application: String) -> URL {
        #if os(macOS) || os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
            applicationSupport().appending(path: application, directoryHint: .isDirectory)
        #else
            xdgURL(application: application, environment: ProcessInfo.processInfo.environment)
        #endif
    }

    /// `$XDG_CONFIG_HOME/<application>` when that variable is an absolute path (the XDG Base
    /// Directory rule: a relative one is ignored), else `$HOME/.config/<application>`.
    static func xdgURL(application: String, environment: [String: String]) -> URL {
        let base: URL
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") {
            base = URL(fileURLWithPath: config, isDirectory: true)
        } else {
            let home = environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? NSHomeDirectory()
            base = URL(fileURLWithPath: home, isDirectory: true).appending(path: ".config", directoryHint: .isDirectory)
        }
        return base.appending(path: application, directoryHint: .isDirectory)
    }
}
