public import Foundation

/// Opens URLs in other apps: the seam between OutpostCallbacks and the operating system.
///
/// ``SystemURLOpener`` is the real one; ``RecordingURLOpener`` records URLs for tests and demos.
public protocol URLOpening: Sendable {
    /// Opens `url` and reports whether it could be opened.
    func open(_ url: URL) async -> Bool
}
