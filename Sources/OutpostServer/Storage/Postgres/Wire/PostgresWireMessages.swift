import NIOCore

/// Why a lean PostgreSQL read failed (``PostgresWireConnection``).
enum PostgresWireError: Error, CustomStringConvertible {
    /// The connection could not be opened, broke, or was closed: nothing is known about the query.
    case connectionLost(String)
    /// The backend sent bytes that are not a valid message here; the connection is closed.
    case protocolViolation(String)
    /// The backend answered with an ErrorResponse (SQLSTATE and message, never a bound value).
    case server(sqlState: String, severity: String, message: String)
    /// The server asks for something the lean connection does not do (TLS, an authentication
    /// method); the storage keeps postgres-nio for its reads.
    case unsupported(String)

    /// Whether the server does not know the prepared statement (`26000`), so it must be prepared again.
    var isMissingStatement: Bool {
        if case .server(let state, _, _) = self { return state == "26000" }
        return false
    }

    var description: String {
        switch self {
        case .connectionLost(let reason): "connection lost: \(reason)"
        case .protocolViolation(let reason): "protocol violation: \(reason)"
        case .server(let state, let severity, let message): "\(severity): \(message) (SQLSTATE \(state))"
        case .unsupported(let reason): reason
        }
    }

    /// Whether the connection cannot be used after this error (a FATAL or PANIC ErrorResponse,
    /// such as `pg_terminate_backend`'s 57P01, ends the session).
    var endsConnection: Bool {
        switch self {
        case .server(_, let severity, _): severity == "FATAL" || severity == "PANIC"
        default: true
        }
    }
}

/// A value bound to a lean query, sent in text form.
enum PostgresWireValue: Equatable {
    case text(String)
    /// Written in decimal straight into the message.
    case integer(Int64)
    case null

    init(_ text: String?) {
        self = text.map(Self.text) ?? .null
    }
}

/// A statement a lean connection prepares, with how its values travel: the parameters declared
/// `int8` go in binary (8 bytes, big-endian), the others in text with their types left to
/// PostgreSQL; each result column in text or binary (`int8` as 8 bytes, `bool` as 1), as its
/// reader (``PostgresWireRow``) expects. Binary integers spare both sides a decimal conversion.
struct PostgresWireStatement: Sendable {
    static let int8 = Int32(20)

    var name: String
    var sql: String
    /// Per parameter: ``int8``, or 0 (text, type inferred).
    var parameterTypes: [Int32]
    /// Per result column: whether it comes in binary.
    var binaryResults: [Bool]
    /// The Bind message's bytes before the parameters' values (portal, statement, format codes,
    /// parameter count) and after them (result format codes): the same for every query.
    let bindHead: [UInt8]
    let bindTail: [UInt8]

    init(name: String, sql: String, parameterTypes: [Int32], binaryResults: [Bool]) {
        self.name = name
        self.sql = sql
        self.parameterTypes = parameterTypes
        self.binaryResults = binaryResults
        var head = ByteBuffer()
        head.writeInteger(UInt8(0))  // the unnamed portal
        head.writeNullTerminatedString(name)
        head.writeInteger(Int16(parameterTypes.count))
        for type in parameterTypes { head.writeInteger(Int16(type == Self.int8 ? 1 : 0)) }
        head.writeInteger(Int16(parameterTypes.count))
        bindHead = Array(head.readableBytesView)
        var tail = ByteBuffer()
        tail.writeInteger(Int16(binaryResults.count))
        for binary in binaryResults { tail.writeInteger(Int16(binary ? 1 : 0)) }
        bindTail = Array(tail.readableBytesView)
    }
}

/// One message from the backend (PostgreSQL protocol 3.0), parsed from its bytes after the type
/// byte and length. Only what the lean connection uses is kept; anything else is `.other`.
enum PostgresBackendMessage {
    /// `R`: the authentication request code and its data (salt, SASL mechanisms or data).
    case authentication(code: Int32, data: ByteBuffer)
    /// `K`, `S`, `N`, `A`, `2`, `3`, `n`, `t`, `T`, `I`, `s`: nothing for the lean reads.
    case other
    /// `1`: a statement was prepared.
    case parseComplete
    /// `D`: the row's payload (column count and cells), read by ``PostgresWireRow``.
    case dataRow(ByteBuffer)
    /// `C`
    case commandComplete
    /// `Z`
    case readyForQuery
    /// `E`
    case error(PostgresWireError)

    /// The largest message accepted: a row of records with bodies up to 64 MiB.
    static let maximumLength = 64 << 20

    /// The type and length (the length field's value: the body's size plus 4) of the message at
    /// the reader index of `buffer`, or `nil` when it has not arrived in full yet.
    ///
    /// - Throws: ``PostgresWireError/protocolViolation(_:)`` for a length under 4 or over
    ///   ``maximumLength``, as soon as the length has arrived.
    static func completeHeader(_ buffer: ByteBuffer) throws -> (type: UInt8, length: Int)? {
        guard buffer.readableBytes >= 5, let type = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self),
            let length = buffer.getInteger(at: buffer.readerIndex + 1, as: Int32.self)
        else { return nil }
        guard length >= 4, Int(length) <= maximumLength else {
            throw PostgresWireError.protocolViolation(
                "a backend message of type \(Self.name(type)) claims \(length) bytes (accepted: 4 to \(maximumLength))")
        }
        guard buffer.readableBytes >= 1 + Int(length) else { return nil }
        return (type, Int(length))
    }

    /// Parses the next complete message at the reader index of `buffer`, or returns `nil` (and
    /// reads nothing) when it has not arrived in full yet.
    ///
    /// - Throws: as ``completeHeader(_:)``, and for a message whose fields run past its length.
    static func next(from buffer: inout ByteBuffer) throws -> PostgresBackendMessage? {
        guard let (type, length) = try completeHeader(buffer) else { return nil }
        buffer.moveReaderIndex(forwardBy: 5)
        guard var body = buffer.readSlice(length: length - 4) else { return nil }
        switch type {
        case UInt8(ascii: "D"):
            return .dataRow(body)
        case UInt8(ascii: "C"):
            return .commandComplete
        case UInt8(ascii: "1"):
            return .parseComplete
        case UInt8(ascii: "Z"):
            guard body.readableBytes == 1 else { throw PostgresWireError.protocolViolation("ReadyForQuery is not 1 byte") }
            return .readyForQuery
        case UInt8(ascii: "R"):
            guard let code = body.readInteger(as: Int32.self) else {
                throw PostgresWireError.protocolViolation("an authentication request without its code")
            }
            return .authentication(code: code, data: body)
        case UInt8(ascii: "E"):
            return .error(try errorFields(&body))
        default:
            return .other
        }
    }

    /// The fields of an ErrorResponse: a type byte and a NUL-terminated string each, then a NUL.
    static func errorFields(_ body: inout ByteBuffer) throws -> PostgresWireError {
        var state = "?????"
        var severity = "ERROR"
        var message = "(no message)"
        while let field = body.readInteger(as: UInt8.self), field != 0 {
            guard let value = body.readNullTerminatedString() else {
                throw PostgresWireError.protocolViolation("an ErrorResponse field is not NUL-terminated")
            }
            switch field {
            case UInt8(ascii: "C"): state = value
            case UInt8(ascii: "V"): severity = value
            case UInt8(ascii: "M"): message = value
            default: break
            }
        }
        return .server(sqlState: state, severity: severity, message: message)
    }

    static func name(_ type: UInt8) -> String {
        (32..<127).contains(type) ? "'\(Character(UnicodeScalar(type)))'" : "0x\(String(type, radix: 16))"
    }
}

/// The cells of one DataRow, read in column order as text (every lean statement asks for text
/// results), each length checked against what the row holds. Reads the row's bytes in place:
/// a cell is a view of them, valid inside ``reading(_:columns:_:)`` only.
struct PostgresWireRow {
    let bytes: UnsafeBufferPointer<UInt8>
    /// Where the next cell's length is.
    var offset = 2
    var remaining: Int

    /// - Throws: ``PostgresWireError/protocolViolation(_:)`` when the row does not have `columns`
    ///   columns.
    init(_ bytes: UnsafeBufferPointer<UInt8>, columns: Int) throws {
        guard bytes.count >= 2, Int(Int16(bitPattern: UInt16(bytes[0]) << 8 | UInt16(bytes[1]))) == columns else {
            throw PostgresWireError.protocolViolation("a row does not have the \(columns) columns its statement selects")
        }
        self.bytes = bytes
        remaining = columns
    }

    /// `body`'s result on the row `payload` (a DataRow's payload) of `columns` columns.
    static func reading<T>(_ payload: ByteBuffer, columns: Int, _ body: (inout PostgresWireRow) throws -> T) throws -> T {
        try payload.withUnsafeReadableBytes { raw in
            var row = try PostgresWireRow(raw.assumingMemoryBound(to: UInt8.self), columns: columns)
            return try body(&row)
        }
    }

    /// The next cell's bytes, `nil` for SQL `NULL`.
    mutating func nextCell() throws -> UnsafeBufferPointer<UInt8>? {
        guard remaining > 0, bytes.count - offset >= 4 else {
            throw PostgresWireError.protocolViolation("a row ends before its last column")
        }
        var length: Int32 = 0
        for index in offset..<offset + 4 { length = length << 8 | Int32(bytes[index]) }
        offset += 4
        remaining -= 1
        if length == -1 { return nil }
        guard length >= 0, Int(length) <= bytes.count - offset else {
            throw PostgresWireError.protocolViolation("a cell of \(length) bytes runs past the end of its row")
        }
        defer { offset += Int(length) }
        return UnsafeBufferPointer(rebasing: bytes[offset..<offset + Int(length)])
    }

    /// The next cell, which must not be `NULL`.
    mutating func cell() throws -> UnsafeBufferPointer<UInt8> {
        guard let cell = try nextCell() else { throw PostgresWireError.protocolViolation("a NOT NULL column is NULL") }
        return cell
    }

    mutating func optionalString() throws -> String? {
        try nextCell().map { String(decoding: $0, as: UTF8.self) }
    }

    mutating func string() throws -> String {
        String(decoding: try cell(), as: UTF8.self)
    }

    /// An `int8` in binary form: 8 bytes, big-endian.
    mutating func int64() throws -> Int64 {
        guard let cell = try nextCell(), cell.count == 8 else {
            throw PostgresWireError.protocolViolation("an integer column is NULL or not 8 bytes")
        }
        var value: UInt64 = 0
        for byte in cell { value = value << 8 | UInt64(byte) }
        return Int64(bitPattern: value)
    }

    /// A `bool` in binary form: one byte, 1 or 0.
    mutating func bool() throws -> Bool {
        guard let cell = try nextCell(), cell.count == 1, cell[0] <= 1 else {
            throw PostgresWireError.protocolViolation("a boolean column is not one byte of 0 or 1")
        }
        return cell[0] == 1
    }
}

/// Frontend messages, written into one buffer.
enum PostgresFrontend {
    /// Writes a message of `type` whose body `body` writes, with its length filled in.
    static func message(_ type: UInt8?, into buffer: inout ByteBuffer, _ body: (inout ByteBuffer) -> Void) {
        if let type { buffer.writeInteger(type) }
        let start = buffer.writerIndex
        buffer.writeInteger(Int32(0))
        body(&buffer)
        buffer.setInteger(Int32(buffer.writerIndex - start), at: start)
    }

    /// StartupMessage (protocol 3.0) with its parameters.
    static func startup(_ parameters: [(String, String)], into buffer: inout ByteBuffer) {
        message(nil, into: &buffer) { buffer in
            buffer.writeInteger(Int32(196_608))
            for (name, value) in parameters {
                buffer.writeNullTerminatedString(name)
                buffer.writeNullTerminatedString(value)
            }
            buffer.writeInteger(UInt8(0))
        }
    }

    /// SSLRequest: the server answers one byte, `S` or `N`.
    static func sslRequest(into buffer: inout ByteBuffer) {
        buffer.writeInteger(Int32(8))
        buffer.writeInteger(Int32(80_877_103))
    }

    /// PasswordMessage (cleartext or md5) and SASLResponse share the type `p`.
    static func password(_ bytes: [UInt8], nullTerminated: Bool, into buffer: inout ByteBuffer) {
        message(UInt8(ascii: "p"), into: &buffer) { buffer in
            buffer.writeBytes(bytes)
            if nullTerminated { buffer.writeInteger(UInt8(0)) }
        }
    }

    static func saslInitialResponse(mechanism: String, _ bytes: [UInt8], into buffer: inout ByteBuffer) {
        message(UInt8(ascii: "p"), into: &buffer) { buffer in
            buffer.writeNullTerminatedString(mechanism)
            buffer.writeInteger(Int32(bytes.count))
            buffer.writeBytes(bytes)
        }
    }

    /// Parse of a named statement with its parameters' types (0: left to the server).
    static func parse(_ statement: PostgresWireStatement, into buffer: inout ByteBuffer) {
        message(UInt8(ascii: "P"), into: &buffer) { buffer in
            buffer.writeNullTerminatedString(statement.name)
            buffer.writeNullTerminatedString(statement.sql)
            buffer.writeInteger(Int16(statement.parameterTypes.count))
            for type in statement.parameterTypes { buffer.writeInteger(type) }
        }
    }

    /// Bind of the unnamed portal to a named statement (integers in binary where the statement
    /// declares `int8`, other values in text; results as the statement says), then Execute (all
    /// rows) and Sync: one round trip (with the statement's Parse before them on its first use on
    /// a connection).
    static func bindExecuteSync(
        _ statement: PostgresWireStatement, parameters: [PostgresWireValue], into buffer: inout ByteBuffer
    ) {
        precondition(parameters.count == statement.parameterTypes.count, "a lean query binds one value per parameter")
        buffer.writeInteger(UInt8(ascii: "B"))
        let start = buffer.writerIndex
        buffer.writeInteger(Int32(0))
        buffer.writeBytes(statement.bindHead)
        for (parameter, type) in zip(parameters, statement.parameterTypes) {
            switch parameter {
            case .integer(let value) where type == PostgresWireStatement.int8:
                buffer.writeInteger(Int32(8))
                buffer.writeInteger(value)
            case .integer(let value):
                let length = buffer.writerIndex
                buffer.writeInteger(Int32(0))
                buffer.setInteger(Int32(writeDecimal(value, into: &buffer)), at: length)
            case .text(let text):
                let length = buffer.writerIndex
                buffer.writeInteger(Int32(0))
                buffer.setInteger(Int32(buffer.writeString(text)), at: length)
            case .null:
                buffer.writeInteger(Int32(-1))
            }
        }
        buffer.writeBytes(statement.bindTail)
        buffer.setInteger(Int32(buffer.writerIndex - start), at: start)
        buffer.writeBytes(executeAndSync)
    }

    /// Execute of the unnamed portal (all rows), then Sync.
    static let executeAndSync: [UInt8] = [UInt8(ascii: "E"), 0, 0, 0, 9, 0, 0, 0, 0, 0, UInt8(ascii: "S"), 0, 0, 0, 4]

    /// Writes `value` in decimal (as PostgreSQL's `int8` input reads it) without making a
    /// string of it; returns the number of bytes written.
    @discardableResult
    static func writeDecimal(_ value: Int64, into buffer: inout ByteBuffer) -> Int {
        var magnitude = value.magnitude
        var digits = 1
        var rest = magnitude / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        let sign = value < 0 ? 1 : 0
        if sign == 1 { buffer.writeInteger(UInt8(ascii: "-")) }
        let start = buffer.writerIndex
        buffer.writeRepeatingByte(UInt8(ascii: "0"), count: digits)
        for index in stride(from: start + digits - 1, through: start, by: -1) {
            buffer.setInteger(UInt8(ascii: "0") + UInt8(magnitude % 10), at: index)
            magnitude /= 10
        }
        return sign + digits
    }

    static func terminate(into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(ascii: "X"))
        buffer.writeInteger(Int32(4))
    }
}
