import NIOCore
import NIOPosix
import Synchronization

/// One lean PostgreSQL connection of one event loop, opened again after it breaks.
///
/// Its state lives on its loop: a query from a task running on that loop (every request of a
/// PostgreSQL server) is written, answered and resumed on one thread, with no pool to lease from
/// and no row sequence: the rows come back as slices of the bytes read. A query from elsewhere hops
/// to the loop first. A query that meets a broken connection fails (the storage answers 503
/// `storage_unavailable` with `Retry-After`); the next one opens a new connection.
final class PostgresWireConnection: @unchecked Sendable {
    // `@unchecked`: `state` is read and written on `loop` only (every entry point hops there).
    let loop: any EventLoop
    let host: String
    let port: Int
    let settings: PostgresWireSettings
    /// The count of open connections of the storage, shared by its connections.
    let openCount: OpenConnectionCount

    private enum State {
        case idle
        case connecting(EventLoopFuture<PostgresWireHandler>)
        case ready(PostgresWireHandler, any Channel)
        case closed
    }

    private var state = State.idle

    init(loop: any EventLoop, host: String, port: Int, settings: PostgresWireSettings, openCount: OpenConnectionCount) {
        self.loop = loop
        self.host = host
        self.port = port
        self.settings = settings
        self.openCount = openCount
    }

    /// The rows of prepared statement `statement` (its index in the settings) for `parameters`,
    /// each the payload of one DataRow; room for `rowCapacity` of them is made at the first. With
    /// a `sink`, each row goes to it as it is read instead, and none are returned.
    nonisolated(nonsending) func query(
        _ statement: Int, _ parameters: [PostgresWireValue], rowCapacity: Int = 1, sink: (any PostgresWireRowSink)? = nil
    ) async throws -> [ByteBuffer] {
        try await withUnsafeThrowingContinuation { continuation in
            let query = PostgresWireHandler.Query(
                statement: statement, parameters: parameters, rowCapacity: rowCapacity, sink: sink, continuation: continuation)
            if loop.inEventLoop {
                start(query)
            } else {
                loop.execute { self.start(query) }
            }
        }
    }

    private func start(_ query: PostgresWireHandler.Query) {
        switch state {
        case .ready(let handler, _):
            handler.send(query)
        case .connecting(let future):
            future.whenComplete { result in
                switch result {
                case .success(let handler):
                    handler.send(query)
                case .failure(let error):
                    query.continuation.resume(throwing: error)
                }
            }
        case .idle:
            state = .connecting(connect())
            start(query)
        case .closed:
            query.continuation.resume(throwing: PostgresWireError.connectionLost("the storage is closed"))
        }
    }

    /// Opens the connection now (on the loop), so that a problem shows at start-up.
    func open() async throws {
        let future = loop.flatSubmit { () -> EventLoopFuture<PostgresWireHandler> in
            switch self.state {
            case .idle:
                let future = self.connect()
                self.state = .connecting(future)
                return future
            case .connecting(let future): return future
            case .ready(let handler, _): return self.loop.makeSucceededFuture(handler)
            case .closed: return self.loop.makeFailedFuture(PostgresWireError.connectionLost("the storage is closed"))
            }
        }
        _ = try await future.get()
    }

    private func connect() -> EventLoopFuture<PostgresWireHandler> {
        let ready = loop.makePromise(of: Void.self)
        let settings = self.settings
        let connected = ClientBootstrap(group: loop)
            .connectTimeout(.seconds(10))
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(PostgresWireHandler(settings: settings, ready: ready))
                }
            }
            .connect(host: host, port: port)
        connected.whenFailure { error in ready.fail(PostgresWireError.connectionLost("\(error)")) }
        return connected.flatMap { channel in
            self.openCount.value.add(1, ordering: .relaxed)
            channel.closeFuture.whenComplete { _ in
                self.openCount.value.subtract(1, ordering: .relaxed)
                if case .ready(_, let current) = self.state, current === channel { self.state = .idle }
            }
            return ready.futureResult.flatMap { () -> EventLoopFuture<PostgresWireHandler> in
                if case .closed = self.state {
                    return channel.close().recover { _ in }.flatMapThrowing {
                        throw PostgresWireError.connectionLost("the storage is closed")
                    }
                }
                do {
                    let handler = try channel.pipeline.syncOperations.handler(type: PostgresWireHandler.self)
                    self.state = .ready(handler, channel)
                    return self.loop.makeSucceededFuture(handler)
                } catch {
                    return self.loop.makeFailedFuture(error)
                }
            }.flatMapError { error in
                channel.close().recover { _ in }.flatMapThrowing { throw error }
            }
        }.flatMapErrorThrowing { error in
            if case .connecting = self.state { self.state = .idle }
            throw error
        }
    }

    /// Ends the session (Terminate) and closes the connection; later queries fail.
    func close() async {
        let closed = loop.flatSubmit { () -> EventLoopFuture<Void> in
            let previous = self.state
            self.state = .closed
            switch previous {
            case .ready(_, let channel):
                var buffer = channel.allocator.buffer(capacity: 5)
                PostgresFrontend.terminate(into: &buffer)
                channel.writeAndFlush(buffer, promise: nil)
                channel.close(promise: nil)
                return channel.closeFuture
            case .connecting(let future):
                // Its completion sees `.closed` and closes the channel.
                return future.map { _ in }.recover { _ in }
            case .idle, .closed:
                return self.loop.makeSucceededVoidFuture()
            }
        }
        try? await closed.get()
    }
}

/// The number of lean connections open (shared by one storage's connections).
final class OpenConnectionCount: Sendable {
    let value = Atomic<Int>(0)
}
