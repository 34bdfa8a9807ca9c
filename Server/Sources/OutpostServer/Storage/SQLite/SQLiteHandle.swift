import NIOCore
import NIOPosix
@_spi(OutpostInternal) import OutpostSupport
import SQLiteNIO
import Synchronization
internal import VaporCSQLite

/// One SQLite connection that keeps its prepared statements.
///
/// sqlite-nio prepares, runs and finalizes a statement for every query and exposes neither the
/// connection handle nor its statements, so the storage opens its connections here, on the same
/// embedded SQLite library (sqlite-nio's `VaporCSQLite`, built thread-safe) and on NIO's shared
/// thread pool, as sqlite-nio does. Each statement is prepared once per connection and kept in a
/// ``StatementCache`` keyed by its SQL text: the next query with the same text resets and rebinds
/// it instead of parsing and planning it again. The cache is bounded (least recently used
/// statements are finalized), so SQL built from a query's filters cannot grow it without limit.
///
/// Each connection runs its statements on a thread of its own, one after another. (On a shared
/// pool, as sqlite-nio does it, a second statement for a busy connection blocks a pool thread on the
/// connection's mutex: under a write load every pool thread ended up waiting for the write
/// connection, and reads on the read-only connections queued behind them.) A short read may
/// instead run on the caller's thread when nothing else is using the connection
/// (``readIfFree(_:_:_:)``), which saves the two thread switches of a trip to the connection's
/// thread and back.
///
/// Every use of the `sqlite3` handle (opening it aside) holds ``use``, so one statement runs at a
/// time whichever thread runs it. The connection is therefore opened without SQLite's own
/// per-connection mutex (`SQLITE_OPEN_NOMUTEX`, SQLite's "multi-thread" mode: a connection may move
/// between threads but is never used by two at once). In serialized mode (`SQLITE_OPEN_FULLMUTEX`)
/// SQLite took and released that mutex in every `sqlite3_step` and `sqlite3_column_*` call: 27 %
/// of writing a list page.
final class SQLiteHandle: Sendable {
    /// The `sqlite3` handle. Only touched while holding ``use``, and closed once.
    private let raw: RawPointer
    private let cache: Mutex<StatementCache>
    private let threadPool: NIOThreadPool
    /// Held by whoever runs a statement on the connection (its thread, or a caller running a read
    /// in place) and by the close. Its value is whether ``close()`` closed `raw`: statements queued
    /// behind the close, and reads tried in place after it, read it and fail instead of touching
    /// the freed handle.
    private let use = Mutex(false)
    /// Statements run on the connection's thread, and reads run in place on a caller's thread.
    private let tripsOnThread = Atomic<Int>(0)
    private let runsInPlace = Atomic<Int>(0)
    /// This connection (and its thread) in the count of open resources, taken back by ``close()``.
    private let counted: OpenResources.Opened
    /// The close, once started.
    private let closer = Mutex<Task<Void, any Error>?>(nil)
    /// The write-ahead log's size after this connection's last commit, and its checkpoints.
    private let wal = WALCheckpoints()

    /// How many statements each connection keeps prepared.
    static let defaultCapacity = 48

    private init(raw: RawPointer, capacity: Int, threadPool: NIOThreadPool, counted: OpenResources.Opened) {
        self.raw = raw
        self.cache = Mutex(StatementCache(capacity: capacity))
        self.threadPool = threadPool
        self.counted = counted
    }

    /// Runs `sqlite3_initialize` once per process before the first connection opens (it sets up
    /// the library's global state, which concurrent first opens would otherwise race on).
    private static let initialized: Bool = sqlite_nio_sqlite3_initialize() == SQLITE_OK

    /// Opens (creating if needed) the database file at `path`. No busy handler is installed: a
    /// statement that meets another connection's lock fails at once with a busy ``SQLiteFailure``,
    /// and ``BusyBoundedConnection`` decides how long to keep trying.
    static func open(path: String, capacity: Int = defaultCapacity) async throws -> SQLiteHandle {
        let threadPool = NIOThreadPool(numberOfThreads: 1)
        threadPool.start()
        // Counted here, in the opener's task, so that a test's tally sees it.
        let counted = OpenResources.opened()
        do {
            return try await open(path: path, capacity: capacity, threadPool: threadPool, counted: counted)
        } catch {
            try? await threadPool.shutdownGracefully()
            counted.close()
            throw error
        }
    }

    private static func open(
        path: String, capacity: Int, threadPool: NIOThreadPool, counted: OpenResources.Opened
    ) async throws -> SQLiteHandle {
        try await threadPool.runIfActive {
            _ = initialized
            var handle: OpaquePointer?
            let flags =
                SQLITE_OPEN_CREATE | SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI | SQLITE_OPEN_EXRESCODE
            let status = sqlite_nio_sqlite3_open_v2(path, &handle, flags, nil)
            guard status == SQLITE_OK, let handle else {
                let message = handle.flatMap { sqlite_nio_sqlite3_errmsg($0) }.map { String(cString: $0) } ?? "cannot open"
                sqlite_nio_sqlite3_close_v2(handle)
                throw SQLiteFailure(code: status, message: message)
            }
            let opened = SQLiteHandle(raw: RawPointer(handle), capacity: capacity, threadPool: threadPool, counted: counted)
            // Replaces SQLite's automatic checkpoint (which runs inside the commit that crosses the
            // threshold, holding up its reply) by one queued after it on the connection's own
            // thread (see ``checkpointIfDue()``). `wal` lives as long as the handle.
            sqlite_nio_sqlite3_wal_hook(handle, walHook, Unmanaged.passUnretained(opened.wal).toOpaque())
            return opened
        }
    }

    /// Notes the log's size after each commit of the connection (SQLite calls it once the commit
    /// is done and its write lock released). Never fails the commit.
    private static let walHook: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafePointer<CChar>?, Int32) -> Int32 =
        { context, _, _, frames in
            if let context {
                Unmanaged<WALCheckpoints>.fromOpaque(context).takeUnretainedValue().frames.store(
                    Int(frames), ordering: .relaxed)
            }
            return SQLITE_OK
        }

    /// After how many pages in the write-ahead log a checkpoint copies them into the database.
    ///
    /// SQLite's automatic checkpoint comes after 1,000. A record insert appends 8 pages (the record,
    /// its three indexes, its change row and that table's two indexes, the AUTOINCREMENT counters),
    /// mostly the same few pages again and again: a checkpoint writes each page once, however many
    /// times the log holds it, so checkpointing 4 times less often writes far fewer pages and
    /// syncs the files 4 times less often. Reads do not slow down: a log of up to 4,062 pages is
    /// indexed by one hash table of the shared-memory index (SQLite's `HASHTABLE_NPAGE_ONE`), so a
    /// page is looked up in one table, as with 1,000.
    static let checkpointFrames = 4000

    /// Starts a checkpoint on the connection's thread when a commit of this connection left the
    /// log at ``checkpointFrames`` pages or more, unless one is already under way. The commit that
    /// got there is answered first: the checkpoint is queued behind it on the connection's thread.
    /// A passive checkpoint, as SQLite's automatic one: it copies what no reader still
    /// needs and waits for nobody. It changes nothing about what a commit has made durable: the
    /// log holds every committed transaction until a checkpoint has copied it.
    private func checkpointIfDue() {
        guard wal.frames.load(ordering: .relaxed) >= Self.checkpointFrames,
            wal.running.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged
        else { return }
        wal.frames.store(0, ordering: .relaxed)
        threadPool.submit { [self] state in
            defer { wal.running.store(false, ordering: .releasing) }
            guard case .active = state else { return }
            use.withLock { closed in
                guard !closed else { return }
                sqlite_nio_sqlite3_wal_checkpoint_v2(raw.pointer, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
                wal.checkpoints.add(1, ordering: .relaxed)
            }
        }
    }

    /// How many checkpoints ran on the connection's thread (for tests).
    var checkpoints: Int { wal.checkpoints.load(ordering: .relaxed) }

    /// Runs one statement with `binds` and returns all its rows.
    func query(_ sql: String, _ binds: [SQLiteData]) async throws -> [StatementRow] {
        let rows = try await onThread { try self.run(sql, binds) }
        checkpointIfDue()
        return rows
    }

    /// What the statement cache did so far (for tests and the benchmark).
    var statistics: StatementCache.Statistics {
        cache.withLock { $0.statistics }
    }

    /// How statements reached the connection so far: trips to its thread, and reads run in place
    /// on the caller's thread (for tests and the benchmark).
    var trips: (onThread: Int, inPlace: Int) {
        (tripsOnThread.load(ordering: .relaxed), runsInPlace.load(ordering: .relaxed))
    }

    /// Whether SQLite serializes this connection with a mutex of its own (opened with
    /// `SQLITE_OPEN_FULLMUTEX`): `sqlite3_db_mutex` is `NULL` in multi-thread mode.
    var isSerialized: Bool {
        use.withLock { closed in !closed && sqlite_nio_sqlite3_db_mutex(raw.pointer) != nil }
    }

    /// Runs `work` (which takes ``use``) on the connection's thread, counting the trip.
    private func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        tripsOnThread.add(1, ordering: .relaxed)
        return try await threadPool.runIfActive { try work() }
    }

    /// Finalizes the kept statements, closes the connection and stops its thread (after the
    /// statements queued before the close).
    ///
    /// The caller's cancellation does not cut it short (a close that never ran would leave the
    /// connection and its thread behind), and the thread stops even when the close itself fails.
    /// Closing again waits for the first close.
    func close() async throws {
        let closing = closer.withLock { closer in
            if let closer { return closer }
            let started = Task { try await self.closeOnce() }
            closer = started
            return started
        }
        try await closing.value
    }

    private func closeOnce() async throws {
        var failure: (any Error)?
        do {
            try await threadPool.runIfActive {
                self.use.withLock { closed in
                    if closed { return }
                    closed = true
                    let statements = self.cache.withLock { $0.close() }
                    for statement in statements { sqlite_nio_sqlite3_finalize(statement.pointer) }
                    sqlite_nio_sqlite3_close_v2(self.raw.pointer)
                }
            }
        } catch {
            failure = error
        }
        do {
            try await threadPool.shutdownGracefully()
        } catch {
            failure = failure ?? error
        }
        counted.close()
        if let failure { throw failure }
    }

    // MARK: On the thread pool

    private func run(_ sql: String, _ binds: [SQLiteData]) throws -> [StatementRow] {
        try use.withLock { closed in try run(sql, binds, closed: closed) }
    }

    private func run(_ sql: String, _ binds: [SQLiteData], closed: Bool) throws -> [StatementRow] {
        try withStatement(sql, binds, closed: closed) { statement, db in
            let count = sqlite_nio_sqlite3_column_count(statement)
            var rows: [StatementRow] = []
            var names: StatementRow.Names?
            while true {
                let status = sqlite_nio_sqlite3_step(statement)
                if status == SQLITE_DONE { return rows }
                guard status == SQLITE_ROW else { throw SQLiteFailure(code: status, message: Self.message(db)) }
                let columnNames =
                    names
                    ?? StatementRow.Names(
                        (0..<count).map { index in
                            sqlite_nio_sqlite3_column_name(statement, index).map { String(cString: $0) } ?? ""
                        })
                names = columnNames
                var values: [SQLiteData] = []
                values.reserveCapacity(Int(count))
                for index in 0..<count { values.append(Self.value(statement, index)) }
                rows.append(StatementRow(names: columnNames, values: values))
            }
        }
    }

    /// Runs one statement with `binds` and hands its rows, one at a time, to `body` on the
    /// connection's thread: for a caller that turns rows straight into what it answers (a list
    /// page's text) without building ``StatementRow``s first. Same statement cache and failures as
    /// ``query(_:_:)``.
    func read<T: Sendable>(_ sql: String, _ binds: [SQLiteData], _ body: @escaping @Sendable (inout RowReader) throws -> T)
        async throws -> T
    {
        try await onThread {
            try self.use.withLock { closed in
                try self.withStatement(sql, binds, closed: closed) { statement, db in
                    var reader = RowReader(statement: statement, db: db)
                    return try body(&reader)
                }
            }
        }
    }

    /// Runs one statement with `binds` on the caller's thread, handing its rows to `body`, when no
    /// other statement is using the connection; `nil` (nothing run) when one is. For short reads
    /// (a row by its key) that are cheaper than two thread switches: the caller's thread is held
    /// for as long as the statement runs. Same statement cache and failures as
    /// ``read(_:_:_:)``.
    func readIfFree<T: Sendable>(_ sql: String, _ binds: [SQLiteData], _ body: (inout RowReader) throws -> T) throws -> T? {
        let value: T? = try use.withLockIfAvailable { closed in
            try self.withStatement(sql, binds, closed: closed) { statement, db in
                var reader = RowReader(statement: statement, db: db)
                return try body(&reader)
            }
        }
        if value != nil { runsInPlace.add(1, ordering: .relaxed) }
        return value
    }

    /// Takes (or prepares) the statement for `sql`, binds `binds`, runs `body` with it, and puts it
    /// back reset. Only while holding ``use``, whose value is `closed`.
    private func withStatement<T>(
        _ sql: String, _ binds: [SQLiteData], closed: Bool, _ body: (OpaquePointer, OpaquePointer) throws -> T
    ) throws -> T {
        // Queries queued before the thread stops can run after the close: they must not touch the
        // closed handle (SQLite frees it, and using it crashed the process).
        if closed { throw SQLiteFailure(code: SQLITE_MISUSE, message: SQLiteFailure.closedMessage) }
        let db = raw.pointer
        let statement: OpaquePointer
        if let kept = cache.withLock({ $0.take(sql) }) {
            statement = kept.pointer
        } else {
            var prepared: OpaquePointer?
            let status = sqlite_nio_sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil)
            guard status == SQLITE_OK, let prepared else {
                throw SQLiteFailure(code: status, message: Self.message(db))
            }
            statement = prepared
        }
        defer {
            sqlite_nio_sqlite3_reset(statement)
            // Not sqlite3_clear_bindings: it marks any statement whose plan looked at a bound value
            // (every `column = ?`, as SQLite checks whether the value is 0 or 1) to be prepared
            // again on its next run, which made every kept statement re-prepare. Each run binds
            // every parameter anew; only large values are released here, so kept statements do
            // not hold on to request bodies.
            Self.releaseLargeBindings(binds, of: statement)
            let reprepared = Int(sqlite_nio_sqlite3_stmt_status(statement, SQLITE_STMTSTATUS_REPREPARE, 1))
            let evicted = cache.withLock { cache in
                if reprepared > 0 { cache.noteReprepared(reprepared) }
                return cache.put(sql, RawPointer(statement))
            }
            if let evicted { sqlite_nio_sqlite3_finalize(evicted.pointer) }
        }
        let parameters = Int(sqlite_nio_sqlite3_bind_parameter_count(statement))
        guard binds.count == parameters else {
            throw SQLiteFailure(
                code: SQLITE_RANGE, message: "the statement has \(parameters) parameters but \(binds.count) values were given")
        }
        try bind(binds, to: statement, db: db)
        return try body(statement, db)
    }

    /// Binds NULL in place of text and blobs over 1 KiB, so the statement does not keep them.
    private static func releaseLargeBindings(_ binds: [SQLiteData], of statement: OpaquePointer) {
        for (offset, value) in binds.enumerated() {
            let large: Bool
            switch value {
            case .text(let text): large = text.utf8.count > 1024
            case .blob(let buffer): large = buffer.readableBytes > 1024
            default: large = false
            }
            if large { sqlite_nio_sqlite3_bind_null(statement, Int32(offset + 1)) }
        }
    }

    private func bind(_ binds: [SQLiteData], to statement: OpaquePointer, db: OpaquePointer) throws {
        for (offset, value) in binds.enumerated() {
            let index = Int32(offset + 1)
            let status: Int32
            switch value {
            case .integer(let number): status = sqlite_nio_sqlite3_bind_int64(statement, index, Int64(number))
            case .float(let number): status = sqlite_nio_sqlite3_bind_double(statement, index, number)
            case .null: status = sqlite_nio_sqlite3_bind_null(statement, index)
            case .text(let text):
                var text = text
                status = text.withUTF8 { bytes in
                    sqlite_nio_sqlite3_bind_text64(
                        statement, index, bytes.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) },
                        UInt64(bytes.count), Self.transient, UInt8(SQLITE_UTF8))
                }
            case .blob(let buffer):
                status = buffer.withUnsafeReadableBytes { bytes in
                    sqlite_nio_sqlite3_bind_blob64(statement, index, bytes.baseAddress, UInt64(bytes.count), Self.transient)
                }
            }
            guard status == SQLITE_OK else { throw SQLiteFailure(code: status, message: Self.message(db)) }
        }
    }

    private static func value(_ statement: OpaquePointer, _ index: Int32) -> SQLiteData {
        switch sqlite_nio_sqlite3_column_type(statement, index) {
        case SQLITE_INTEGER: return .integer(Int(sqlite_nio_sqlite3_column_int64(statement, index)))
        case SQLITE_FLOAT: return .float(sqlite_nio_sqlite3_column_double(statement, index))
        case SQLITE_TEXT:
            // The text first, then its length (the order SQLite documents for a conversion-free read).
            guard let text = sqlite_nio_sqlite3_column_text(statement, index) else { return .text("") }
            let length = Int(sqlite_nio_sqlite3_column_bytes(statement, index))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self))
        case SQLITE_BLOB:
            let length = Int(sqlite_nio_sqlite3_column_bytes(statement, index))
            var buffer = ByteBufferAllocator().buffer(capacity: length)
            if let bytes = sqlite_nio_sqlite3_column_blob(statement, index) {
                buffer.writeBytes(UnsafeRawBufferPointer(start: bytes, count: length))
            }
            return .blob(buffer)
        default: return .null
        }
    }

    fileprivate static func message(_ db: OpaquePointer) -> String {
        sqlite_nio_sqlite3_errmsg(db).map { String(cString: $0) } ?? "unknown error"
    }

    /// SQLite copies bound text and blobs before the bind call returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
}

/// What the write-ahead log hook of one connection (``SQLiteHandle``) notes, read by any thread.
final class WALCheckpoints: Sendable {
    /// Pages in the log after the connection's last commit (0 once a checkpoint is started).
    let frames = Atomic<Int>(0)
    /// Whether a checkpoint is queued or running on the connection's thread.
    let running = Atomic<Bool>(false)
    /// Checkpoints run so far.
    let checkpoints = Atomic<Int>(0)
}

/// An `sqlite3` or `sqlite3_stmt` pointer handed between threads. Sendable because a connection
/// and its statements are only used while holding the connection's lock (`SQLiteHandle.use`), and a
/// statement by one query at a time.
struct RawPointer: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
}

/// A failed SQLite call: its (extended) result code and SQLite's message.
struct SQLiteFailure: Error, CustomStringConvertible {
    let code: Int32
    let message: String

    /// Another connection holds the lock this statement needs (`SQLITE_BUSY` and its extended codes).
    var isBusy: Bool { code & 0xff == SQLITE_BUSY }
    /// The connection was closed before the statement ran (the storage is shutting down).
    var isClosed: Bool { code == SQLITE_MISUSE && message == Self.closedMessage }
    static let closedMessage = "the connection is closed (the storage is shutting down)"
    /// A `UNIQUE` constraint failed.
    var isUniqueConstraint: Bool { code == SQLITE_CONSTRAINT | (8 << 8) }

    var description: String { "SQLite error \(code): \(message)" }
}

/// One row of a statement's result: the statement's column names (shared by its rows) and this
/// row's values. The same reading API as sqlite-nio's `SQLiteRow`.
struct StatementRow: Sendable {
    final class Names: Sendable {
        let names: [String]
        init(_ names: [String]) { self.names = names }
    }

    let names: Names
    let values: [SQLiteData]

    /// The value of the column named `name`, or `nil` when the statement has no such column.
    func column(_ name: String) -> SQLiteData? {
        guard let index = names.names.firstIndex(of: name) else { return nil }
        return values[index]
    }
}

/// A running statement's rows, read in place on the connection's thread (``SQLiteHandle/read(_:_:_:)``).
/// Column values are valid until the next ``next()``.
struct RowReader {
    fileprivate let statement: OpaquePointer
    fileprivate let db: OpaquePointer

    /// Steps to the next row: `false` when there are no more.
    mutating func next() throws -> Bool {
        let status = sqlite_nio_sqlite3_step(statement)
        if status == SQLITE_DONE { return false }
        guard status == SQLITE_ROW else { throw SQLiteFailure(code: status, message: SQLiteHandle.message(db)) }
        return true
    }

    /// Column `index` as an integer (0 for NULL).
    func integer(_ index: Int32) -> Int64 {
        sqlite_nio_sqlite3_column_int64(statement, index)
    }

    /// Whether column `index` is NULL.
    func isNull(_ index: Int32) -> Bool {
        sqlite_nio_sqlite3_column_type(statement, index) == SQLITE_NULL
    }

    /// Column `index`'s text as UTF-8 bytes, without copying them (empty for NULL).
    func withText<R>(_ index: Int32, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        // The text first, then its length (the order SQLite documents for a conversion-free read).
        guard let text = sqlite_nio_sqlite3_column_text(statement, index) else {
            return try body(UnsafeBufferPointer(start: nil, count: 0))
        }
        let length = Int(sqlite_nio_sqlite3_column_bytes(statement, index))
        return try body(UnsafeBufferPointer(start: text, count: length))
    }

    /// Column `index` as a `String` (empty for NULL).
    func text(_ index: Int32) -> String {
        withText(index) { String(decoding: $0, as: UTF8.self) }
    }
}
