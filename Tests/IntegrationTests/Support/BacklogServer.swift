import Foundation

#if canImport(Glibc)
    import Glibc

    /// A listening socket on 127.0.0.1 that never accepts, with its accept queue filled, so that a
    /// new connection attempt hangs in the kernel (its SYN is dropped): a server stuck in its backlog.
    final class BacklogServer: Sendable {
        let port: Int
        private let sockets: [Int32]

        var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

        init() throws {
            struct SocketError: Error { var call: String }
            let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard listener >= 0 else { throw SocketError(call: "socket") }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) }
            }
            guard bound == 0, listen(listener, 0) == 0 else {
                close(listener)
                throw SocketError(call: "bind/listen")
            }
            let named = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
            }
            guard named == 0 else {
                close(listener)
                throw SocketError(call: "getsockname")
            }
            var sockets = [listener]
            // Non-blocking connections that fill the accept queue (which is never drained).
            for _ in 0..<4 {
                let filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
                guard filler >= 0 else { continue }
                _ = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(filler, $0, length) }
                }
                sockets.append(filler)
            }
            self.sockets = sockets
            self.port = Int(UInt16(bigEndian: address.sin_port))
        }

        func stop() {
            for socket in sockets { close(socket) }
        }
    }
#endif
