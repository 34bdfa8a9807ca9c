import Foundation
import Logging
import NIOCore
import NIOEmbedded
import OutpostCore
import OutpostTestSupport
import PostgresNIO
import Testing

@testable import OutpostServer

/// Backend messages as a hostile or broken server could send them.
enum BackendBytes {
    static func message(_ type: Character, _ body: [UInt8]) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeInteger(type.asciiValue ?? 0)
        buffer.writeInteger(Int32(body.count + 4))
        buffer.writeBytes(body)
        return buffer
    }

    static func error(severity: String, state: String, message: String) -> ByteBuffer {
        var body: [UInt8] = []
        for (field, value) in [("S", severity), ("V", severity), ("C", state), ("M", message)] {
            body += Array(field.utf8) + Array(value.utf8) + [0]
        }
        return Self.message("E", body + [0])
    }

    static var authenticationOK: ByteBuffer { message("R", [0, 0, 0, 0]) }
    static var readyForQuery: ByteBuffer { message("Z", Array("I".utf8)) }

    /// A DataRow of text cells (`nil` for NULL).
    static func row(_ cells: [String?]) -> ByteBuffer {
        row(bytes: cells.map { $0.map { Array($0.utf8) } })
    }

    /// A DataRow of cells given as bytes (`nil` for NULL).
    static func row(bytes cells: [[UInt8]?]) -> ByteBuffer {
        var body = ByteBuffer()
        body.writeInteger(Int16(cells.count))
        for cell in cells {
            if let cell {
                body.writeInteger(Int32(cell.count))
                body.writeBytes(cell)
            } else {
                body.writeInteger(Int32(-1))
            }
        }
        return message("D", Array(body.readableBytesView))
    }

    /// An `int8` cell in binary form.
    static func int8(_ value: Int64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) }
    }
}

/// The lean connection's parser of backend messages and its authentication, without a database.
@Suite("PostgreSQL lean reads: wire parser and authentication")
struct PostgresWireParserTests {
    @Test("A message that has not arrived in full is not read; a complete one is")
    func partialMessages() throws {
        let whole = BackendBytes.row(bytes: [BackendBytes.int8(1), Array("two".utf8), nil])
        for cut in [0, 1, 4, 5, whole.readableBytes - 1] {
            var partial = whole.getSlice(at: 0, length: cut) ?? ByteBuffer()
            #expect(try PostgresBackendMessage.next(from: &partial) == nil)
            #expect(partial.readableBytes == cut, "nothing is consumed from an incomplete message")
        }
        var complete = whole
        guard case .dataRow(let payload) = try PostgresBackendMessage.next(from: &complete) else {
            Issue.record("a complete DataRow is a row")
            return
        }
        try PostgresWireRow.reading(payload, columns: 3) { (row: inout PostgresWireRow) throws in
            #expect(try row.int64() == 1)
            #expect(try row.string() == "two")
            #expect(try row.optionalString() == nil)
        }
        #expect(complete.readableBytes == 0)
    }

    @Test("A length under 4 or over the bound is refused at once, before its bytes arrive")
    func lengthBounds() {
        for length in [Int32(3), Int32(-1), Int32(PostgresBackendMessage.maximumLength + 1), Int32.max] {
            var buffer = ByteBuffer()
            buffer.writeInteger(UInt8(ascii: "D"))
            buffer.writeInteger(length)
            #expect {
                try PostgresBackendMessage.next(from: &buffer)
            } throws: { error in
                "\(error)".contains("claims \(length) bytes") && "\(error)".contains("accepted: 4 to")
            }
        }
    }

    @Test("Rows with the wrong column count, cells past their end, bad integers or booleans are clear errors")
    func hostileRows() throws {
        func payload(_ buffer: ByteBuffer) throws -> ByteBuffer {
            var buffer = buffer
            guard case .dataRow(let payload) = try PostgresBackendMessage.next(from: &buffer) else {
                throw PostgresWireError.protocolViolation("not a row")
            }
            return payload
        }
        #expect(throws: PostgresWireError.self) {
            try PostgresWireRow.reading(try payload(BackendBytes.row(["1"])), columns: 9) { _ in }
        }
        // A cell that claims more bytes than the row holds, and a row cut inside a cell's length.
        var lying = ByteBuffer()
        lying.writeInteger(Int16(1))
        lying.writeInteger(Int32(1_000_000))
        lying.writeString("short")
        let lyingRow = try payload(BackendBytes.message("D", Array(lying.readableBytesView)))
        #expect { try PostgresWireRow.reading(lyingRow, columns: 1) { try $0.nextCell() } } throws: {
            "\($0)".contains("runs past the end of its row")
        }
        let cut = try payload(BackendBytes.message("D", [0, 1, 0, 0]))
        #expect { try PostgresWireRow.reading(cut, columns: 1) { try $0.nextCell() } } throws: {
            "\($0)".contains("ends before its last column")
        }
        // Integers and booleans come in binary: 8 bytes, big-endian; one byte, 0 or 1.
        for bad: [UInt8] in [[], [1], Array(repeating: 0, count: 7), Array(repeating: 0, count: 9), Array("12".utf8)] {
            #expect {
                try PostgresWireRow.reading(try payload(BackendBytes.row(bytes: [bad])), columns: 1) { try $0.int64() }
            } throws: {
                "\($0)".contains("not 8 bytes")
            }
        }
        for value: Int64 in [.min, .max, 0, -7, 1, 256, -256, 1_795_500_000_123, .min + 1] {
            #expect(
                try PostgresWireRow.reading(try payload(BackendBytes.row(bytes: [BackendBytes.int8(value)])), columns: 1) {
                    try $0.int64()
                } == value)
        }
        for bad: [UInt8] in [Array("t".utf8), [2], [], [0, 1]] {
            #expect(throws: PostgresWireError.self, "\(bad)") {
                try PostgresWireRow.reading(try payload(BackendBytes.row(bytes: [bad])), columns: 1) { try $0.bool() }
            }
        }
        #expect(
            try PostgresWireRow.reading(try payload(BackendBytes.row(bytes: [[1], [0]])), columns: 2) {
                [try $0.bool(), try $0.bool()]
            } == [true, false])
        #expect { try PostgresWireRow.reading(try payload(BackendBytes.row([nil])), columns: 1) { try $0.int64() } } throws: {
            "\($0)".contains("NULL")
        }
        #expect { try PostgresWireRow.reading(try payload(BackendBytes.row([nil])), columns: 1) { try $0.string() } } throws: {
            "\($0)".contains("NOT NULL column is NULL")
        }
        try PostgresWireRow.reading(try payload(BackendBytes.row(["a"])), columns: 1) { (short: inout PostgresWireRow) throws in
            _ = try short.string()
            #expect { try short.string() } throws: { "\($0)".contains("ends before its last column") }
        }
        #expect(throws: ServerError.self) { try PostgresWireReads.record(from: try payload(BackendBytes.row(["1", "t"]))) }
    }

    @Test("An ErrorResponse gives SQLSTATE, severity and message; an unterminated field is refused")
    func errorResponses() throws {
        var buffer = BackendBytes.error(severity: "FATAL", state: "57P01", message: "terminating connection")
        guard case .error(let error) = try PostgresBackendMessage.next(from: &buffer) else {
            Issue.record("an ErrorResponse is an error")
            return
        }
        #expect("\(error)" == "FATAL: terminating connection (SQLSTATE 57P01)")
        #expect(error.endsConnection)
        var plain = BackendBytes.error(severity: "ERROR", state: "55P03", message: "lock timeout")
        guard case .error(let busy) = try PostgresBackendMessage.next(from: &plain) else { return }
        #expect(!busy.endsConnection)
        var unterminated = BackendBytes.message("E", Array("Cno end".utf8))
        #expect { try PostgresBackendMessage.next(from: &unterminated) } throws: { "\($0)".contains("not NUL-terminated") }
    }

    @Test("SCRAM-SHA-256 gives RFC 7677's example proof and accepts only the server's true signature")
    func scramKnownAnswer() throws {
        var exchange = PostgresWireAuthentication.SCRAM(password: "pencil", user: "user", clientNonce: "rOprNGfwEbeRWgbNEkqO")
        #expect(String(decoding: exchange.clientFirst, as: UTF8.self) == "n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
        let serverFirst = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
        let final = try exchange.clientFinal(serverFirst: Array(serverFirst.utf8))
        #expect(
            String(decoding: final, as: UTF8.self)
                == "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
        try exchange.verify(serverFinal: Array("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=".utf8))
        #expect(throws: PostgresWireError.self) {
            try exchange.verify(serverFinal: Array("v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=".utf8))
        }
        // A nonce that does not extend ours, or an absurd iteration count, is refused.
        var other = PostgresWireAuthentication.SCRAM(password: "pencil", clientNonce: "abc")
        #expect(throws: PostgresWireError.self) { try other.clientFinal(serverFirst: Array("r=xyz123,s=QUJD,i=4096".utf8)) }
        #expect(throws: PostgresWireError.self) { try other.clientFinal(serverFirst: Array("r=abc123,s=QUJD,i=999999999".utf8)) }
    }

    @Test("The md5 answer is md5 of the hex md5 of password and user, then the salt")
    func md5KnownAnswer() {
        // Computed independently (Python's hashlib) for user outpost, password s3cret, salt 01020304.
        let answer = PostgresWireAuthentication.md5Answer(user: "outpost", password: "s3cret", salt: [1, 2, 3, 4])
        #expect(String(decoding: answer, as: UTF8.self) == "md5c0aef193af2fed0901a19e42f465bdc3")
    }

    static let settings = PostgresWireSettings(
        username: "outpost", password: "never-shown", database: "outpost", askForTLS: true,
        statements: PostgresWireReads.statements, lockTimeoutMilliseconds: 5000)

    /// A handler on a testing channel, past its start-up when `ready` is set.
    func connectedHandler(ready: Bool) async throws -> (NIOAsyncTestingChannel, PostgresWireHandler, EventLoopPromise<Void>) {
        let channel = NIOAsyncTestingChannel()
        let promise = channel.eventLoop.makePromise(of: Void.self)
        let handler = PostgresWireHandler(settings: Self.settings, ready: promise)
        try await channel.pipeline.addHandler(handler)
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 5432))
        var request = try await channel.waitForOutboundWrite(as: ByteBuffer.self)
        #expect(request.readInteger(as: Int32.self) == 8, "SSLRequest first under sslmode=prefer")
        if ready {
            try await channel.writeInbound(ByteBuffer(string: "N"))
            _ = try await channel.waitForOutboundWrite(as: ByteBuffer.self)
            try await channel.writeInbound(BackendBytes.authenticationOK)
            try await channel.writeInbound(BackendBytes.readyForQuery)
            try await promise.futureResult.get()
        }
        return (channel, handler, promise)
    }

    @Test("A hostile backend at start-up fails the start with a clear error and closes the channel")
    func hostileStartup() async throws {
        var oversized = ByteBuffer()
        oversized.writeInteger(UInt8(ascii: "R"))
        oversized.writeInteger(Int32.max)
        let cases: [(ByteBuffer, String)] = [
            (ByteBuffer(string: "S"), "offers TLS"),
            (ByteBuffer(string: "?"), "neither S nor N"),
            (oversized, "claims 2147483647 bytes"),
            (BackendBytes.message("R", [0, 0, 0, 7]), "authentication method 7"),
            (BackendBytes.row(["1"]), "before the session was ready"),
            (BackendBytes.message("R", [0, 0, 0, 10] + Array("GSSAPI".utf8) + [0, 0]), "SCRAM-SHA-256"),
        ]
        for (bytes, reason) in cases {
            let (channel, _, ready) = try await connectedHandler(ready: false)
            if bytes.getInteger(at: 0, as: UInt8.self) != UInt8(ascii: "S") && bytes.readableBytes > 1 {
                try await channel.writeInbound(ByteBuffer(string: "N"))
                _ = try await channel.waitForOutboundWrite(as: ByteBuffer.self)
            }
            try await channel.writeInbound(bytes)
            await #expect {
                try await ready.futureResult.get()
            } throws: { error in
                "\(error)".contains(reason) && !"\(error)".contains("never-shown")
            }
            #expect(!channel.isActive, "closed after \(reason)")
        }
    }

    @Test("A FATAL error during a query fails it as a lost connection and closes the channel; a plain error fails only its query")
    func fatalDuringQuery() async throws {
        let (channel, handler, _) = try await connectedHandler(ready: true)
        func query() -> Task<[ByteBuffer], any Error> {
            Task {
                try await withUnsafeThrowingContinuation { continuation in
                    channel.eventLoop.execute {
                        handler.send(
                            .init(statement: 0, parameters: [.text("t"), .text("i")], rowCapacity: 1, continuation: continuation))
                    }
                }
            }
        }
        let first = query()
        let written = try await channel.waitForOutboundWrite(as: ByteBuffer.self)
        // The statement's first use: Parse, then Bind, Execute and Sync, in one write.
        #expect(written.getInteger(at: 0, as: UInt8.self) == UInt8(ascii: "P"))
        #expect(written.readableBytesView.contains(UInt8(ascii: "B")))
        try await channel.writeInbound(BackendBytes.error(severity: "ERROR", state: "55P03", message: "lock timeout"))
        try await channel.writeInbound(BackendBytes.readyForQuery)
        await #expect { try await first.value } throws: { "\($0)".contains("55P03") }
        #expect(channel.isActive, "a plain error leaves the session usable")

        let second = query()
        _ = try await channel.waitForOutboundWrite(as: ByteBuffer.self)
        try await channel.writeInbound(BackendBytes.row(["7"]))
        try await channel.writeInbound(BackendBytes.error(severity: "FATAL", state: "57P01", message: "terminating connection"))
        await #expect { try await second.value } throws: { "\($0)".hasPrefix("connection lost") }
        #expect(!channel.isActive)
        // Later queries fail at once instead of waiting.
        await #expect { try await query().value } throws: { "\($0)".contains("not open") }
    }
}

/// The lean read connections against a real PostgreSQL: authentication, reconnection, revocation,
/// shutdown.
@Suite(
    "PostgreSQL lean reads", .closesWhatItOpens,
    .enabled(
        if: ScratchDatabase.postgresRequired || ScratchDatabase.postgresBase != nil, "\(ScratchDatabase.postgresSkipReason ?? "")"
    ))
struct PostgresWireTests {
    func withPostgres(_ body: (PostgresStorage, PostgresLocation, ScratchDatabase) async throws -> Void) async throws {
        try await StorageConformanceTests().withStorage(.postgres) { storage, database in
            let storage = try #require(storage as? PostgresStorage)
            guard case .postgres(let location) = database.location else { throw ServerError.badRequest("x", "not PostgreSQL") }
            try await body(storage, location, database)
        }
    }

    /// The process ids of the lean connections to `database`.
    func leanBackends(_ storage: PostgresStorage) async throws -> Set<Int32> {
        let rows = try await storage.rows(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'outpost-reads'")
        return Set(try rows.map { try $0["pid"].decode(Int32.self) })
    }

    @Test("Records read on the lean connections equal those read through postgres-nio, every column")
    func sameRecords() async throws {
        try await withPostgres { storage, _, _ in
            #expect(storage.reads != nil, "the test database (sslmode=prefer, no TLS, trust) takes the lean path")
            let records = [
                try await storage.createRecord(type: "items", fields: ["text": "héllo \u{1F600}", "n": -3], owner: nil),
                try await storage.createRecord(type: "items", fields: [:], owner: "u_a", isPrivate: true),
                try await storage.createRecord(
                    type: "items", fields: ["big": .string(String(repeating: "x", count: 100_000))], owner: "u_b"),
            ]
            for record in records {
                let lean = try #require(try await storage.record(type: "items", id: record.id))
                let pooled = try #require(try await storage.rows(PostgresStorage.RecordByID(type: "items", id: record.id)).first)
                #expect(lean == pooled)
                #expect(lean == record)
            }
            #expect(try await storage.record(type: "items", id: "missing") == nil)
            #expect(try await storage.record(type: "other", id: records[0].id) == nil)
        }
    }

    @Test("A revoked token is seen at once: the very next lookup reads it revoked")
    func revocationAtOnce() async throws {
        try await withPostgres { storage, _, _ in
            #expect(storage.reads != nil)
            let token = StoredToken(
                hash: "h_" + Identifiers.random(), kind: .access, userID: "u_1", clientID: "c_1", scope: "records:read",
                family: "f_" + Identifiers.random(), expiresAt: .max, state: "active")
            try await storage.saveToken(token)
            let read = try #require(try await storage.token(hash: token.hash))
            #expect(read.state == "active" && read.userID == "u_1" && read.expiresAt == .max && read.kind == .access)
            try await storage.revokeFamily(token.family)
            #expect(try await storage.token(hash: token.hash)?.state == "revoked")
            #expect(try await storage.token(hash: "h_missing") == nil)
        }
    }

    @Test("A lean connection ended by pg_terminate_backend: at most one 503 storage_unavailable, then reads succeed")
    func terminatedConnection() async throws {
        try await withPostgres { storage, _, _ in
            let record = try await storage.createRecord(type: "items", fields: ["a": 1], owner: nil)
            #expect(try await storage.record(type: "items", id: record.id) == record)
            let before = try await leanBackends(storage)
            #expect(!before.isEmpty)
            let ended = try await storage.rows(
                """
                SELECT pg_terminate_backend(pid, 10000) AS ended FROM (
                    SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'outpost-reads'
                ) AS lean
                """)
            #expect(try ended.map { try $0["ended"].decode(Bool.self) } == Array(repeating: true, count: before.count))
            var failures = 0
            var successes = 0
            while successes < 2 {
                do {
                    #expect(try await storage.record(type: "items", id: record.id) == record)
                    successes += 1
                } catch let error as ServerError {
                    failures += 1
                    #expect(error.status == .serviceUnavailable && error.code == "storage_unavailable")
                    #expect(error.headers[.retryAfter] == "1")
                    #expect(failures == 1, "only the first read after the loss fails")
                    if failures > 1 { break }
                }
            }
            let after = try await leanBackends(storage)
            #expect(!after.isEmpty && after.isDisjoint(with: before), "new sessions replaced the ended ones")
        }
    }

    @Test("The health probe is one statement on a lean connection; after the sessions end, at most one 503, then healthy")
    func healthOnLeanConnection() async throws {
        try await withPostgres { storage, _, _ in
            let reads = try #require(storage.reads)
            // Each lean session shows its last statement in pg_stat_activity.query.
            func leanQueries() async throws -> [String] {
                try await storage.rows(
                    """
                    SELECT query FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'outpost-reads'
                    """
                ).map { try $0["query"].decode(String.self) }
            }
            let probe = PostgresWireReads.statements[PostgresWireReads.schemaVersion].sql
            // Each session prepared the probe's statement at its start: make another statement its last.
            for connection in reads.lean.connections {
                _ = try await connection.query(PostgresWireReads.recordByID, [.text("items"), .text("r_none")])
            }
            #expect(!(try await leanQueries()).contains(probe))
            let version = try await storage.health()
            let schema = try await storage.schemaVersion()
            #expect(version > 0 && version == schema)
            #expect(try await leanQueries().filter { $0 == probe }.count == 1, "the probe ran on one lean connection")
            _ = try await storage.rows(
                """
                SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity
                WHERE datname = current_database() AND application_name = 'outpost-reads'
                """)
            var failures = 0
            var successes = 0
            while successes < 2, failures < 2 {
                do {
                    #expect(try await storage.health() == version)
                    successes += 1
                } catch let error as ServerError {
                    failures += 1
                    #expect(error.status == .serviceUnavailable && error.code == "storage_unavailable")
                }
            }
            #expect(failures <= 1 && successes == 2, "the probe reconnects: \(failures) failures")
        }
    }

    @Test("Closing the storage ends every lean connection")
    func shutdownClosesConnections() async throws {
        try await withPostgres { storage, _, database in
            let base = try await leanBackends(storage)
            let reads = try #require(storage.reads)
            #expect(reads.openConnections == reads.lean.connections.count && base.count == reads.lean.connections.count)
            let second = try #require(try await database.open() as? PostgresStorage)
            let secondReads = try #require(second.reads)
            #expect(secondReads.openConnections == secondReads.lean.connections.count)
            #expect(try await leanBackends(storage).count == base.count + secondReads.lean.connections.count)
            try await second.close()
            #expect(secondReads.openConnections == 0)
            await #expect(throws: ServerError.self) { try await secondReads.record(type: "items", id: "x") }
            // PostgreSQL removes a session from pg_stat_activity when its backend exits: poll until then.
            let deadline = ContinuousClock.now + .seconds(20)
            var remaining = try await leanBackends(storage)
            while remaining != base, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
                remaining = try await leanBackends(storage)
            }
            #expect(remaining == base, "the closed storage's sessions ended; the open one's remain")
        }
    }

    /// Creates a login role in `group` (a pg_hba.conf group of `.ci/postgres.sh` that requires that
    /// password method), runs `body` and drops the role.
    func withRole(
        _ storage: PostgresStorage, group: String, md5: Bool = false, _ body: (String, String) async throws -> Void
    ) async throws {
        let role = "outpost_auth_" + Identifiers.random().lowercased().filter { $0.isLetter || $0.isNumber }
        let password = "pw-" + Identifiers.random()
        try await storage.withTransaction { connection in
            if md5 { try await PostgresStorage.execute("SET LOCAL password_encryption = 'md5'", on: connection) }
            try await PostgresStorage.execute(
                PostgresQuery(unsafeSQL: "CREATE ROLE \(role) LOGIN PASSWORD '\(password)' IN ROLE \(group)"), on: connection)
            try await PostgresStorage.execute(
                PostgresQuery(unsafeSQL: "GRANT SELECT ON records, tokens TO \(role)"), on: connection)
        }
        do {
            try await body(role, password)
        } catch {
            try? await storage.execute(PostgresQuery(unsafeSQL: "REVOKE ALL ON records, tokens FROM \(role)"))
            try? await storage.execute(PostgresQuery(unsafeSQL: "DROP ROLE \(role)"))
            throw error
        }
        try await storage.execute(PostgresQuery(unsafeSQL: "REVOKE ALL ON records, tokens FROM \(role)"))
        try await storage.execute(PostgresQuery(unsafeSQL: "DROP ROLE \(role)"))
    }

    @Test(
        "SCRAM-SHA-256, md5 and cleartext passwords open lean connections; a wrong password is a clear error without it",
        arguments: [("outpost_scram", false), ("outpost_md5", true), ("outpost_password", false)])
    func passwordMethods(group: String, md5: Bool) async throws {
        try await withPostgres { storage, location, _ in
            let record = try await storage.createRecord(type: "items", fields: ["a": 1], owner: nil)
            try await withRole(storage, group: group, md5: md5) { role, password in
                let loops = EventLoopTaskExecutor.shared.map(\.eventLoop)
                var signedIn = location
                signedIn.username = role
                signedIn.password = password
                let reads = try #require(
                    try await PostgresWireReads.open(signedIn, loops: loops, busyTimeout: .seconds(5), logger: Logger(label: "t"))
                )
                let read = try await reads.record(type: "items", id: record.id)
                await reads.close()
                #expect(read == record)

                var wrong = signedIn
                wrong.password = "wrong-" + password
                await #expect {
                    _ = try await PostgresWireReads.open(
                        wrong, loops: loops, busyTimeout: .seconds(5), logger: Logger(label: "t"))
                } throws: { error in
                    "\(error)".contains("authentication failed") && !"\(error)".contains(password)
                }
                var none = signedIn
                none.password = nil
                await #expect {
                    _ = try await PostgresWireReads.open(none, loops: loops, busyTimeout: .seconds(5), logger: Logger(label: "t"))
                } throws: { error in
                    "\(error)".contains("the database URL has none")
                }
            }
        }
    }
}

extension PostgresWireTests {
    @Test("List page text written from the lean rows equals the text built from the records, every order and viewer")
    func pageTextFromRows() async throws {
        try await withPostgres { storage, _, _ in
            #expect(storage.reads != nil)
            var created: [StoredRecord] = []
            for index in 0..<7 {
                created.append(
                    try await storage.createRecord(
                        type: "notes", fields: index == 2 ? [:] : ["i": .int(index), "s": "é\"\\"],
                        owner: index.isMultiple(of: 2) ? "u_a" : nil,
                        isPrivate: index == 4))
            }
            _ = try await storage.replaceRecord(type: "notes", id: created[1].id, fields: ["i": 9], expectedVersion: 1)
            var compared = 0
            for sort in RecordSort.allCases {
                for viewer in [nil, "u_a"] {
                    let query = RecordQuery(type: "notes", sort: sort, limit: 3, viewer: viewer)
                    let first = try await storage.listRecords(query, from: nil, backwards: false)
                    let middle = first[1]
                    let time = sort.column == "created_at" ? middle.createdAt : middle.updatedAt
                    for start in [nil, RecordPosition(time: time, seq: middle.seq)] {
                        for backwards in [false, true] {
                            let lean = try await storage.listRecordText(query, from: start, backwards: backwards)
                            let built = RecordPageText(
                                rows: try await storage.listRecords(query, from: start, backwards: backwards), limit: query.limit,
                                backwards: backwards)
                            #expect(lean == built, "\(sort) \(viewer ?? "-") \(start == nil) \(backwards)")
                            #expect(!lean.text.isEmpty || start != nil)
                            compared += 1
                        }
                    }
                }
            }
            #expect(compared == RecordSort.allCases.count * 8)
            // Private records of others stay out of the text.
            let anonymous = try await storage.listRecordText(
                RecordQuery(type: "notes", sort: .created, limit: 50, viewer: nil), from: nil, backwards: false)
            #expect(anonymous.records.count == 6 && !anonymous.records.contains { $0.id == created[4].id })
        }
    }
}

extension PostgresWireTests {
    @Test(
        "A read in flight when its lean connection is ended answers 503 storage_unavailable with Retry-After; the next read succeeds"
    )
    func terminatedInFlight() async throws {
        try await withPostgres { storage, _, database in
            let record = try await storage.createRecord(type: "items", fields: ["a": 1], owner: nil)
            #expect(try await storage.record(type: "items", id: record.id) == record)
            try await database.withTableLocked("records") {
                // The read waits for the lock on its lean connection: it is in flight.
                let read = Task { try await storage.record(type: "items", id: record.id) }
                let waiting = """
                    SELECT pid FROM pg_stat_activity WHERE datname = current_database()
                    AND application_name = 'outpost-reads' AND wait_event_type = 'Lock'
                    """
                let deadline = ContinuousClock.now + .seconds(4)
                var blocked = try await storage.rows(PostgresQuery(unsafeSQL: waiting))
                while blocked.isEmpty, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(10))
                    blocked = try await storage.rows(PostgresQuery(unsafeSQL: waiting))
                }
                #expect(blocked.count == 1, "the read waits on the lock")
                let ended = try await storage.rows(
                    PostgresQuery(
                        unsafeSQL: "SELECT pg_terminate_backend(pid, 10000) AS ended FROM (\(waiting)) AS lean"))
                #expect(try ended.map { try $0["ended"].decode(Bool.self) } == [true])
                await #expect {
                    _ = try await read.value
                } throws: { error in
                    guard let error = error as? ServerError else { return false }
                    return error.status == .serviceUnavailable && error.code == "storage_unavailable"
                        && error.headers[.retryAfter] == "1"
                }
            }
            #expect(try await storage.record(type: "items", id: record.id) == record)
            #expect(try await storage.record(type: "items", id: record.id) == record)
        }
    }
}

/// The page text written from lean rows, and the values bound to lean queries, without a database.
@Suite("PostgreSQL lean reads: page text and bound values")
struct PostgresWirePageTextTests {
    /// The payload of a DataRow of ``PostgresStorage/pageTextColumns`` for `record`, or of `cells` as given.
    static func payload(_ cells: [[UInt8]?]) throws -> ByteBuffer {
        var buffer = BackendBytes.row(bytes: cells)
        guard case .dataRow(let payload) = try PostgresBackendMessage.next(from: &buffer) else {
            throw PostgresWireError.protocolViolation("not a row")
        }
        return payload
    }

    static func payload(_ record: StoredRecord) throws -> ByteBuffer {
        try payload([
            BackendBytes.int8(record.seq), Array(record.id.utf8), Array(record.body.utf8),
            BackendBytes.int8(Int64(record.version)),
            BackendBytes.int8(record.createdAt), BackendBytes.int8(record.updatedAt),
        ])
    }

    static let pageParameters: [PostgresWireValue] = [.text("notes"), .null, .integer(.min), .integer(.min), .integer(3)]

    static let records: [StoredRecord] = [
        (#"{"s":"h\u00e9llo \"quoted\" back\\slash \ud83d\ude00","n":-3}"#, 1),
        ("{}", 2),
        (#"{"text":"é 😀 中文","nested":{"a":[1,2.5,null,true]}}"#, 7),
        (#"{"tab":"\t","line":"\n","nul":"\u0000"}"#, 3),
    ].enumerated().map { offset, item in
        StoredRecord(
            type: "notes", id: "id\(offset)_Ab-9", owner: nil, body: item.0, version: item.1,
            createdAt: 1_795_500_000_000 + Int64(offset) * 1001, updatedAt: 1_795_500_000_000 + Int64(offset) * 2999,
            seq: Int64(offset) + 10, isPrivate: false)
    }

    @Test("Page text from rows with unicode, escapes and empty bodies equals the text built from the records, both directions")
    func equalsBuiltText() throws {
        let rows = try Self.records.map(Self.payload)
        for limit in 1...5 {
            for backwards in [false, true] {
                let fromRows = try PostgresWireReads.pageText(rows, limit: limit, backwards: backwards)
                let built = RecordPageText(rows: Self.records, limit: limit, backwards: backwards)
                #expect(fromRows == built, "limit \(limit), backwards \(backwards)")
                #expect(fromRows.more == (limit < Self.records.count))
                #expect(fromRows.records.count == min(limit, Self.records.count))
            }
        }
        // The text is valid JSON whose members are the records' wire members, first to last.
        let page = try PostgresWireReads.pageText(rows, limit: 4, backwards: true)
        let parsed = try JSONValue(parsing: Data("[".utf8 + page.text + "]".utf8))
        guard case .array(let items) = parsed else {
            Issue.record("the page text is a list of objects")
            return
        }
        #expect(items.count == 4)
        #expect(items.first?["id"] == .string(Self.records[3].id) && items.last?["id"] == .string(Self.records[0].id))
        #expect(items[1]["text"] == .string("é 😀 中文"))
        #expect(items[3]["s"] == .string("héllo \"quoted\" back\\slash 😀"))
        #expect(
            try PostgresWireReads.pageText([], limit: 20, backwards: false) == RecordPageText(text: [], records: [], more: false))
    }

    @Test("A page row with a NULL id or body, a missing column or a bad integer is a clear error")
    func hostilePageRows() throws {
        let good: [[UInt8]?] = [BackendBytes.int8(11), Array("abc".utf8), Array("{}".utf8)] + [1, 5, 6].map(BackendBytes.int8)
        for (column, reason) in [(1, "NULL"), (2, "NULL"), (0, "NULL"), (3, "NULL")] {
            var cells = good
            cells[column] = nil
            #expect("column \(column)") {
                try PostgresWireReads.pageText([try Self.payload(cells)], limit: 20, backwards: false)
            } throws: { "\($0)".contains(reason) }
        }
        #expect {
            try PostgresWireReads.pageText([try Self.payload(Array(good.prefix(5)))], limit: 20, backwards: false)
        } throws: {
            "\($0)".contains("6 columns")
        }
        var bad = good
        bad[4] = [5, 0, 0]
        #expect(throws: PostgresWireError.self) {
            try PostgresWireReads.pageText([try Self.payload(good), try Self.payload(bad)], limit: 20, backwards: false)
        }
        // The row past the limit only tells that more follow: it is not decoded.
        let page = try PostgresWireReads.pageText([try Self.payload(good), try Self.payload(bad)], limit: 1, backwards: false)
        #expect(page.more && page.records.map(\.id) == ["abc"])
    }

    @Test(
        "Integers are bound in binary where the statement declares int8, in decimal elsewhere; text and NULL as PostgreSQL reads them"
    )
    func boundValues() throws {
        var values: [Int64] = [0, 7, -7, 10, -10, 99, 100, .max, .min, .max - 1, .min + 1]
        var power: Int64 = 1
        for _ in 0..<18 {
            power *= 10
            values += [power, power - 1, -power, -(power - 1)]
        }
        let int8 = PostgresWireStatement.int8
        let statement = PostgresWireStatement(
            name: "s", sql: "SELECT 1", parameterTypes: Array(repeating: 0, count: values.count) + [int8, int8, 0, 0, 0, 0],
            binaryResults: [true, false])
        var buffer = ByteBuffer()
        PostgresFrontend.bindExecuteSync(
            statement,
            parameters: values.map(PostgresWireValue.integer) + [
                .integer(.min), .integer(-2), .text("é x"), .null, PostgresWireValue(nil),
            ]
                + [PostgresWireValue("t")],
            into: &buffer)
        #expect(buffer.readInteger(as: UInt8.self) == UInt8(ascii: "B"))
        let length = buffer.readInteger(as: Int32.self) ?? 0
        let message = buffer.readSlice(length: Int(length) - 4)
        var bind = try #require(message)
        #expect(bind.readInteger(as: UInt8.self) == 0, "the unnamed portal")
        #expect(bind.readNullTerminatedString() == "s")
        let count = Int16(values.count + 6)
        #expect(bind.readInteger(as: Int16.self) == count, "a format code per parameter")
        let formats = (0..<count).map { _ in bind.readInteger(as: Int16.self) ?? -1 }
        #expect(formats == Array(repeating: 0, count: values.count) + [1, 1, 0, 0, 0, 0])
        #expect(bind.readInteger(as: Int16.self) == count)
        for value in values {
            let size = bind.readInteger(as: Int32.self) ?? -1
            #expect(bind.readString(length: Int(size)) == String(value))
        }
        for value: Int64 in [.min, -2] {
            #expect(bind.readInteger(as: Int32.self) == 8)
            #expect(bind.readInteger(as: Int64.self) == value, "big-endian")
        }
        let size = bind.readInteger(as: Int32.self) ?? -1
        #expect(bind.readBytes(length: Int(size)) == Array("é x".utf8))
        #expect(bind.readInteger(as: Int32.self) == -1)
        #expect(bind.readInteger(as: Int32.self) == -1)
        #expect(bind.readInteger(as: Int32.self) == 1)
        #expect(bind.readString(length: 1) == "t")
        #expect(bind.readInteger(as: Int16.self) == 2, "a format code per result column")
        #expect(bind.readInteger(as: Int16.self) == 1)
        #expect(bind.readInteger(as: Int16.self) == 0)
        #expect(bind.readableBytes == 0)
        // Execute (all rows) and Sync follow.
        #expect(buffer.readInteger(as: UInt8.self) == UInt8(ascii: "E"))
        #expect(buffer.readInteger(as: Int32.self) == 9)
        #expect(buffer.readNullTerminatedString() == "")
        #expect(buffer.readInteger(as: Int32.self) == 0, "all rows")
        #expect(buffer.readInteger(as: UInt8.self) == UInt8(ascii: "S"))
        #expect(buffer.readInteger(as: Int32.self) == 4)
        #expect(buffer.readableBytes == 0)
    }

    @Test("Each lean statement's result formats match its columns: int8 and bool in binary, text otherwise")
    func statementFormats() {
        let statements = PostgresWireReads.statements
        #expect(statements.count == 11)
        for statement in statements {
            let columns = statement.sql.components(separatedBy: "SELECT ")[1].components(separatedBy: " FROM")[0]
                .components(separatedBy: ", ")
            #expect(columns.count == statement.binaryResults.count, "\(statement.name)")
            let integers: Set = ["seq", "version", "created_at", "updated_at", "expires_at", "private"]
            #expect(columns.map(integers.contains) == statement.binaryResults, "\(statement.name)")
            #expect(statement.parameterTypes.count == statement.sql.components(separatedBy: "$").count - 1)
        }
    }
}

extension PostgresWirePageTextTests {
    @Test(
        "A page's rows read in place as they arrive, cut anywhere between reads, give the same text; an error after rows fails the page"
    )
    func rowsCutBetweenReads() async throws {
        #expect(Self.pageParameters.count == PostgresWireReads.keysetParameters.count)
        let records = Array(Self.records.prefix(3))
        var answer = ByteBuffer()
        for record in records {
            answer.writeImmutableBuffer(BackendBytes.message("D", Array(try Self.payload(record).readableBytesView)))
        }
        answer.writeImmutableBuffer(BackendBytes.message("C", Array("SELECT 3".utf8) + [0]))
        answer.writeImmutableBuffer(BackendBytes.readyForQuery)
        let expected = RecordPageText(rows: records, limit: 2, backwards: true)
        #expect(expected.more && expected.records.count == 2)
        for cut in [1, 5, 6, 40, answer.readableBytes / 2, answer.readableBytes - 6, answer.readableBytes - 1] {
            let (channel, text, query) = try await Self.pageQuery(limit: 2, backwards: true)
            try await channel.writeInbound(answer.getSlice(at: answer.readerIndex, length: cut) ?? ByteBuffer())
            try await channel.writeInbound(
                answer.getSlice(at: answer.readerIndex + cut, length: answer.readableBytes - cut) ?? ByteBuffer())
            #expect(try await query.value.isEmpty, "the rows went to the sink")
            #expect(try text.page() == expected, "cut at \(cut)")
            #expect(channel.isActive)
        }
        // An ErrorResponse after some rows fails the query; the session stays usable.
        let (channel, _, failing) = try await Self.pageQuery(limit: 20, backwards: false)
        let firstRow = 1 + Int(answer.getInteger(at: answer.readerIndex + 1, as: Int32.self) ?? 0)
        try await channel.writeInbound(answer.getSlice(at: answer.readerIndex, length: firstRow) ?? ByteBuffer())
        try await channel.writeInbound(BackendBytes.error(severity: "ERROR", state: "57014", message: "canceled"))
        try await channel.writeInbound(BackendBytes.readyForQuery)
        await #expect { try await failing.value } throws: { "\($0)".contains("57014") }
        #expect(channel.isActive)
    }

    /// A page query with a text sink sent on a handler past its start-up; returns once it is written.
    static func pageQuery(limit: Int, backwards: Bool) async throws
        -> (NIOAsyncTestingChannel, PostgresWirePageText, Task<[ByteBuffer], any Error>)
    {
        let (channel, handler, _) = try await PostgresWireParserTests().connectedHandler(ready: true)
        let text = PostgresWirePageText(limit: limit, backwards: backwards)
        let query = Task {
            try await withUnsafeThrowingContinuation { continuation in
                channel.eventLoop.execute {
                    handler.send(
                        .init(
                            statement: PostgresWireReads.keysetTextPages, parameters: Self.pageParameters, rowCapacity: 3,
                            sink: text, continuation: continuation))
                }
            }
        }
        _ = try await channel.waitForOutboundWrite(as: ByteBuffer.self)
        return (channel, text, query)
    }
}
