#if os(macOS) || os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
    import Foundation

    extension ConfigurationFolder {
        /// The user domain's Application Support folder: inside the app's container when sandboxed
        /// (always on iOS, tvOS, watchOS and visionOS), `~/Library/Application Support` otherwise.
        static func applicationSupport() -> URL {
            if let folder = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first {
                return folder
            }
            return URL(fileURLWithPath: NSHomeDirectory(), isDirectory: true)
                .appending(path: "Library/Application Support", directoryHint: .isDirectory)
        }

        /// The shared container of App Group `identifier`.
        static func appGroupContainer(_ identifier: String) throws -> URL {
            guard let container = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: identifier) else {
                throw OutpostError(
                    .folderUnavailable, "The App Group container \(identifier) is not available to this app",
                    suggestion:
                        "Add \(identifier) to the app's (and each extension's) com.apple.security.application-groups entitlement")
            }
            return container
        }
    }
#endif
