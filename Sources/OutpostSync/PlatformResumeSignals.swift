#if os(macOS) || os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
    import Foundation
    import Synchronization
#endif
#if os(macOS) || os(iOS) || os(tvOS) || os(visionOS)
    import Network
#endif
#if os(macOS) || os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)

    #if os(iOS) || os(tvOS) || os(visionOS)
        import UIKit
    #elseif os(watchOS)
        import WatchKit
    #elseif os(macOS)
        import AppKit
    #endif
#endif

/// The system's moments to reconnect: on Apple platforms, when the network path becomes usable
/// again (`NWPathMonitor`; not on watchOS, where it reports no path to most apps) and when the app
/// returns to the foreground (UIKit's `willEnterForegroundNotification`, WatchKit's on watchOS,
/// AppKit's `didBecomeActiveNotification` on macOS). Elsewhere it never signals; the backoff alone
/// decides.
public struct PlatformResumeSignals: SyncResumeSignals {
    /// The system's signals.
    public init() {}

    /// A sequence that yields when the network path turns usable after being unusable, and when
    /// the app comes to the foreground.
    public func resumptions() -> AsyncStream<Void> {
        #if os(macOS) || os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
            let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
            let foreground = Task {
                let name = await MainActor.run { Self.foregroundNotification }
                for await _ in NotificationCenter.default.notifications(named: name) { continuation.yield() }
            }
            #if os(watchOS)
                continuation.onTermination = { _ in foreground.cancel() }
            #else
                let path = PathWatcher(continuation)
                continuation.onTermination = { _ in
                    path.cancel()
                    foreground.cancel()
                }
            #endif
            return stream
        #else
            // No system signal: a stream that ends only when its consumer stops.
            let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
            continuation.onTermination = { _ in }
            return stream
        #endif
    }
}

#if os(macOS) || os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
    extension PlatformResumeSignals {
        /// The notification posted when the app comes back to the foreground.
        @MainActor static var foregroundNotification: Notification.Name {
            #if os(iOS) || os(tvOS) || os(visionOS)
                return UIApplication.willEnterForegroundNotification
            #elseif os(watchOS)
                return WKApplication.willEnterForegroundNotification
            #else
                return NSApplication.didBecomeActiveNotification
            #endif
        }
    }

#endif

#if os(macOS) || os(iOS) || os(tvOS) || os(visionOS)
    /// An `NWPathMonitor` that signals each change from an unusable path to a usable one (its
    /// first report, the path at start, signals nothing). The monitor is used only through its
    /// own queue and `cancel()`, which Network documents as safe from any thread.
    final class PathWatcher: @unchecked Sendable {
        private let monitor = NWPathMonitor()

        /// Whether the last reported path was usable (`nil` before the first report).
        final class LastPath: Sendable {
            let usable = Mutex<Bool?>(nil)
        }

        init(_ continuation: AsyncStream<Void>.Continuation) {
            let last = LastPath()
            monitor.pathUpdateHandler = { path in
                let usable = path.status == .satisfied
                let before = last.usable.withLock { previous in
                    defer { previous = usable }
                    return previous
                }
                if usable && before == false { continuation.yield() }
            }
            monitor.start(queue: DispatchQueue(label: "outpost.sync.network-path"))
        }

        func cancel() { monitor.cancel() }
    }
#endif
