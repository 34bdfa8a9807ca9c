import Foundation
import GRDB
import Synchronization

#if os(iOS) && !targetEnvironment(macCatalyst)
    import UIKit
#endif

/// Suspends the stores' databases when the app goes to the background and resumes them when it
/// comes back: posts GRDB's `Database.suspendNotification` on `background` and its
/// `Database.resumeNotification` on `foreground`, synchronously on the thread that posts them (the
/// main thread, for UIKit's), so the databases are suspended before the app is.
///
/// On iOS (not Mac Catalyst, whose apps keep running in the background) the first store opened
/// installs one for UIKit's `didEnterBackgroundNotification` and `willEnterForegroundNotification`,
/// for the rest of the process (`installForApplication()`). Elsewhere there is none; tests make
/// their own with names and a `post` of their own.
final class LifecycleSuspension: Sendable {
    private let center: NotificationCenter
    /// The observers' tokens, removed by `stop()`. Only read under the lock.
    private let observers: Mutex<[any NSObjectProtocol]>

    /// Observes `background` and `foreground` on `center` and calls `post` with the GRDB
    /// notification each one calls for.
    init(
        center: NotificationCenter, background: Notification.Name, foreground: Notification.Name,
        post: @escaping @Sendable (Notification.Name) -> Void
    ) {
        self.center = center
        let suspending = center.addObserver(forName: background, object: nil, queue: nil) { _ in
            post(Database.suspendNotification)
        }
        let resuming = center.addObserver(forName: foreground, object: nil, queue: nil) { _ in
            post(Database.resumeNotification)
        }
        observers = Mutex([suspending, resuming])
    }

    /// Stops observing.
    func stop() {
        let tokens = observers.withLock { tokens in
            defer { tokens.removeAll() }
            return tokens
        }
        for token in tokens { center.removeObserver(token) }
    }

    #if os(iOS) && !targetEnvironment(macCatalyst)
        /// The observer of the app's lifecycle, made on first use.
        @MainActor static let application = LifecycleSuspension(
            center: .default, background: UIApplication.didEnterBackgroundNotification,
            foreground: UIApplication.willEnterForegroundNotification,
            post: { NotificationCenter.default.post(name: $0, object: nil) })
    #endif

    /// Installs `application` on iOS, once per process (on the main actor, where UIKit's names
    /// live; at once when called there). Does nothing elsewhere.
    static func installForApplication() {
        #if os(iOS) && !targetEnvironment(macCatalyst)
            if Thread.isMainThread {
                MainActor.assumeIsolated { _ = application }
            } else {
                Task { @MainActor in _ = application }
            }
        #endif
    }
}
