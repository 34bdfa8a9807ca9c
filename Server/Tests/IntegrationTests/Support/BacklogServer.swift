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
            let listener = try LoopbackSocket()
            guard listen(listener.descriptor, 0) == 0 else {
                listener.close()
                throw LoopbackSocket.SocketError(call: "listen", errno: errno)
            }
            var sockets = [listener.descriptor]
            // Non-blocking connections that fill the accept queue (which is never drained).
            for _ in 0..<4 {
                guard let filler = try? LoopbackSocket(flags: Int32(SOCK_NONBLOCK.rawValue)) else { continue }
                filler.connect(to: listener)
                sockets.append(filler.descriptor)
            }
            self.sockets = sockets
            self.port = listener.port
        }

        func stop() {
            for socket in sockets { close(socket) }
        }
    }
#endif
