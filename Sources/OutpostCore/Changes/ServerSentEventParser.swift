import Foundation

/// One event of a `text/event-stream` (Server-Sent Events, WHATWG HTML §9.2).
public struct ServerSentEvent: Sendable, Hashable {
    /// The `event:` field, `message` when the event had none.
    public var event: String
    /// The `data:` lines, joined by line feeds.
    public var data: String
    /// The stream's last event id when this event was dispatched (the `id:` of this event or an
    /// earlier one), `nil` while none was sent.
    public var id: String?

    public init(event: String = "message", data: String, id: String? = nil) {
        self.event = event
        self.data = data
        self.id = id
    }
}

/// Turns the bytes of a `text/event-stream` into ``ServerSentEvent``s, in one pass over each byte.
///
/// Lines end with CR, LF or CRLF, also when a chunk boundary falls between CR and LF. A line longer
/// than ``Limits/maxLineBytes`` or an event whose data grows beyond ``Limits/maxEventBytes`` fails
/// with ``OutpostError/Code/responseTooLarge`` instead of growing without bound, so a stream that
/// never ends a line or an event cannot exhaust memory.
public struct ServerSentEventParser: Sendable {
    /// Bounds on what one line and one event may hold.
    public struct Limits: Sendable, Hashable {
        /// The longest line, in bytes, without its line ending. Default: 4 MiB.
        public var maxLineBytes: Int
        /// The most data one event may gather, in bytes. Default: 4 MiB.
        public var maxEventBytes: Int

        public init(maxLineBytes: Int = 4 << 20, maxEventBytes: Int = 4 << 20) {
            self.maxLineBytes = max(16, maxLineBytes)
            self.maxEventBytes = max(16, maxEventBytes)
        }
    }

    public let limits: Limits
    /// The last `id:` seen, also from events without data (a bare `id:` moves it).
    public private(set) var lastEventID: String?
    /// The last valid `retry:` (milliseconds) the server asked for.
    public private(set) var retry: Int?

    private var line: [UInt8] = []
    private var data: [UInt8] = []
    private var hasData = false
    private var eventType = ""
    private var idBuffer: String?
    private var afterCR = false
    private var atStart = true

    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Feeds the next bytes of the stream and returns the events they complete.
    ///
    /// - Throws: ``OutpostError`` (``OutpostError/Code/responseTooLarge``) when a line or an event
    ///   exceeds ``limits``; the parser should not be used afterwards.
    public mutating func parse<Bytes: Sequence>(_ bytes: Bytes) throws -> [ServerSentEvent] where Bytes.Element == UInt8 {
        var events: [ServerSentEvent] = []
        for byte in bytes {
            switch byte {
            case 0x0D:
                afterCR = true
                if let event = try endLine() { events.append(event) }
            case 0x0A:
                if afterCR {
                    afterCR = false
                    continue
                }
                if let event = try endLine() { events.append(event) }
            default:
                afterCR = false
                guard line.count < limits.maxLineBytes else {
                    throw OutpostError(
                        .responseTooLarge, "The event stream sent a line longer than \(limits.maxLineBytes) bytes",
                        suggestion:
                            "The server is not sending Server-Sent Events as expected; check the URL, or raise the parser's maxLineBytes if its events are that large"
                    )
                }
                line.append(byte)
            }
        }
        return events
    }

    private mutating func endLine() throws -> ServerSentEvent? {
        defer { line.removeAll(keepingCapacity: line.count <= 4096) }
        if atStart {
            // One byte order mark at the very start of the stream is dropped.
            atStart = false
            if line.starts(with: [0xEF, 0xBB, 0xBF]) { line.removeFirst(3) }
        }
        guard let first = line.first else { return dispatch() }
        if first == UInt8(ascii: ":") { return nil }  // a comment (heartbeat)
        let colon = line.firstIndex(of: UInt8(ascii: ":")) ?? line.endIndex
        let name = line[..<colon]
        var valueStart = colon == line.endIndex ? colon : line.index(after: colon)
        if valueStart < line.endIndex, line[valueStart] == UInt8(ascii: " ") { valueStart = line.index(after: valueStart) }
        let value = line[valueStart...]
        switch String(decoding: name, as: UTF8.self) {
        case "data":
            guard data.count + value.count + 1 <= limits.maxEventBytes else {
                throw OutpostError(
                    .responseTooLarge, "An event of the event stream holds more than \(limits.maxEventBytes) bytes of data",
                    suggestion:
                        "The server never ends its event (a blank line); check the URL, or raise the parser's maxEventBytes if its events are that large"
                )
            }
            if hasData { data.append(0x0A) }
            data.append(contentsOf: value)
            hasData = true
        case "event":
            eventType = String(decoding: value, as: UTF8.self)
        case "id":
            if !value.contains(0) { idBuffer = String(decoding: value, as: UTF8.self) }
        case "retry":
            if !value.isEmpty, value.count <= 9, value.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
                retry = Int(String(decoding: value, as: UTF8.self))
            }
        default:
            break  // unknown fields are ignored
        }
        return nil
    }

    private mutating func dispatch() -> ServerSentEvent? {
        lastEventID = idBuffer
        defer {
            data.removeAll(keepingCapacity: data.count <= 4096)
            hasData = false
            eventType = ""
        }
        guard hasData else { return nil }
        return ServerSentEvent(
            event: eventType.isEmpty ? "message" : eventType, data: String(decoding: data, as: UTF8.self), id: lastEventID)
    }
}
