public import Foundation

#if os(macOS)
    import AppKit
#elseif os(iOS) || os(tvOS) || os(visionOS)
    import UIKit
#endif

/// Opens a URL with the platform, for the browser sign-in and for x-callback-url calls:
/// `NSWorkspace` on macOS, `UIApplication` on iOS, iPadOS, Mac Catalyst, tvOS and visionOS, a
/// program such as `xdg-open` on Linux and the BSDs. watchOS opens no other app's URLs.
///
/// `UIApplication.shared` is unavailable in app extensions, so ``open(_:program:)`` is marked
/// unavailable there, and so is every declaration that calls it: Xcode then builds the package
/// for an app and for its extensions alike, and an extension that calls one of them is refused at
/// compile time instead of calling UIKit's application object, which extensions do not have.
@_spi(OutpostInternal) public enum SystemOpener {
    /// How opening a URL ended.
    @_spi(OutpostInternal) public enum Outcome: Sendable, Equatable {
        case opened
        /// The platform or the program declined (on Linux, with the program's exit status).
        case declined(status: Int32?)
        /// The program could not be started (Linux and the BSDs).
        case notStarted(String)
        /// This platform opens no URLs (watchOS).
        case unsupported
    }

    /// Opens `url`; off Apple platforms through `program` (looked up in `PATH`). Unavailable in app
    /// extensions (see the type's documentation).
    @available(iOSApplicationExtension, unavailable)
    @available(macCatalystApplicationExtension, unavailable)
    @available(tvOSApplicationExtension, unavailable)
    @available(visionOSApplicationExtension, unavailable)
    @_spi(OutpostInternal) public static func open(_ url: URL, program: String = "xdg-open") async -> Outcome {
        #if os(macOS)
            return await MainActor.run { NSWorkspace.shared.open(url) } ? .opened : .declined(status: nil)
        #elseif os(iOS) || os(tvOS) || os(visionOS)
            return await openWithApplication(url) ? .opened : .declined(status: nil)
        #elseif os(Linux) || os(FreeBSD) || os(OpenBSD)
            return await run(executable: "/usr/bin/env", arguments: [program, url.absoluteString])
        #else
            return .unsupported
        #endif
    }

    #if os(iOS) || os(tvOS) || os(visionOS)
        /// `UIApplication.open` on the main actor, where UIKit lives.
        @MainActor
        @available(iOSApplicationExtension, unavailable)
        @available(macCatalystApplicationExtension, unavailable)
        @available(tvOSApplicationExtension, unavailable)
        @available(visionOSApplicationExtension, unavailable)
        private static func openWithApplication(_ url: URL) async -> Bool {
            await UIApplication.shared.open(url)
        }
    #endif

    #if os(Linux) || os(FreeBSD) || os(OpenBSD)
        /// Runs a program and waits for it to exit, without holding a thread.
        @_spi(OutpostInternal) public static func run(executable: String, arguments: [String]) async -> Outcome {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                let process = Process()
                process.executableURL = URL(fileURLWithPath: executable)
                process.arguments = arguments
                process.standardInput = FileHandle.nullDevice
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle.nullDevice
                process.terminationHandler = { finished in
                    let succeeded = finished.terminationReason == .exit && finished.terminationStatus == 0
                    continuation.resume(returning: succeeded ? .opened : .declined(status: finished.terminationStatus))
                }
                do {
                    try process.run()
                } catch {
                    process.terminationHandler = nil
                    continuation.resume(returning: .notStarted("\(error)"))
                }
            }
        }
    #endif
}
