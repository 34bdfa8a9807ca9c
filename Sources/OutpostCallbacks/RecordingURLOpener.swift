public import Foundation
import Synchronization

/// A URL opener that records every URL instead of opening it: for tests and demos.
///
/// ```swift
/// let opener = RecordingURLOpener()
/// let router = CallbackRouter(opener: opener)
/// // ... route and answer ...
/// let opened = await opener.waitForURLs(count: 1)
/// ```
public final class RecordingURLOpener: URLOpening {
    private struct State {
        var urls: [URL] = []
        var result: Bool
        var waiters: [(count: Int, continuation: CheckedContinuation<[URL], Never>)] = []
    }

    private let state: Mutex<State>

    /// Creates a recorder.
    /// - Parameter result: What ``open(_:)`` reports, e.g. `false` to simulate a missing app.
    public init(result: Bool = true) {
        state = Mutex(State(result: result))
    }

    /// Every URL opened so far, oldest first.
    public var urls: [URL] { state.withLock { $0.urls } }

    /// Records `url` and returns the configured result.
    public func open(_ url: URL) async -> Bool {
        let (result, ready) = state.withLock { state in
            state.urls.append(url)
            let urls = state.urls
            var ready: [(CheckedContinuation<[URL], Never>, [URL])] = []
            state.waiters.removeAll { waiter in
                guard urls.count >= waiter.count else { return false }
                ready.append((waiter.continuation, urls))
                return true
            }
            return (state.result, ready)
        }
        for (continuation, urls) in ready { continuation.resume(returning: urls) }
        return result
    }

    /// Suspends until at least `count` URLs have been opened, then returns all of them.
    ///
    /// Lets a test wait for work that happens in another task without sleeping.
    public func waitForURLs(count: Int) async -> [URL] {
        await withCheckedContinuation { continuation in
            let ready: [URL]? = state.withLock { state in
                if state.urls.count >= count { return state.urls }
                state.waiters.append((count, continuation))
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
