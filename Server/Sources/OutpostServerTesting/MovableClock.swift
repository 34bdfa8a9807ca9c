package import Foundation
import Synchronization

/// A clock that runs with the system's and that a test moves forward, for what expires by a clock
/// (``OutpostServer/ServerConfiguration/uploadClock``): the test moves time instead of waiting.
package final class MovableClock: Sendable {
    private let offset = Mutex<TimeInterval>(0)

    package init() {}

    /// The current time, moved forward by every ``advance(_:)`` so far.
    package var now: @Sendable () -> Date { { [self] in Date().addingTimeInterval(self.offset.withLock { $0 }) } }

    package func advance(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        offset.withLock { $0 += Double(seconds) + Double(attoseconds) / 1e18 }
    }
}
