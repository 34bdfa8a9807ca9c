#if os(Linux) || os(Android) || os(Windows) || os(OpenBSD)  // Package.swift's `nonApple`: where AsyncHTTPClient is linked
    public import Foundation
    public import HTTPTypes
    public import NIOCore
    import NIOHTTP1
    import NIOPosix
    public import NIOSSL
    import OutpostSupport
    import Synchronization

    /// A ``ClientTransport`` of Outpost's own, straight on SwiftNIO's HTTP/1.1 pipeline: the default
    /// transport on Linux.
    ///
    /// It keeps a pool of keep-alive HTTP/1.1 connections per origin (scheme, host and port), at
    /// most ``Configuration/maxConnectionsPerOrigin`` each, reuses idle ones and closes them after
    /// ``Configuration/idleTimeout``, after a `Connection: close` and after any error. `https` goes
    /// through swift-nio-ssl with the system's trust roots (or ``Configuration/tls``) and the host
    /// name for SNI and certificate checks; a URL is never sent in plain text when it says `https`.
    ///
    /// It does per request only what an exchange needs (no URL parsing beyond the request's own
    /// parts, no tracing, no logging), which makes it the fastest of the built-in transports. Use
    /// `AsyncHTTPClientTransport` instead for HTTP/2, a proxy, or an `HTTPClient` the application
    /// already has.
    ///
    /// A keep-alive connection taken from the pool may have been closed by the server meanwhile
    /// (its idle timeout ran out just as the request went out). When such a reused connection
    /// closes before any byte of the response arrived, a request that is safe to repeat (GET, HEAD,
    /// PUT, DELETE, OPTIONS, TRACE, or any method with an `Idempotency-Key` header: the rule of
    /// ``RetryPolicy``) goes once more, on a new connection, at once and whatever the client's retry
    /// policy; any other request fails with ``OutpostError/Code/connectionLost``, since the server
    /// may have acted on it. A request whose first connection it was is never sent again here.
    ///
    /// What it does not do, and `AsyncHTTPClientTransport` does: HTTP/2; proxies (`HTTP_PROXY` and
    /// `HTTPS_PROXY` are not read, no `CONNECT` tunnels); decompressing response bodies; Unix domain
    /// sockets. Streamed uploads do not follow redirects (see ``stream(_:body:options:)``).
    ///
    /// Behaviour shared with the other built-in transports: ``TransportOptions/timeout`` bounds the
    /// whole exchange, body included; ``TransportOptions/maxResponseBytes`` fails a larger body with
    /// ``OutpostError/Code/responseTooLarge``; cancelling the calling task closes the connection;
    /// ``shutdown()`` cancels what is in flight and returns at once; redirects are followed as
    /// AsyncHTTPClient's default configuration does (at most 5, no cycles, `Authorization` and
    /// cookies dropped when the origin changes), except that an `https` URL is never redirected to
    /// `http`: that response is returned as it is.
    public final class NIOHTTPTransport: ClientTransport {
        /// How the transport connects.
        public struct Configuration: Sendable {
            /// The most connections open at once to one origin; further requests wait for a free one.
            public var maxConnectionsPerOrigin: Int
            /// How long an idle connection is kept for the next request.
            public var idleTimeout: Duration
            /// The longest a connection attempt may take (the request's own timeout may end it sooner).
            public var connectTimeout: Duration
            /// TLS for `https` URLs: certificates are verified against the system's trust roots by
            /// default; set `trustRoots` (or `additionalTrustRoots`) to trust a private authority.
            public var tls: TLSConfiguration
            /// How many redirects one request follows (0: none, the 3xx response is returned).
            public var maxRedirects: Int

            public init(
                maxConnectionsPerOrigin: Int = 8, idleTimeout: Duration = .seconds(60),
                connectTimeout: Duration = .seconds(10),
                tls: TLSConfiguration = .makeClientConfiguration(), maxRedirects: Int = 5
            ) {
                self.maxConnectionsPerOrigin = max(1, maxConnectionsPerOrigin)
                self.idleTimeout = idleTimeout
                self.connectTimeout = connectTimeout
                self.tls = tls
                self.maxRedirects = max(0, maxRedirects)
            }
        }

        public let configuration: Configuration
        let group: any EventLoopGroup
        private let state = Mutex(State())

        private struct State {
            var pools: [NIOConnectionPool.Origin: NIOConnectionPool] = [:]
            /// Streams hold their connection for as long as they last: a pool of their own per
            /// origin, so that a change feed never leaves requests waiting for a connection.
            var streamPools: [NIOConnectionPool.Origin: NIOConnectionPool] = [:]
            var tls: NIOSSLContext?
            var closed = false
        }

        /// Creates a transport on `eventLoopGroup`, by default NIO's shared singleton group
        /// (`MultiThreadedEventLoopGroup.singleton`).
        public init(configuration: Configuration = Configuration(), eventLoopGroup: (any EventLoopGroup)? = nil) {
            self.configuration = configuration
            self.group = eventLoopGroup ?? MultiThreadedEventLoopGroup.singleton
        }

        public func send(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> (HTTPResponse, Data) {
            do {
                let deadline = NIODeadline.now() + .nanoseconds(options.timeout.inNanoseconds)
                var request = request
                var body = body
                var visited: Set<String> = []
                while true {
                    let (pool, head) = try prepare(request, bodyLength: body.map { Int64($0.count) }, streams: false)
                    let response = try await exchange(
                        pool, head, body: body,
                        replayable: Request.isRetrySafe(method: request.method, headers: request.headerFields),
                        options: options, deadline: deadline)
                    guard configuration.maxRedirects > 0,
                        let next = try redirect(from: request, body: body, response: response.head, visited: &visited)
                    else {
                        let data = response.body.map { $0.withUnsafeReadableBytes { Data($0) } } ?? Data()
                        return (NIOHTTP1Conversions.response(response.head), data)
                    }
                    (request, body) = next
                }
            } catch {
                throw Self.classify(error, options: options)
            }
        }

        /// One exchange on a connection of `pool`; a connection found closed before the request
        /// went out is replaced by another. A request that is safe to repeat (`replayable`) and was
        /// left unanswered by a reused connection that closed goes once more, on a new connection.
        private func exchange(
            _ pool: NIOConnectionPool, _ head: HTTPRequestHead, body: Data?, replayable: Bool, options: TransportOptions,
            deadline: NIODeadline
        ) async throws -> NIOCollectedResponse {
            let buffer = body.map { ByteBuffer(bytes: $0) }
            let maxBytes = max(options.maxResponseBytes, 0)
            let isHead = head.method == .HEAD
            var attempts = 0
            var retried = false
            while true {
                let connection = try await pool.lease(deadline: deadline, options: options, preferNew: retried)
                let promise = connection.channel.eventLoop.makePromise(of: NIOCollectedResponse.self)
                let handler = connection.handler
                connection.channel.eventLoop.execute {
                    handler.value.start(
                        head: head, body: buffer, streamsBody: false, sink: .collect(promise, maxBytes: maxBytes, isHead: isHead),
                        options: options, deadline: deadline)
                }
                do {
                    return try await withTaskCancellationHandler {
                        try await promise.futureResult.get()
                    } onCancel: {
                        connection.abort(
                            OutpostError.transportCancelled(underlying: CancellationError()),
                            exchange: ObjectIdentifier(promise.futureResult))
                    }
                } catch is NIOStaleConnection where attempts < 3 {
                    attempts += 1
                } catch is NIOUnansweredOnReusedConnection where replayable && !retried {
                    retried = true
                }
            }
        }

        /// The pool for `request`'s origin and the request head.
        func prepare(_ request: HTTPRequest, bodyLength: Int64?, streams: Bool) throws -> (NIOConnectionPool, HTTPRequestHead) {
            guard let scheme = request.scheme, let authority = request.authority, let path = request.path else {
                throw OutpostError(.invalidRequest, "The request has no absolute URL")
            }
            let pool = try self.pool(for: NIOConnectionPool.Origin(scheme: scheme, authority: authority), streams: streams)
            var headers = NIOHTTP1Conversions.headers(of: request)
            if !headers.contains(name: "host") { headers.add(name: "Host", value: authority) }
            if let bodyLength {
                if !headers.contains(name: "content-length") { headers.add(name: "Content-Length", value: String(bodyLength)) }
            } else if [.post, .put, .patch].contains(request.method), !headers.contains(name: "content-length") {
                headers.add(name: "Content-Length", value: "0")
            }
            let head = HTTPRequestHead(
                version: .http1_1, method: NIOHTTP1Conversions.method(request.method), uri: path, headers: headers)
            return (pool, head)
        }

        private func pool(for origin: NIOConnectionPool.Origin, streams: Bool) throws -> NIOConnectionPool {
            enum Found { case pool(NIOConnectionPool), closed, missing }
            let found = state.withLock { state -> Found in
                if state.closed { return .closed }
                return (streams ? state.streamPools[origin] : state.pools[origin]).map { .pool($0) } ?? .missing
            }
            switch found {
            case .pool(let pool): return pool
            case .closed: throw Self.shutDownBeforeSending
            case .missing: break
            }
            let scheme = origin.scheme.lowercased()
            guard scheme == "http" || scheme == "https" else {
                throw OutpostError(
                    .invalidRequest, "The URL scheme \(origin.scheme) is not supported", suggestion: "Use an http or https URL")
            }
            guard let (host, port) = Self.hostAndPort(origin.authority, defaultPort: scheme == "https" ? 443 : 80) else {
                throw OutpostError(.invalidRequest, "The URL's host and port (\(origin.authority)) cannot be read")
            }
            let tls = scheme == "https" ? try tlsContext() : nil
            return try state.withLock { state in
                if state.closed { throw Self.shutDownBeforeSending }
                if let pool = streams ? state.streamPools[origin] : state.pools[origin] { return pool }
                let pool = NIOConnectionPool(host: host, port: port, tls: tls, configuration: configuration, group: group)
                if streams { state.streamPools[origin] = pool } else { state.pools[origin] = pool }
                return pool
            }
        }

        /// The TLS context, made once (loading the trust roots is slow).
        private func tlsContext() throws -> NIOSSLContext {
            if let context = state.withLock({ $0.tls }) { return context }
            let context: NIOSSLContext
            do {
                context = try NIOSSLContext(configuration: configuration.tls)
            } catch {
                throw OutpostError(
                    .invalidRequest, "The TLS configuration cannot be used (\(error))",
                    suggestion: "Check the certificates and keys given in NIOHTTPTransport.Configuration.tls", underlying: error)
            }
            return state.withLock { state in
                if let known = state.tls { return known }
                state.tls = context
                return context
            }
        }

        /// `host` and `port` of an authority (`host`, `host:port`, `[v6]`, `[v6]:port`), without user info.
        static func hostAndPort(_ authority: String, defaultPort: Int) -> (String, Int)? {
            var rest = Substring(authority)
            if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
            var host: Substring
            var portText: Substring?
            if rest.hasPrefix("[") {
                guard let close = rest.firstIndex(of: "]") else { return nil }
                host = rest[rest.index(after: rest.startIndex)..<close]
                let after = rest[rest.index(after: close)...]
                if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty { return nil }
            } else if let colon = rest.lastIndex(of: ":") {
                host = rest[..<colon]
                portText = rest[rest.index(after: colon)...]
            } else {
                host = rest
            }
            guard !host.isEmpty, host.count <= 255 else { return nil }
            guard let portText, !portText.isEmpty else { return (String(host), defaultPort) }
            guard portText.count <= 5, let port = Int(portText), (1...65535).contains(port) else { return nil }
            return (String(host), port)
        }

        /// The request a redirect leads to, as AsyncHTTPClient's default configuration makes it, or
        /// `nil` when `response` is not one to follow.
        func redirect(
            from request: HTTPRequest, body: Data?, response: HTTPResponseHead, visited: inout Set<String>
        ) throws -> (HTTPRequest, Data?)? {
            let code = response.status.code
            guard [301, 302, 303, 307, 308].contains(code), let location = response.headers.first(name: "location"),
                let current = request.url, let target = URL(string: location, relativeTo: current)?.absoluteURL,
                let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https",
                // Never from https to http.
                !(current.scheme?.lowercased() == "https" && scheme == "http")
            else { return nil }
            if visited.isEmpty { visited.insert(current.absoluteString) }
            guard visited.count <= configuration.maxRedirects else {
                throw OutpostError(
                    .transportFailed, "The server redirected more than \(configuration.maxRedirects) times",
                    suggestion: "Check the server's redirect rules, or raise NIOHTTPTransport.Configuration.maxRedirects")
            }
            guard visited.insert(target.absoluteString).inserted else {
                throw OutpostError(
                    .transportFailed, "The server's redirects go round in a circle (back to \(target.absoluteString))",
                    suggestion: "Check the server's redirect rules")
            }
            var next = HTTPRequest(url: target)
            next.method = request.method
            next.headerFields = request.headerFields
            next.headerFields[HTTPField.Name("Host")!] = nil
            var body = body
            if (code == 303 && request.method != .head) || ((code == 301 || code == 302) && request.method == .post) {
                next.method = .get
                body = nil
                next.headerFields[.contentLength] = nil
                next.headerFields[.contentType] = nil
            }
            if current.scheme != target.scheme || current.host != target.host || current.port != target.port {
                for name in [HTTPField.Name.authorization, .cookie, .origin, .proxyAuthorization] {
                    next.headerFields[name] = nil
                }
            }
            return (next, body)
        }

        /// Cancels every exchange in flight and closes every connection; returns at once. Later
        /// requests fail with ``OutpostError/Code/cancelled``.
        public func shutdown() async throws {
            let pools = state.withLock { state in
                state.closed = true
                return Array(state.pools.values) + Array(state.streamPools.values)
            }
            for pool in pools { pool.shutdown() }
        }

        /// How many connections to `scheme://authority` are open or being opened (for tests).
        package func openConnections(scheme: String, authority: String) -> Int {
            state.withLock { $0.pools[NIOConnectionPool.Origin(scheme: scheme, authority: authority)]?.openConnections ?? 0 }
        }

        static let shutDownBeforeSending = OutpostError(
            .cancelled, "The transport was shut down before the request was sent",
            suggestion: "Send requests before shutting the client down, or make a new client")

        static let shutDownInFlight = OutpostError(.cancelled, "The transport was shut down while the request was in flight")

        static func classify(_ error: any Error, options: TransportOptions) -> OutpostError {
            if error is NIODeadlineExceeded { return .transportTimeout(options, underlying: error) }
            // The handshake failed (NIOSSLError) or the TLS stream broke (BoringSSLError): either way no
            // request went out in plain text.
            if error is NIOSSLError || error is BoringSSLError {
                return OutpostError(
                    .cannotConnect, "The TLS connection to the server failed (\(error))",
                    suggestion:
                        "Check that the server's certificate is valid for the URL's host and signed by a trusted authority (NIOHTTPTransport.Configuration.tls)",
                    underlying: error)
            }
            if let error = error as? NIOUnansweredOnReusedConnection { return classify(error.underlying, options: options) }
            if let known = NIOHTTP1Conversions.classify(error, options: options) { return known }
            return .cannotConnect("\(error)", underlying: error)
        }
    }
#endif
