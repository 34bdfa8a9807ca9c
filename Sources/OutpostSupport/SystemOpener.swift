public import Foundation

#if os(macOS)
    import AppKit
#elseif os(iOS) || os(tvOS) || os(visionOS)
    import UIKit
#endif

/// Opens a URL with the platform, for the browser sign-in and for x-callback-url calls:
/// `NSWorkspace` on macOS, `UIApplication` on iOS, iPadOS, Mac Catalyst, tvOS and visionOS, a
/// program such as `xdg-open` on Linux and the BSDs. watchOS opens no other app's URLs.
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

    /// Opens `url`; off Apple platforms through `program` (looked up in `PATH`).
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
