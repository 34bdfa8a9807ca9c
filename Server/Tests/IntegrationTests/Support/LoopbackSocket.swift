import Foundation

#if canImport(Glibc)
    import Glibc
    private let streamType = Int32(SOCK_STREAM.rawValue)
#elseif canImport(Darwin)
    import Darwin
    private let streamType = SOCK_STREAM
#endif

/// A TCP socket bound to 127.0.0.1 (not listening), and the port it holds.
struct LoopbackSocket: Sendable {
    struct SocketError: Error, CustomStringConvertible {
        var call: String
        var errno: Int32
        var description: String { "\(call) failed: \(String(cString: strerror(errno)))" }
    }

    let descriptor: Int32
    let port: Int
    private(set) var address: sockaddr_in

    /// Binds port `port` on 127.0.0.1, or a free one the kernel picks when it is 0.
    ///
    /// A given port is bound with `SO_REUSEADDR`: a server that just stopped leaves its closed
    /// connections in TIME_WAIT on it, which would otherwise refuse the bind.
    init(port: Int = 0, flags: Int32 = 0) throws {
        let descriptor = socket(AF_INET, streamType | flags, 0)
        guard descriptor >= 0 else { throw SocketError(call: "socket", errno: errno) }
        if port != 0 {
            var on: Int32 = 1
            setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        let named =
            bound == 0
            ? withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
            } : -1
        guard named == 0 else {
            let error = SocketError(call: bound == 0 ? "getsockname" : "bind to port \(port)", errno: errno)
            Self.close(descriptor)
            throw error
        }
        self.descriptor = descriptor
        self.address = address
        self.port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// Connects this socket to `other`'s address (non-blocking sockets return at once).
    func connect(to other: LoopbackSocket) {
        var target = other.address
        _ = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                #if canImport(Glibc)
                    Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                #else
                    Darwin.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                #endif
            }
        }
    }

    func close() { Self.close(descriptor) }

    private static func close(_ descriptor: Int32) {
        #if canImport(Glibc)
            _ = Glibc.close(descriptor)
        #else
            _ = Darwin.close(descriptor)
        #endif
    }
}

/// A port on 127.0.0.1 that refuses every connection, and that no other test can take while it
/// is held: the socket is bound but never listens, so a connection attempt is reset at once.
///
/// A stopped server's port is not that: the kernel may hand it to a server another test starts
/// in parallel, and a request meant to find nobody reaches that server instead.
final class ClosedPort: Sendable {
    private let socket: LoopbackSocket

    var port: Int { socket.port }
    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Holds a free port the kernel picks, or `port` (which fails if someone else holds it).
    init(port: Int = 0) throws {
        socket = try LoopbackSocket(port: port)
    }

    func release() { socket.close() }
}
