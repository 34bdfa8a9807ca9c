import Synchronization

/// The last failed requests this instance answered, for the admin console's recent errors page: a
/// ring of at most ``capacity`` entries in memory, written by ``ErrorEnvelopeMiddleware``. Each
/// instance keeps its own; nothing is stored in the database.
///
/// Which failures count (``worthRecording(_:)``): every 5xx, and the 4xx answers that say the
/// server refused a request for a limit of its own, which an operator may need to raise or
/// investigate: 408 (a request read too slowly), 413 (a body too large), 429 (a rate limit) and 431
/// (headers too large). Other 4xx answers (a wrong password, an unknown record, a refused rule)
/// are the caller's business and would push the server's own failures out of the ring.
///
/// An entry holds the route's pattern (`/records/{type}/{id}`), never the path or the query, which
/// may carry a token or a code, and no header or body.
package final class RecentErrors: Sendable {
    /// One failed request.
    package struct Entry: Sendable, Equatable {
        /// Milliseconds since 1970.
        package var time: Int64
        package var method: String
        /// The matched route's pattern, or `unmatched` when no route matched.
        package var route: String
        package var status: Int
        /// The error envelope's `code`, when the server threw one.
        package var code: String?
        /// The request's id, as in the server's log lines.
        package var requestID: String
    }

    /// How many entries the ring keeps.
    package let capacity: Int
    private let ring: Mutex<(entries: [Entry], next: Int)>

    package init(capacity: Int = 200) {
        self.capacity = max(1, capacity)
        self.ring = Mutex(([], 0))
    }

    /// Whether an answer with `status` goes into the ring.
    package static func worthRecording(_ status: Int) -> Bool {
        status >= 500 || [408, 413, 429, 431].contains(status)
    }

    package func record(_ entry: Entry) {
        let capacity = self.capacity
        ring.withLock { ring in
            if ring.entries.count < capacity {
                ring.entries.append(entry)
            } else {
                ring.entries[ring.next] = entry
            }
            ring.next = (ring.next + 1) % capacity
        }
    }

    /// The entries, newest first.
    package var entries: [Entry] {
        ring.withLock { ring in
            guard ring.entries.count == capacity else { return ring.entries.reversed() }
            return Array((ring.entries[ring.next...] + ring.entries[..<ring.next]).reversed())
        }
    }
}
