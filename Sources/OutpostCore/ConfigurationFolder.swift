package import Foundation

/// Where a program keeps its per-user files: `$XDG_CONFIG_HOME/<application>` when that variable is
/// an absolute path, else `~/.config/<application>`. Used by the file credential store and the outbox.
package enum ConfigurationFolder {
    package static func url(application: String) -> URL {
        let environment = ProcessInfo.processInfo.environment
        let base: URL
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") {
            base = URL(fileURLWithPath: config, isDirectory: true)
        } else {
            base = FileManager.default.homeDirectoryForCurrentUser.appending(path: ".config", directoryHint: .isDirectory)
        }
        return base.appending(path: application, directoryHint: .isDirectory)
    }
}
