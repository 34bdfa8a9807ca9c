import OutpostServer
import Synchronization

/// How many bytes of a file download the server holds unsent, for the file names a test watches:
/// a ``DownloadObserver`` to set in `ServerConfiguration.downloadObserver`.
///
/// A download hands the connection one piece of the file at a time and waits while the connection
/// is not writable, so what it holds stays bounded whatever the reader's speed. For a watched file
/// name, each download reports, after every piece it hands over, the bytes its connection still
/// holds unsent (`ChannelOptions.bufferedWritableBytes`); the meter keeps the largest. Names nobody
/// watches cost one lookup per download.
package final class DownloadMeter: DownloadObserver {
    /// Per watched name: the largest count of unsent bytes seen, and how many samples were taken.
    private let watched = Mutex<[String: (peak: Int, samples: Int)]>([:])

    package init() {}

    /// Starts measuring the downloads of `name` (from zero).
    package func watch(_ name: String) {
        watched.withLock { $0[name] = (0, 0) }
    }

    /// Stops measuring `name`.
    package func stopWatching(_ name: String) {
        _ = watched.withLock { $0.removeValue(forKey: name) }
    }

    /// The most bytes a download of `name` held unsent at once so far, and the number of samples;
    /// `nil` when `name` is not watched.
    package func measurement(_ name: String) -> (peakUnsentBytes: Int, samples: Int)? {
        watched.withLock { $0[name].map { ($0.peak, $0.samples) } }
    }

    package func watches(_ name: String) -> Bool {
        watched.withLock { $0[name] != nil }
    }

    package func handedOver(_ name: String, unsentBytes: Int) {
        watched.withLock { entries in
            guard let entry = entries[name] else { return }
            entries[name] = (max(entry.peak, unsentBytes), entry.samples + 1)
        }
    }
}
