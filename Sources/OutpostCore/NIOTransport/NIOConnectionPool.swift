#if os(Linux) || os(Android) || os(Windows) || os(OpenBSD)  // Package.swift's `nonApple`: where AsyncHTTPClient is linked
    import Foundation
    import NIOCore
    import NIOHTTP1
    import NIOPosix
    import NIOSSL
    import NIOTLS
    import OutpostSupport
    import Synchronization

    /// One open HTTP/1.1 connection of a ``NIOConnectionPool``.
    final class NIOConnection: Sendable {
        let channel: any Channel
        let handler: NIOLoopBound<NIOExchangeHandler>

        init(channel: any Channel, handler: NIOLoopBound<NIOExchangeHandler>) {
            self.channel = channel
            self.handler = handler
        }

        /// Ends the exchange in flight with `error` and closes the connection; with `exchange`, only
        /// while that exchange is the one in flight (a caller cancelled just after its exchange ended
        /// must not end the next caller's on the same connection).
        func abort(_ error: any Error, exchange: ObjectIdentifier? = nil) {
            let handler = handler
            channel.eventLoop.execute { handler.value.abort(error, only: exchange) }
        }
    }

    /// The connections to one origin (scheme, host, port): at most ``NIOHTTPTransport/Configuration/maxConnectionsPerOrigin``
    /// open, idle ones reused first (most recently used first), callers beyond the limit waiting in
    /// line for the next free one.
    final class NIOConnectionPool: Sendable {
        struct Origin: Hashable, Sendable {
            var scheme: String
            var authority: String
        }

        let host: String
        let port: Int
        private let tls: NIOSSLContext?
        private let configuration: NIOHTTPTransport.Configuration
        private let group: any EventLoopGroup
        private let state = Mutex(State())

        private struct State {
            var idle: [NIOConnection] = []
            var all: [ObjectIdentifier: NIOConnection] = [:]
            /// Connections open or being opened.
            var open = 0
            /// Connections being opened: each goes to the first caller in line when it is ready.
            var connecting = 0
            var waiters: [(id: Int, continuation: CheckedContinuation<NIOConnection, any Error>)] = []
            var nextWaiter = 0
            var closed = false
        }

        init(
            host: String, port: Int, tls: NIOSSLContext?, configuration: NIOHTTPTransport.Configuration,
            group: any EventLoopGroup
        ) {
            self.host = host
            self.port = port
            self.tls = tls
            self.configuration = configuration
            self.group = group
        }

        /// A connection for one exchange: an idle one, a new one, or the next one freed, whichever
        /// comes first; fails after `deadline`, on cancellation and once the pool is shut down.
        ///
        /// With `preferNew`, a new connection is opened while the pool has room for one, even when
        /// others are idle: for a request that a reused connection closed under, whose idle
        /// companions the server may have closed too.
        func lease(deadline: NIODeadline, options: TransportOptions, preferNew: Bool = false) async throws -> NIOConnection {
            // The common case: an idle connection, with one lock and no suspension.
            if !preferNew, let connection = state.withLock({ Self.takeIdle(&$0) }) { return connection }
            let id = state.withLock { state -> Int in
                state.nextWaiter += 1
                return state.nextWaiter
            }
            let timer = group.next().scheduleTask(deadline: deadline) {
                self.failWaiter(id, OutpostError.transportTimeout(options, underlying: NIODeadlineExceeded()))
            }
            defer { timer.cancel() }
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    enum Step { case take(NIOConnection), fail(any Error), connect, wait }
                    let step = state.withLock { state -> Step in
                        if state.closed { return .fail(NIOHTTPTransport.shutDownBeforeSending) }
                        let room = state.open < configuration.maxConnectionsPerOrigin
                        if !(preferNew && room), let connection = Self.takeIdle(&state) { return .take(connection) }
                        state.waiters.append((id, continuation))
                        guard room else { return .wait }
                        state.open += 1
                        state.connecting += 1
                        return .connect
                    }
                    switch step {
                    case .take(let connection): continuation.resume(returning: connection)
                    case .fail(let error): continuation.resume(throwing: error)
                    case .connect: connect(deadline: deadline)
                    case .wait: break
                    }
                }
            } onCancel: {
                failWaiter(id, OutpostError.transportCancelled(underlying: CancellationError()))
            }
        }

        /// The most recently used idle connection that is still open.
        private static func takeIdle(_ state: inout State) -> NIOConnection? {
            while let connection = state.idle.popLast() {
                if connection.channel.isActive { return connection }
            }
            return nil
        }

        private func failWaiter(_ id: Int, _ error: any Error) {
            let waiter = state.withLock { state -> CheckedContinuation<NIOConnection, any Error>? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index).continuation
            }
            waiter?.resume(throwing: error)
        }

        /// Opens a connection (a place in ``State/open`` is already taken for it) and hands it to the
        /// first caller in line, or keeps it idle.
        private func connect(deadline: NIODeadline) {
            let loop = group.next()
            let remaining = deadline - .now()
            let timeout = min(.nanoseconds(configuration.connectTimeout.inNanoseconds), max(remaining, .milliseconds(1)))
            let tls = tls
            let host = host
            let idleTimeout = TimeAmount.nanoseconds(configuration.idleTimeout.inNanoseconds)
            let made = MadeHandlers()
            let bootstrap = ClientBootstrap(group: loop)
                .connectTimeout(timeout)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let pipeline = channel.pipeline.syncOperations
                        var handshake: EventLoopFuture<Void>?
                        if let tls {
                            // SNI only for a name, never for an IP address.
                            let name = Self.isIPAddress(host) ? nil : host
                            try pipeline.addHandler(try NIOSSLClientHandler(context: tls, serverHostname: name))
                            let waiter = TLSHandshakeWaiter(promise: channel.eventLoop.makePromise())
                            handshake = waiter.done
                            try pipeline.addHandler(waiter)
                        }
                        try pipeline.addHTTPClientHandlers()
                        let handler = NIOExchangeHandler(idleTimeout: idleTimeout)
                        try pipeline.addHandler(handler)
                        made.keep(channel, NIOLoopBound(handler, eventLoop: channel.eventLoop), handshake: handshake)
                    }
                }
            bootstrap.connect(host: host, port: port).flatMap { channel in
                guard let (bound, handshake) = made.take(channel) else {
                    // Closed and torn down before its initializer's handlers could be reached.
                    channel.close(promise: nil)
                    return channel.eventLoop.makeFailedFuture(ChannelError.eof)
                }
                // An https connection is handed out once its handshake is done: a certificate that is
                // refused then fails the caller with the TLS error, never as a closed connection.
                guard let handshake else { return channel.eventLoop.makeSucceededFuture((channel, bound)) }
                return handshake.map { (channel, bound) }.flatMapErrorThrowing { error in
                    channel.close(promise: nil)
                    throw error
                }
            }.flatMapThrowing { (channel: any Channel, bound: NIOLoopBound<NIOExchangeHandler>) in
                let handler = bound.value
                let connection = NIOConnection(channel: channel, handler: bound)
                handler.onDone = { [weak self, weak connection] reusable in
                    guard let self, let connection else { return }
                    if reusable { self.release(connection) }
                }
                channel.closeFuture.whenComplete { [weak self] _ in self?.closed(connection) }
                return connection
            }.whenComplete { result in
                switch result {
                case .success(let connection):
                    let kept = self.state.withLock { state -> Bool in
                        state.connecting -= 1
                        guard !state.closed else { return false }
                        state.all[ObjectIdentifier(connection)] = connection
                        return true
                    }
                    if kept {
                        self.release(connection)
                    } else {
                        connection.channel.close(promise: nil)
                    }
                case .failure(let error):
                    let waiter = self.state.withLock { state -> CheckedContinuation<NIOConnection, any Error>? in
                        state.open -= 1
                        state.connecting -= 1
                        return state.waiters.isEmpty ? nil : state.waiters.removeFirst().continuation
                    }
                    waiter?.resume(throwing: error)
                }
            }
        }

        /// A connection free for the next exchange: to the first caller in line, or idle. Called on
        /// the connection's event loop.
        private func release(_ connection: NIOConnection) {
            let waiter = state.withLock { state -> CheckedContinuation<NIOConnection, any Error>? in
                if state.closed { return nil }
                if !state.waiters.isEmpty { return state.waiters.removeFirst().continuation }
                state.idle.append(connection)
                return nil
            }
            if let waiter {
                waiter.resume(returning: connection)
            } else {
                connection.handler.value.markIdle()
            }
        }

        /// A connection closed: its place goes to the first caller in line, with a new connection.
        private func closed(_ connection: NIOConnection) {
            let deadline = NIODeadline.now() + .nanoseconds(configuration.connectTimeout.inNanoseconds)
            let reconnect = state.withLock { state -> Bool in
                guard state.all.removeValue(forKey: ObjectIdentifier(connection)) != nil else { return false }
                state.idle.removeAll { $0 === connection }
                state.open -= 1
                // Only for callers that no connection being opened will serve.
                guard !state.closed, state.waiters.count > state.connecting,
                    state.open < configuration.maxConnectionsPerOrigin
                else {
                    return false
                }
                state.open += 1
                state.connecting += 1
                return true
            }
            if reconnect { connect(deadline: deadline) }
        }

        /// Fails the callers in line and ends every exchange in flight: `shutdown()`.
        func shutdown() {
            let (waiters, connections) = state.withLock { state in
                state.closed = true
                let taken = (state.waiters.map(\.continuation), Array(state.all.values))
                state.waiters = []
                state.idle = []
                return taken
            }
            for waiter in waiters { waiter.resume(throwing: NIOHTTPTransport.shutDownInFlight) }
            for connection in connections { connection.abort(NIOHTTPTransport.shutDownInFlight) }
        }

        /// How many connections are open or being opened (for tests).
        var openConnections: Int { state.withLock { $0.open } }

        static func isIPAddress(_ host: String) -> Bool {
            (try? SocketAddress(ipAddress: host, port: 0)) != nil
        }
    }

    /// The handlers each channel's initializer made, for the connect's continuation: looked up in
    /// the pipeline instead, a handshake waiter that already removed itself (a handshake done before
    /// the continuation ran, as on a loaded machine) or a pipeline torn down would be missing.
    private final class MadeHandlers: Sendable {
        private let made = Mutex<[ObjectIdentifier: (NIOLoopBound<NIOExchangeHandler>, EventLoopFuture<Void>?)]>([:])

        func keep(_ channel: any Channel, _ handler: NIOLoopBound<NIOExchangeHandler>, handshake: EventLoopFuture<Void>?) {
            made.withLock { $0[ObjectIdentifier(channel)] = (handler, handshake) }
        }

        func take(_ channel: any Channel) -> (NIOLoopBound<NIOExchangeHandler>, EventLoopFuture<Void>?)? {
            made.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) }
        }
    }

    /// The exchange's deadline passed.
    struct NIODeadlineExceeded: Error {}

    /// Completes when the TLS handshake of its connection is done, or fails with the error that
    /// ended it (a refused certificate, a server that closed).
    final class TLSHandshakeWaiter: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = NIOAny
        private let promise: EventLoopPromise<Void>
        var done: EventLoopFuture<Void> { promise.futureResult }

        init(promise: EventLoopPromise<Void>) {
            self.promise = promise
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if let event = event as? TLSUserEvent, case .handshakeCompleted = event {
                promise.succeed(())
                context.pipeline.syncOperations.removeHandler(self, promise: nil)
            }
            context.fireUserInboundEventTriggered(event)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            promise.fail(error)
            context.fireErrorCaught(error)
        }

        func channelInactive(context: ChannelHandlerContext) {
            promise.fail(ChannelError.eof)
            context.fireChannelInactive()
        }

        func handlerRemoved(context: ChannelHandlerContext) {
            // Removed once done; a channel torn down first fails what still waits.
            promise.fail(ChannelError.eof)
        }
    }
#endif
