public import Foundation

#if os(macOS)
    import AppKit
#elseif os(iOS) || os(tvOS) || os(visionOS)
    import UIKit
#endif

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
        #if os(macOS)
            return await MainActor.run { NSWorkspace.shared.open(url) }
        #elseif os(iOS) || os(tvOS) || os(visionOS)
            return await Self.openWithApplication(url)
        #elseif os(Linux) || os(FreeBSD) || os(OpenBSD)
            return await Self.run(executable: "/usr/bin/env", arguments: ["xdg-open", url.absoluteString])
        #else
            return false
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
        /// Runs a program and reports whether it exited with status 0.
        static func run(executable: String, arguments: [String]) async -> Bool {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let process = Process()
                process.executableURL = URL(fileURLWithPath: executable)
                process.arguments = arguments
                process.standardInput = FileHandle.nullDevice
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle.nullDevice
                process.terminationHandler = { finished in
                    continuation.resume(returning: finished.terminationReason == .exit && finished.terminationStatus == 0)
                }
                do {
                    try process.run()
                } catch {
                    process.terminationHandler = nil
                    continuation.resume(returning: false)
                }
            }
        }
    #endif
}
