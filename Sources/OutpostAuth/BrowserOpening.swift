public import Foundation
@_spi(OutpostInternal) import OutpostSupport

/// Opens a URL in the user's browser: the seam the browser flows go through.
///
/// Inject your own to show the URL instead (a headless CLI can print it), or to drive the
/// server's pages in tests.
public protocol BrowserOpening: Sendable {
    /// Opens `url`. Throws when no browser could be started.
    func open(_ url: URL) async throws
}

/// The platform's browser: `xdg-open` on Linux, `NSWorkspace` on macOS, `UIApplication` on iOS,
/// iPadOS, Mac Catalyst, tvOS and visionOS. watchOS has no browser to open: sign in there with
/// ``Authenticator/signInWithWebAuthentication(_:scopes:)``.
///
/// In an app extension, where `UIApplication` (and so this type) is unavailable, sign in with
/// ``Authenticator/signInWithWebAuthentication(_:scopes:)`` and `SystemWebAuthenticator` instead.
@available(iOSApplicationExtension, unavailable)
@available(macCatalystApplicationExtension, unavailable)
@available(tvOSApplicationExtension, unavailable)
@available(visionOSApplicationExtension, unavailable)
public struct SystemBrowser: BrowserOpening {
    /// The program that opens URLs on Linux. Default: `xdg-open` looked up in `PATH`.
    public var linuxOpener: String

    public init(linuxOpener: String = "xdg-open") {
        self.linuxOpener = linuxOpener
    }

    public func open(_ url: URL) async throws {
        switch await SystemOpener.open(url, program: linuxOpener) {
        case .opened: return
        case .declined(let status?):
            throw AuthError(.browserFailed, "\(linuxOpener) failed (exit status \(status)); open the sign-in URL by hand")
        case .declined(nil):
            throw AuthError(.browserFailed, "The browser could not be opened; open the sign-in URL by hand")
        case .notStarted(let reason):
            throw AuthError(.browserFailed, "\(linuxOpener) could not be started (\(reason)); open the sign-in URL by hand")
        case .unsupported:
            throw AuthError(
                .browserFailed,
                "This platform has no browser to open; sign in with signInWithWebAuthentication or the device flow")
        }
    }
}

/// No browser: the browser flows refuse to start. For app extensions, where ``SystemBrowser`` is
/// unavailable: an extension signs in with ``Authenticator/signInWithWebAuthentication(_:scopes:)``
/// or uses the credential its app shares (a Keychain access group), and never opens a browser.
public struct NoBrowser: BrowserOpening {
    public init() {}

    public func open(_ url: URL) async throws {
        throw AuthError(
            .browserFailed,
            "This authenticator has no browser (an app extension): sign in with signInWithWebAuthentication, or in the app")
    }
}
