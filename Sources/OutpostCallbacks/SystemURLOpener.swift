public import Foundation
@_spi(OutpostInternal) import OutpostSupport

/// Opens URLs with the platform: `NSWorkspace` on macOS, `UIApplication` on iOS, iPadOS, Mac
/// Catalyst, tvOS and visionOS, `xdg-open` on Linux and the BSDs (false when it cannot be launched
/// or exits with a non-zero status). watchOS opens no other app's URLs: there it answers false.
///
/// `UIApplication` is unavailable in app extensions: an extension passes an opener of its own
/// (for example one that calls its `NSExtensionContext`'s `open(_:completionHandler:)`).
public struct SystemURLOpener: URLOpening {
    /// Creates the platform opener.
    public init() {}

    public func open(_ url: URL) async -> Bool {
        await SystemOpener.open(url) == .opened
    }
}
