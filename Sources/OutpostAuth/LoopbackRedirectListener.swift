public import Foundation
@_spi(OutpostInternal) import OutpostSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Receives the browser's redirect on `http://127.0.0.1:{port}/callback` (RFC 8252, 7.3), for
/// command-line tools and desktop programs that have no custom URL scheme.
///
/// It listens on the loopback interface only, on a port the system picks, on a thread of its own
/// (plain POSIX sockets, no event loop). It answers other paths with 404 and keeps waiting; the
/// first request on the right path gets a small "you can close this window" page, and the listener
/// closes. It stops at its deadline (``AuthError/Code/timeout``) or when cancelled
/// (``AuthError/Code/cancelled``).
///
/// ```swift
/// let listener = try LoopbackRedirectListener.start(timeout: .seconds(300))
/// // open the authorization URL with listener.redirectURI as redirect_uri
/// let redirect = try await listener.redirect()   // http://127.0.0.1:53682/callback?code=…&state=…
/// ```
// @unchecked: the mutable state (result, continuation) is only touched while holding `lock`;
// the file descriptors are immutable after init.
public final class LoopbackRedirectListener: @unchecked Sendable {
    /// The port the system assigned.
    public let port: UInt16
    /// The path that ends the wait, e.g. `/callback`.
    public let path: String
    /// `http://127.0.0.1:{port}{path}`: the redirect URI to send with the authorization request.
    public var redirectURI: URL {
        URL(string: "http://127.0.0.1:\(port)\(path)") ?? URL(fileURLWithPath: "/")
    }

    private let listenFD: Int32
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let lock = NSLock()
    private var result: Result<URL, AuthError>?
    private var continuation: CheckedContinuation<URL, any Error>?
    private var closed = false
    /// One element each time ``redirect()`` starts waiting: lets tests cancel a waiting call
    /// without sleeping.
    let waits: AsyncStream<Void>
    private let waitBegan: AsyncStream<Void>.Continuation

    private init(port: UInt16, path: String, listenFD: Int32, wakeRead: Int32, wakeWrite: Int32) {
        self.port = port
        self.path = path
        self.listenFD = listenFD
        self.wakeRead = wakeRead
        self.wakeWrite = wakeWrite
        (waits, waitBegan) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Starts listening on 127.0.0.1 on a free port.
    ///
    /// - Parameters:
    ///   - path: The path of the redirect URI. Default: `/callback`.
    ///   - port: `0` (the default) lets the system pick a free port.
    ///   - timeout: How long to wait for the redirect. Default: 5 minutes.
    /// - Throws: ``AuthError`` ``AuthError/Code/listenerFailed``.
    public static func start(path: String = "/callback", port: UInt16 = 0, timeout: Duration = .seconds(300)) throws
        -> LoopbackRedirectListener
    {
        #if os(Linux)
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw failure("socket") }
        var yes: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian  // 127.0.0.1 only
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 8) == 0 else {
            let error = failure("bind/listen")
            close(fd)
            throw error
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else {
            close(fd)
            throw failure("getsockname")
        }
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else {
            close(fd)
            throw failure("pipe")
        }
        let normalizedPath = path.hasPrefix("/") ? path : "/" + path
        let listener = LoopbackRedirectListener(
            port: UInt16(bigEndian: actual.sin_port), path: normalizedPath, listenFD: fd, wakeRead: pipeFDs[0],
            wakeWrite: pipeFDs[1])
        let deadline = ContinuousClock.now.advanced(by: timeout)
        let thread = Thread { listener.run(until: deadline) }
        thread.name = "outpost.loopback-redirect"
        thread.start()
        return listener
    }

    /// Waits for the redirect and returns its full URL (`http://127.0.0.1:{port}/callback?...`).
    ///
    /// - Throws: ``AuthError`` ``AuthError/Code/timeout`` or ``AuthError/Code/cancelled`` (the
    ///   task was cancelled, or ``cancel()`` was called).
    public func redirect() async throws -> URL {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<URL, any Error>) in
                lock.lock()
                if let result {
                    lock.unlock()
                    continuation.resume(with: result.mapError { $0 as any Error })
                } else if Task.isCancelled {
                    lock.unlock()
                    cancel()
                    continuation.resume(throwing: AuthError(.cancelled, "The browser sign-in was cancelled"))
                } else {
                    self.continuation = continuation
                    lock.unlock()
                    waitBegan.yield()
                }
            }
        } onCancel: {
            cancel()
        }
    }

    /// Stops listening; a pending ``redirect()`` throws ``AuthError/Code/cancelled``.
    public func cancel() {
        finish(.failure(AuthError(.cancelled, "The browser sign-in was cancelled")))
    }

    // MARK: The listening thread

    private func run(until deadline: ContinuousClock.Instant) {
        defer { closeDescriptors() }
        while true {
            let remaining = ContinuousClock.now.duration(to: deadline)
            if remaining <= .zero {
                finish(.failure(AuthError(.timeout, "The browser did not come back in time; start the sign-in again")))
                return
            }
            var fds = [
                pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
            ]
            let milliseconds = Int32(
                clamping: remaining.inMilliseconds + 1)
            let ready = poll(&fds, 2, min(milliseconds, 60_000))
            if ready < 0 {
                if errno == EINTR { continue }
                finish(.failure(Self.failure("poll")))
                return
            }
            if fds[1].revents != 0 || isFinished { return }
            guard fds[0].revents & Int16(POLLIN) != 0 else { continue }
            let client = accept(listenFD, nil, nil)
            guard client >= 0 else { continue }
            if let url = handle(client) {
                finish(.success(url))
                return
            }
        }
    }

    /// Reads one request; answers it; returns the redirect URL when the path is the right one.
    private func handle(_ client: Int32) -> URL? {
        defer { close(client) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        _ = setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        #if canImport(Darwin)
            var noSignal: Int32 = 1
            _ = setsockopt(client, SOL_SOCKET, SO_NOSIGPIPE, &noSignal, socklen_t(MemoryLayout<Int32>.size))
        #endif
        var received = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while received.count < 16_384 {
            let count = recv(client, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received.append(contentsOf: buffer[0..<count])
            if Self.endsHead(received) { break }
        }
        let head = String(decoding: received, as: UTF8.self)
        let requestLine = head.split(separator: "\r\n", maxSplits: 1).first.map(String.init) ?? ""
        let parts = requestLine.split(separator: " ")
        guard parts.count >= 2, parts[0] == "GET" else {
            respond(client, status: "405 Method Not Allowed", body: Self.page(title: "Not here", text: "Nothing to see."))
            return nil
        }
        let target = String(parts[1])
        let targetPath = target.split(separator: "?", maxSplits: 1).first.map(String.init) ?? target
        guard targetPath == path, let url = URL(string: "http://127.0.0.1:\(port)\(target)") else {
            respond(client, status: "404 Not Found", body: Self.page(title: "Not here", text: "Nothing to see."))
            return nil
        }
        let failed = target.contains("error=")
        respond(
            client, status: "200 OK",
            body: failed
                ? Self.page(
                    title: "Sign-in not completed",
                    text: "The sign-in did not complete. You can close this window and return to the application.")
                : Self.page(title: "Signed in", text: "You can close this window and return to the application."))
        return url
    }

    /// Whether the bytes hold a blank line (`CRLF CRLF`), the end of an HTTP request head.
    private static func endsHead(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 4 else { return false }
        for index in 3..<bytes.count
        where bytes[index] == 10 && bytes[index - 1] == 13 && bytes[index - 2] == 10 && bytes[index - 3] == 13 {
            return true
        }
        return false
    }

    private func respond(_ client: Int32, status: String, body: String) {
        let bytes = Array(body.utf8)
        let head =
            "HTTP/1.1 \(status)\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: \(bytes.count)\r\n"
            + "Cache-Control: no-store\r\nReferrer-Policy: no-referrer\r\nConnection: close\r\n\r\n"
        let message = Array(head.utf8) + bytes
        var sent = 0
        while sent < message.count {
            let count = message[sent...].withUnsafeBytes { send(client, $0.baseAddress, $0.count, Self.sendFlags) }
            if count <= 0 { return }
            sent += count
        }
    }

    #if os(Linux)
        private static let sendFlags = Int32(MSG_NOSIGNAL)
    #else
        private static let sendFlags: Int32 = 0
    #endif

    static func page(title: String, text: String) -> String {
        """
        <!doctype html><html lang="en"><head><meta charset="utf-8"><title>\(title)</title></head>\
        <body style="font-family: sans-serif; margin: 3em"><h1>\(title)</h1><p>\(text)</p></body></html>
        """
    }

    // MARK: State

    private var isFinished: Bool {
        lock.lock()
        defer { lock.unlock() }
        return result != nil
    }

    private func finish(_ outcome: Result<URL, AuthError>) {
        lock.lock()
        guard result == nil else {
            lock.unlock()
            return
        }
        result = outcome
        let waiting = continuation
        continuation = nil
        if !closed {
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
        }
        lock.unlock()
        waiting?.resume(with: outcome.mapError { $0 as any Error })
    }

    private func closeDescriptors() {
        lock.lock()
        defer { lock.unlock() }
        guard !closed else { return }
        closed = true
        close(listenFD)
        close(wakeRead)
        close(wakeWrite)
    }

    private static func failure(_ call: String) -> AuthError {
        AuthError(.listenerFailed, "The loopback redirect listener could not start (\(call) failed with errno \(errno))")
    }
}
