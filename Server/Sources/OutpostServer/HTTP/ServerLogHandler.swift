import Foundation
public import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The log handler `outpost serve` uses: one text line per event, cheap on the request path.
///
/// swift-log's default `StreamLogHandler` formats a local-time timestamp with `strftime` and then
/// writes and flushes stderr under a lock for every line: one system call per request at `info`.
/// Here a line is formatted with a timestamp cached per second and appended to a ``ServerLogSink``
/// buffer, which a background thread writes out every 100 ms or when it holds 32 KiB. Warnings and
/// worse are written at once, with everything buffered before them, so nothing important waits.
///
/// ```swift
/// LoggingSystem.bootstrap { label in ServerLogHandler(label: label) }   // or per logger:
/// var logger = Logger(label: "outpost.server") { ServerLogHandler(label: $0) }
/// ```
///
/// Lines look like `2026-11-23T17:17:04.123Z info outpost.server: request duration_ms=0 method=GET path=/health status=200`
/// (UTC, metadata sorted by key). Call ``ServerLogSink/flush()`` before the process exits.
public struct ServerLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    let label: String
    let sink: ServerLogSink

    /// A handler labelled `label` writing to `sink` (standard error by default).
    public init(label: String, sink: ServerLogSink = .standardError, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.sink = sink
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        // The event's own metadata wins over the provider's, which wins over the handler's.
        var all = event.metadata ?? [:]
        if let provided = metadataProvider?.get(), !provided.isEmpty { all.merge(provided) { own, _ in own } }
        if !metadata.isEmpty { all.merge(metadata) { own, _ in own } }
        var line = sink.timestamp()
        line.reserveCapacity(96)
        line += " "
        line += event.level.rawValue
        line += " "
        line += label
        line += ": "
        line += event.message.description
        for (key, value) in all.sorted(by: { $0.key < $1.key }) {
            line += " "
            line += key
            line += "="
            line += value.description
        }
        line += "\n"
        sink.append(line, urgent: event.level >= .warning)
    }
}

/// Where ``ServerLogHandler`` lines go: a file descriptor, written in batches by a background
/// thread (see ``ServerLogHandler``). One sink per descriptor keeps lines whole and in order.
public final class ServerLogSink: Sendable {
    /// Standard error, the sink `outpost serve` logs to.
    public static let standardError = ServerLogSink(fileDescriptor: 2)

    /// The buffer is written once it holds this many bytes, without waiting for the timer.
    static let batchBytes = 32 * 1024
    private let fileDescriptor: Int32
    private let buffer = Mutex<[UInt8]>([])
    /// Serializes writes, so that batches leave in the order they were taken.
    private let writing = Mutex<Void>(())
    /// The formatted date and time of the current second, `2026-11-23T17:17:04`.
    private let clock = Mutex<(second: Int, text: String)>((-1, ""))

    /// A sink writing to `fileDescriptor`, which it does not close.
    public init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
        // An OS thread rather than a task: it sleeps, and must not hold a concurrency thread.
        Thread.detachNewThread { [weak self] in
            while true {
                Thread.sleep(forTimeInterval: 0.1)
                guard let self else { return }
                self.flush()
            }
        }
    }

    /// Writes out whatever is buffered.
    public func flush() {
        writing.withLock { _ in
            let batch = buffer.withLock { bytes -> [UInt8] in
                defer { bytes.removeAll(keepingCapacity: true) }
                return bytes
            }
            write(batch)
        }
    }

    func append(_ line: String, urgent: Bool) {
        append(urgent: urgent) { $0.append(contentsOf: line.utf8) }
    }

    /// Appends what `write` appends (whole lines, newline included) under the buffer's lock.
    func append(urgent: Bool, _ write: (inout [UInt8]) -> Void) {
        let full = buffer.withLock { bytes in
            write(&bytes)
            return bytes.count >= Self.batchBytes
        }
        if full || urgent { flush() }
    }

    /// The access-log line ``ServerLogHandler`` would write for `request` with metadata
    /// `client`, `duration_ms`, `method`, `path` and `status` (keys sorted, values as they are), written as
    /// bytes with no `Logger.Metadata` dictionary and no intermediate strings: one per request.
    func appendRequestLine(
        label: String, level: Logger.Level, client: String, method: String, path: String, status: Int, milliseconds: Int64
    ) {
        let stamp = timestampParts()
        append(urgent: level >= .warning) { bytes in
            Self.appendTimestamp(stamp, to: &bytes)
            bytes.append(UInt8(ascii: " "))
            bytes.append(contentsOf: level.rawValue.utf8)
            bytes.append(UInt8(ascii: " "))
            bytes.append(contentsOf: label.utf8)
            bytes.append(contentsOf: ": request client=".utf8)
            bytes.append(contentsOf: client.utf8)
            bytes.append(contentsOf: " duration_ms=".utf8)
            Self.appendDigits(milliseconds, width: 1, to: &bytes)
            bytes.append(contentsOf: " method=".utf8)
            bytes.append(contentsOf: method.utf8)
            bytes.append(contentsOf: " path=".utf8)
            bytes.append(contentsOf: path.utf8)
            bytes.append(contentsOf: " status=".utf8)
            Self.appendDigits(Int64(status), width: 1, to: &bytes)
            bytes.append(UInt8(ascii: "\n"))
        }
    }

    /// `value` in decimal, zero-padded to `width` digits (a minus sign first when negative).
    static func appendDigits(_ value: Int64, width: Int, to bytes: inout [UInt8]) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        let magnitude = value.magnitude
        var divisor: UInt64 = 1
        var count = 1
        while count < width || magnitude / divisor >= 10 {
            divisor *= 10
            count += 1
        }
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(magnitude / divisor % 10))
            divisor /= 10
        }
    }

    private func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = SystemCall.write(fileDescriptor, raw.baseAddress! + offset, raw.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0, errno == EINTR {
                    continue
                } else {
                    return  // a closed or full descriptor: drop the batch rather than block the server
                }
            }
        }
    }

    /// `2026-11-23T17:17:04.123Z`: the date and time formatted once per second, the milliseconds each time.
    func timestamp() -> String {
        var bytes: [UInt8] = []
        Self.appendTimestamp(timestampParts(), to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A timestamp from ``timestampParts()`` appended to `bytes`: `2026-11-23T17:17:04.123Z`.
    static func appendTimestamp(_ parts: (prefix: String, milliseconds: Int64), to bytes: inout [UInt8]) {
        bytes.append(contentsOf: parts.prefix.utf8)
        bytes.append(UInt8(ascii: "."))
        appendDigits(parts.milliseconds, width: 3, to: &bytes)
        bytes.append(UInt8(ascii: "Z"))
    }

    /// The date and time to the second (`2026-11-23T17:17:04`, cached per second) and the milliseconds.
    func timestampParts() -> (prefix: String, milliseconds: Int64) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let second = Int(now.tv_sec)
        let milliseconds = Int64(now.tv_nsec / 1_000_000)
        let prefix = clock.withLock { cached -> String in
            if cached.second == second { return cached.text }
            var seconds = time_t(second)
            var parts = tm()
            gmtime_r(&seconds, &parts)
            let text =
                "\(parts.tm_year + 1900)-\(Self.two(Int(parts.tm_mon) + 1))-\(Self.two(Int(parts.tm_mday)))T"
                + "\(Self.two(Int(parts.tm_hour))):\(Self.two(Int(parts.tm_min))):\(Self.two(Int(parts.tm_sec)))"
            cached = (second, text)
            return text
        }
        return (prefix, milliseconds)
    }

    private static func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
}

/// The C library's `write`, named apart from the sink's own method.
private enum SystemCall {
    static func write(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
        #if canImport(Darwin)
            Darwin.write(descriptor, bytes, count)
        #elseif canImport(Musl)
            Musl.write(descriptor, bytes, count)
        #else
            Glibc.write(descriptor, bytes, count)
        #endif
    }
}
