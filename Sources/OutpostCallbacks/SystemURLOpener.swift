public import Foundation
@_spi(OutpostInternal) import OutpostSupport

/// Opens URLs with the platform: `NSWorkspace` on macOS, `UIApplication` on iOS, iPadOS, Mac
/// Catalyst, tvOS and visionOS, `xdg-open` on Linux and the BSDs (false when it cannot be launched
/// or exits with a non-zero status). watchOS opens no other app's URLs: there it answers false.
///
/// `UIApplication` is unavailable in app extensions, and so is this type: an extension passes an
/// opener of its own (for example one that calls its `NSExtensionContext`'s
/// `open(_:completionHandler:)`).
@available(iOSApplicationExtension, unavailable)
@available(macCatalystApplicationExtension, unavailable)
@available(tvOSApplicationExtension, unavailable)
@available(visionOSApplicationExtension, unavailable)
public struct SystemURLOpener: URLOpening {
    /// Creates the platform opener.
    public init() {}

    public func open(_ url: URL) async -> Bool {
        await SystemOpener.open(url) == .opened
    }
}
