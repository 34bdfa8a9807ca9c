public import Foundation

#if canImport(AppKit)
    import AppKit
#elseif canImport(UIKit)
    import UIKit
#endif

/// Opens URLs with the platform: `NSWorkspace` on macOS, `UIApplication` on iOS and tvOS,
/// `xdg-open` elsewhere (false when it cannot be launched or exits with a non-zero status).
public struct SystemURLOpener: URLOpening {
    /// Creates the platform opener.
    public init() {}

    public func open(_ url: URL) async -> Bool {
        #if canImport(AppKit)
            return await MainActor.run { NSWorkspace.shared.open(url) }
        #elseif canImport(UIKit) && !os(watchOS)
            return await UIApplication.shared.open(url)
        #elseif os(Linux) || os(FreeBSD) || os(OpenBSD)
            return await Self.run(executable: "/usr/bin/env", arguments: ["xdg-open", url.absoluteString])
        #else
            return false
        #endif
    }

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
