public import Foundation

#if os(macOS)
    import AppKit
#elseif os(iOS) || os(tvOS) || os(visionOS)
    import UIKit
#endif

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
/// In an app extension, where `UIApplication` is unavailable, sign in with
/// ``Authenticator/signInWithWebAuthentication(_:scopes:)`` and `SystemWebAuthenticator` instead.
public struct SystemBrowser: BrowserOpening {
    /// The program that opens URLs on Linux. Default: `xdg-open` looked up in `PATH`.
    public var linuxOpener: String

    public init(linuxOpener: String = "xdg-open") {
        self.linuxOpener = linuxOpener
    }

    public func open(_ url: URL) async throws {
        #if os(macOS)
            let opened = await MainActor.run { NSWorkspace.shared.open(url) }
            guard opened else { throw AuthError(.browserFailed, "The browser could not be opened; open the sign-in URL by hand") }
        #elseif os(iOS) || os(tvOS) || os(visionOS)
            let opened = await Self.openWithApplication(url)
            guard opened else { throw AuthError(.browserFailed, "The browser could not be opened") }
        #elseif os(Linux) || os(FreeBSD) || os(OpenBSD)
            try await openWithProgram(url)
        #else
            throw AuthError(
                .browserFailed,
                "This platform has no browser to open; sign in with signInWithWebAuthentication or the device flow")
        #endif
    }

    #if os(iOS) || os(tvOS) || os(visionOS)
        /// `UIApplication.open` on the main actor, where UIKit lives.
        @MainActor
        private static func openWithApplication(_ url: URL) async -> Bool {
            await UIApplication.shared.open(url)
        }
    #endif

    #if os(Linux) || os(FreeBSD) || os(OpenBSD)
        /// Runs ``linuxOpener`` with the URL and waits for it to exit, without holding a thread.
        private func openWithProgram(_ url: URL) async throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [linuxOpener, url.absoluteString]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            let opener = linuxOpener
            // xdg-open returns once the browser has the URL; wait for it without holding a thread.
            let status: Int32 = try await withCheckedThrowingContinuation { continuation in
                process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
                do {
                    try process.run()
                } catch {
                    process.terminationHandler = nil
                    continuation.resume(
                        throwing: AuthError(
                            .browserFailed, "\(opener) could not be started; open the sign-in URL by hand", underlying: error))
                }
            }
            guard status == 0 else {
                throw AuthError(.browserFailed, "\(linuxOpener) failed (exit status \(status)); open the sign-in URL by hand")
            }
        }
    #endif
}
