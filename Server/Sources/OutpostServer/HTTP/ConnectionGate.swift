import CoreMetrics
import Foundation
import NIOCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Bounds the connections an instance holds at once (``ServerConfiguration/maxConnections``): one
/// more is answered `503 too_many_connections` with `Retry-After` and closed at once, before any
/// byte of its request is read, so that descriptors stay for the database, files and streams.
package final class ConnectionGate: Sendable {
    let limit: Int
    private let open = Atomic<Int>(0)
    /// Counts the connections refused (`outpost_connections_refused_total`).
    let refused: Counter?

    init(limit: Int, refused: Counter? = nil) {
        self.limit = max(1, limit)
        self.refused = refused
    }

    /// Connections held now.
    var count: Int { open.load(ordering: .relaxed) }

    /// Takes a place for `channel`, given back when it closes; `false` when every place is taken.
    func admit(_ channel: any Channel) -> Bool {
        let (_, now) = open.add(1, ordering: .relaxed)
        guard now <= limit else {
            open.subtract(1, ordering: .relaxed)
            refused?.increment()
            return false
        }
        channel.closeFuture.whenComplete { [self] _ in open.subtract(1, ordering: .relaxed) }
        return true
    }

    /// What a connection past the limit gets before it is closed.
    static let refusal: ByteBuffer = {
        let body =
            #"{"error":{"code":"too_many_connections","message":"The server holds as many connections as it may; retry in a second"}}"#
        return ByteBuffer(
            string: "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
                + "Connection: close\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
    }()

    /// The default bound: the process's soft limit of open files, less room for everything else the
    /// server opens (a quarter, at least 256), and at least 64.
    static func defaultLimit() -> Int {
        var limits = rlimit()
        #if canImport(Glibc)
            let read = getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limits)
        #else
            let read = getrlimit(RLIMIT_NOFILE, &limits)
        #endif
        // No limit (RLIM_INFINITY) or one past any real table of descriptors: a fixed bound.
        guard read == 0, limits.rlim_cur < rlim_t(Int32.max) else { return 10_000 }
        let soft = Int(limits.rlim_cur)
        return max(64, soft - max(256, soft / 4))
    }
}
