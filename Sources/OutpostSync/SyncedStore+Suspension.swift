import Foundation
import GRDB

extension SyncedStore {
    /// Stops every store of this process from taking new locks on its database, so that iOS does
    /// not terminate the app for holding one while it is suspended (`0xdead10cc`, for files in an
    /// App Group container that other processes open). Until ``resume()``, reads go on and writes
    /// (local writes, pulls, pushes, live changes) fail with an error; a write in progress is
    /// interrupted and rolled back.
    ///
    /// On iOS (not Mac Catalyst) the stores call it themselves when the app enters the background
    /// (UIKit's `didEnterBackgroundNotification`) and call ``resume()`` when it returns to the
    /// foreground (`willEnterForegroundNotification`). Call it yourself at the end of work the app
    /// does in the background (a background task, a background `URLSession`'s events), and from an
    /// app extension, which gets no UIKit application notifications, when its host goes to the
    /// background (`NSExtensionHostDidEnterBackground`).
    ///
    /// It posts GRDB's `Database.suspendNotification`, which also suspends the app's own GRDB
    /// databases opened with `observesSuspensionNotifications`.
    public static func suspend() {
        NotificationCenter.default.post(name: Database.suspendNotification, object: nil)
    }

    /// Lets the stores of this process take locks again after ``suspend()``: call it at the start
    /// of work the app does in the background (a background task, a background `URLSession`'s
    /// events) and, in an app extension, when its host comes back to the foreground
    /// (`NSExtensionHostWillEnterForeground`). On iOS the stores call it themselves when the app
    /// returns to the foreground.
    ///
    /// It posts GRDB's `Database.resumeNotification`.
    public static func resume() {
        NotificationCenter.default.post(name: Database.resumeNotification, object: nil)
    }
}
