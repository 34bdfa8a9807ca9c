import NIOCore

/// Takes the rows of one query as they are read, on the connection's event loop. A row's bytes
/// (a DataRow's payload: column count, then each cell's length and bytes) are valid during the
/// call only. A row it cannot read is its own to report (the query still completes).
protocol PostgresWireRowSink: AnyObject, Sendable {
    func row(_ payload: UnsafeBufferPointer<UInt8>)
}

/// What a lean connection needs to start a session: the database's identity and the statements it
/// prepares, each on its first use (the tables may not exist yet when the connection opens).
struct PostgresWireSettings: Sendable {
    var username: String
    /// Never logged, never part of an error.
    var password: String?
    var database: String
    /// Ask for TLS first (`sslmode=prefer`): a server that offers it is left to postgres-nio.
    var askForTLS: Bool
    var statements: [PostgresWireStatement]
    /// PostgreSQL's `lock_timeout` for the session, as the pools set it (503 `storage_busy` past it).
    var lockTimeoutMilliseconds: Int64
    var applicationName = "outpost-reads"
}

/// The channel handler of one lean PostgreSQL connection: the startup and authentication
/// exchange, then queries written as Bind/Execute/Sync in one buffer (Parse first, on a
/// statement's first use) and answered in order (several may be in flight: each ends at its
/// ReadyForQuery).
///
/// Runs on its channel's event loop only. Incoming bytes are framed in place (type byte, length
/// bounded by ``PostgresBackendMessage/maximumLength``); a row is handed over as a slice of the
/// bytes read, not copied.
final class PostgresWireHandler: ChannelInboundHandler, @unchecked Sendable {
    // `@unchecked`: used on its channel's event loop only (the connection hands it over there).
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// A query to send: a prepared statement (its index in the settings), its parameters, how
    /// many rows to make room for at the first, and who waits for the rows.
    struct Query: Sendable {
        var statement: Int
        var parameters: [PostgresWireValue]
        var rowCapacity: Int
        /// Takes each row as it is read, in place of the rows returned (which are then none).
        var sink: (any PostgresWireRowSink)? = nil
        let continuation: UnsafeContinuation<[ByteBuffer], any Error>
    }

    /// A query waiting for its answer, and an ErrorResponse if one came (its rows so far are
    /// ``rows``, for the first query waiting).
    struct Pending {
        var statement: Int
        /// Whether this query's buffer began with the statement's Parse.
        var parses: Bool
        var rowCapacity: Int
        var sink: (any PostgresWireRowSink)?
        var error: PostgresWireError?
        let continuation: UnsafeContinuation<[ByteBuffer], any Error>
    }

    enum State {
        case connecting, tlsAsked, authenticating, ready, failed
    }

    let settings: PostgresWireSettings
    /// Succeeds once the session is ready for queries; fails with the reason it could not start.
    let ready: EventLoopPromise<Void>
    private(set) var state = State.connecting
    private var scram: PostgresWireAuthentication.SCRAM?
    private var received: ByteBuffer?
    private var pending = CircularBuffer<Pending>(initialCapacity: 8)
    /// The rows of the first query waiting, so far (kept here, not in ``Pending``, so that each
    /// row is appended in place instead of copying the array out of the queue and back).
    private var rows: [ByteBuffer] = []
    private var context: ChannelHandlerContext?
    /// Queries written but not flushed yet, and whether a flush is scheduled on the loop.
    private var outgoing: ByteBuffer?
    private var flushScheduled = false
    /// Per statement: whether its Parse was sent (and did not fail).
    private var prepared: [Bool]

    init(settings: PostgresWireSettings, ready: EventLoopPromise<Void>) {
        self.settings = settings
        self.ready = ready
        self.prepared = Array(repeating: false, count: settings.statements.count)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { start(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    private func start(_ context: ChannelHandlerContext) {
        guard state == .connecting else { return }
        var buffer = context.channel.allocator.buffer(capacity: 128)
        if settings.askForTLS {
            state = .tlsAsked
            PostgresFrontend.sslRequest(into: &buffer)
        } else {
            state = .authenticating
            startup(into: &buffer)
        }
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }

    private func startup(into buffer: inout ByteBuffer) {
        PostgresFrontend.startup(
            [
                ("user", settings.username), ("database", settings.database), ("client_encoding", "UTF8"),
                ("application_name", settings.applicationName), ("lock_timeout", "\(settings.lockTimeoutMilliseconds)"),
            ], into: &buffer)
    }

    /// Writes `query` and queues it for its rows. Fails it at once when the connection is not ready.
    func send(_ query: Query) {
        let statement = query.statement
        guard state == .ready, let context else {
            query.continuation.resume(throwing: PostgresWireError.connectionLost("the connection is not open"))
            return
        }
        // Queries sent in one turn of the loop (requests read together) go out in one write.
        var buffer = outgoing ?? context.channel.allocator.buffer(capacity: 256)
        outgoing = nil
        let parses = !prepared[statement]
        if parses {
            // Later queries of this statement rely on this Parse; if it fails, they fail too
            // (26000) and the next one prepares it again.
            prepared[statement] = true
            PostgresFrontend.parse(settings.statements[statement], into: &buffer)
        }
        PostgresFrontend.bindExecuteSync(settings.statements[statement], parameters: query.parameters, into: &buffer)
        pending.append(
            Pending(
                statement: statement, parses: parses, rowCapacity: query.rowCapacity, sink: query.sink,
                continuation: query.continuation))
        outgoing = buffer
        if !flushScheduled {
            flushScheduled = true
            context.eventLoop.execute { self.flushOutgoing() }
        }
    }

    /// Writes the queries gathered since the last flush.
    private func flushOutgoing() {
        flushScheduled = false
        guard let buffer = outgoing, let context, state == .ready else { return }
        outgoing = nil
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        if state == .tlsAsked {
            guard let answer = bytes.readInteger(as: UInt8.self) else { return }
            switch answer {
            case UInt8(ascii: "N"):
                state = .authenticating
                var buffer = context.channel.allocator.buffer(capacity: 128)
                startup(into: &buffer)
                context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
            case UInt8(ascii: "S"):
                return fail(
                    .unsupported("the database offers TLS (sslmode=prefer): its reads stay on postgres-nio's connections"),
                    context: context)
            default:
                return fail(.protocolViolation("the answer to SSLRequest is neither S nor N"), context: context)
            }
            guard bytes.readableBytes == 0 else {
                return fail(.protocolViolation("bytes followed the answer to SSLRequest"), context: context)
            }
            return
        }
        if received == nil || received?.readableBytes == 0 {
            received = bytes
        } else {
            received?.writeBuffer(&bytes)
        }
        do {
            while state != .failed, var buffer = received {
                received = nil
                // A row of a query with a sink is read in place, where it arrived.
                if state == .ready, let sink = pending.first?.sink,
                    let (type, length) = try PostgresBackendMessage.completeHeader(buffer),
                    type == UInt8(ascii: "D")
                {
                    buffer.withUnsafeReadableBytes { raw in
                        sink.row(UnsafeBufferPointer(rebasing: raw.assumingMemoryBound(to: UInt8.self)[5..<1 + length]))
                    }
                    buffer.moveReaderIndex(forwardBy: 1 + length)
                    received = buffer
                    continue
                }
                let message = try PostgresBackendMessage.next(from: &buffer)
                received = buffer
                guard let message else { break }
                try handle(message, context: context)
            }
        } catch let error as PostgresWireError {
            fail(error, context: context)
        } catch {
            fail(.protocolViolation("\(error)"), context: context)
        }
        if received?.readableBytes == 0 { received = nil }
    }

    private func handle(_ message: PostgresBackendMessage, context: ChannelHandlerContext) throws {
        switch (state, message) {
        case (.ready, .dataRow(let row)):
            guard let first = pending.first else { throw PostgresWireError.protocolViolation("a row arrived for no query") }
            if rows.isEmpty { rows.reserveCapacity(first.rowCapacity) }
            rows.append(row)
        case (.ready, .readyForQuery):
            guard let query = pending.popFirst() else {
                throw PostgresWireError.protocolViolation("ReadyForQuery arrived for no query")
            }
            let answer = rows
            rows = []
            if let error = query.error {
                query.continuation.resume(throwing: error)
            } else {
                query.continuation.resume(returning: answer)
            }
        case (_, .error(let error)):
            guard state == .ready, !error.endsConnection, !pending.isEmpty else { throw error }
            let query = pending[pending.startIndex]
            if query.parses || error.isMissingStatement { prepared[query.statement] = false }
            pending[pending.startIndex].error = error
        case (.ready, .parseComplete):
            guard !pending.isEmpty else { throw PostgresWireError.protocolViolation("ParseComplete arrived for no query") }
            pending[pending.startIndex].parses = false
        case (.authenticating, .authentication(let code, let data)):
            try authenticate(code: code, data: data, context: context)
        case (.authenticating, .readyForQuery):
            state = .ready
            ready.succeed(())
        case (_, .authentication):
            throw PostgresWireError.protocolViolation("an authentication request after authentication")
        case (_, .dataRow), (_, .readyForQuery), (_, .parseComplete):
            throw PostgresWireError.protocolViolation("a row, ParseComplete or ReadyForQuery before the session was ready")
        case (_, .commandComplete), (_, .other):
            break
        }
    }

    private func authenticate(code: Int32, data: ByteBuffer, context: ChannelHandlerContext) throws {
        var data = data
        var buffer = context.channel.allocator.buffer(capacity: 256)
        func password() throws -> String {
            guard let password = settings.password else {
                throw PostgresWireError.server(
                    sqlState: "28P01", severity: "FATAL",
                    message:
                        "the database asks for a password and the database URL has none (postgres://user:password@host/database)")
            }
            return password
        }
        switch code {
        case 0:
            return
        case 3:
            PostgresFrontend.password(Array(try password().utf8), nullTerminated: true, into: &buffer)
        case 5:
            guard let salt = data.readBytes(length: 4) else {
                throw PostgresWireError.protocolViolation("the md5 authentication request has no 4-byte salt")
            }
            let answer = PostgresWireAuthentication.md5Answer(user: settings.username, password: try password(), salt: salt)
            PostgresFrontend.password(answer, nullTerminated: true, into: &buffer)
        case 10:
            var mechanisms: [String] = []
            while let mechanism = data.readNullTerminatedString(), !mechanism.isEmpty, mechanisms.count < 16 {
                mechanisms.append(mechanism)
            }
            guard mechanisms.contains("SCRAM-SHA-256") else {
                throw PostgresWireError.unsupported(
                    "the database offers SASL mechanisms \(mechanisms.joined(separator: ", ")); the lean reads speak SCRAM-SHA-256"
                )
            }
            let exchange = PostgresWireAuthentication.SCRAM(password: try password())
            scram = exchange
            PostgresFrontend.saslInitialResponse(mechanism: "SCRAM-SHA-256", exchange.clientFirst, into: &buffer)
        case 11:
            guard var exchange = scram else { throw PostgresWireError.protocolViolation("SASLContinue before SASL began") }
            let final = try exchange.clientFinal(serverFirst: data.readBytes(length: data.readableBytes) ?? [])
            scram = exchange
            PostgresFrontend.password(final, nullTerminated: false, into: &buffer)
        case 12:
            guard let exchange = scram else { throw PostgresWireError.protocolViolation("SASLFinal before SASL began") }
            try exchange.verify(serverFinal: data.readBytes(length: data.readableBytes) ?? [])
            scram = nil
            return
        default:
            throw PostgresWireError.unsupported(
                "the database asks for authentication method \(code); the lean reads speak trust, password, md5 and SCRAM-SHA-256"
            )
        }
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }

    /// Ends the session: every query waiting and the start-up (if not done) fail with `error`,
    /// and the channel closes.
    func fail(_ error: PostgresWireError, context: ChannelHandlerContext) {
        guard state != .failed else { return }
        let wasReady = state == .ready
        state = .failed
        if !wasReady { ready.fail(error) }
        let lost: PostgresWireError = if case .server = error, error.endsConnection { .connectionLost("\(error)") } else { error }
        while let query = pending.popFirst() { query.continuation.resume(throwing: lost) }
        rows = []
        received = nil
        outgoing = nil
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(.connectionLost("the database closed the connection"), context: context)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(.connectionLost("\(error)"), context: context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        fail(.connectionLost("the connection was closed"), context: context)
        self.context = nil
    }
}
