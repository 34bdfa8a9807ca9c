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

    /// An `int8` in text form: an optional `-` and at most 19 digits.
    mutating func int64() throws -> Int64 {
        guard let cell = try nextCell(), !cell.isEmpty, cell.count <= 20 else {
            throw PostgresWireError.protocolViolation("an integer column is empty, NULL or too long")
        }
        let negative = cell[0] == UInt8(ascii: "-")
        guard !negative || cell.count > 1 else {
            throw PostgresWireError.protocolViolation("an integer column holds no digit")
        }
        var value: Int64 = 0
        for byte in cell[(negative ? 1 : 0)...] {
            let digit = byte &- UInt8(ascii: "0")
            guard digit < 10 else {
                throw PostgresWireError.protocolViolation("an integer column holds a byte that is not a digit")
            }
            let (shifted, overflow) = value.multipliedReportingOverflow(by: 10)
            let (next, overflowAgain) =
                negative ? shifted.subtractingReportingOverflow(Int64(digit)) : shifted.addingReportingOverflow(Int64(digit))
            guard !overflow, !overflowAgain else {
                throw PostgresWireError.protocolViolation("an integer column overflows 64 bits")
            }
            value = next
        }
        return value
    }

    /// A `bool` in text form: `t` or `f`.
    mutating func bool() throws -> Bool {
        guard let cell = try nextCell(), cell.count == 1, cell[0] == UInt8(ascii: "t") || cell[0] == UInt8(ascii: "f") else {
            throw PostgresWireError.protocolViolation("a boolean column is not t or f")
        }
        return cell[0] == UInt8(ascii: "t")
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

    /// Parse of a named statement, parameter types left to the server.
    static func parse(name: String, sql: String, into buffer: inout ByteBuffer) {
        message(UInt8(ascii: "P"), into: &buffer) { buffer in
            buffer.writeNullTerminatedString(name)
            buffer.writeNullTerminatedString(sql)
            buffer.writeInteger(Int16(0))
        }
    }

    /// Bind of the unnamed portal to a named statement, every parameter and result in text form,
    /// then Execute (all rows) and Sync: one round trip (with the statement's Parse before them on
    /// its first use on a connection).
    static func bindExecuteSync(statement: String, parameters: [PostgresWireValue], into buffer: inout ByteBuffer) {
        message(UInt8(ascii: "B"), into: &buffer) { buffer in
            buffer.writeInteger(UInt8(0))
            buffer.writeNullTerminatedString(statement)
            buffer.writeInteger(Int16(0))
            buffer.writeInteger(Int16(parameters.count))
            for parameter in parameters {
                switch parameter {
                case .text(let text):
                    let start = buffer.writerIndex
                    buffer.writeInteger(Int32(0))
                    let written = buffer.writeString(text)
                    buffer.setInteger(Int32(written), at: start)
                case .integer(let value):
                    let start = buffer.writerIndex
                    buffer.writeInteger(Int32(0))
                    let written = writeDecimal(value, into: &buffer)
                    buffer.setInteger(Int32(written), at: start)
                case .null:
                    buffer.writeInteger(Int32(-1))
                }
            }
            buffer.writeInteger(Int16(0))
        }
        message(UInt8(ascii: "E"), into: &buffer) { buffer in
            buffer.writeInteger(UInt8(0))
            buffer.writeInteger(Int32(0))
        }
        sync(into: &buffer)
    }

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

    static func sync(into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(ascii: "S"))
        buffer.writeInteger(Int32(4))
    }

    static func terminate(into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(ascii: "X"))
        buffer.writeInteger(Int32(4))
    }
}
