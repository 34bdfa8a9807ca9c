import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// HTTP/1.1 spoken by hand over TCP, for requests no well-behaved client sends: broken framing,
/// stalls, unusual methods. Every read is bounded by a deadline, so a server that never answers
/// makes the test fail instead of hang.
struct RawHTTP {
    /// What came back on one connection.
    struct Reply: Sendable {
        /// Every byte the server sent.
        var bytes: [UInt8]
        /// The server closed the connection before the deadline.
        var closed: Bool
        /// The deadline passed with the connection still open.
        var timedOut: Bool
        /// How long the exchange took.
        var elapsed: Duration

        var text: String { String(decoding: bytes, as: UTF8.self) }

        /// The status of the first response, e.g. 400.
        var status: Int? {
            guard text.hasPrefix("HTTP/1.1 ") else { return nil }
            return Int(text.dropFirst(9).prefix(3))
        }

        /// How many response heads arrived (counted by their status lines).
        var responseCount: Int {
            text.components(separatedBy: "HTTP/1.1 ").dropFirst().filter { $0.prefix(4).last == " " && Int($0.prefix(3)) != nil }
                .count
        }

        /// The first response's header fields, names lowercased.
        var headers: [String: String] {
            guard let end = text.range(of: "\r\n\r\n") else { return [:] }
            var fields: [String: String] = [:]
            for line in text[..<end.lowerBound].split(separator: "\r\n").dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            return fields
        }

        /// What follows the first response's head.
        var body: String {
            guard let end = text.range(of: "\r\n\r\n") else { return "" }
            return String(text[end.upperBound...])
        }
    }

    let port: Int

    /// Sends `request` as is and reads until the server closes the connection or `timeout` passes.
    func exchange(_ request: String, timeout: Duration) async throws -> Reply {
        try await exchange([Array(request.utf8)], timeout: timeout)
    }

    /// Sends each part in turn and reads until the server closes the connection or `timeout` passes
    /// (counted from the first part).
    func exchange(_ parts: [[UInt8]], timeout: Duration) async throws -> Reply {
        let started = ContinuousClock.now
        let channel = try await connect()
        let received = Received()
        let closed = try await channel.executeThenClose { inbound, outbound in
            for part in parts {
                try await outbound.write(ByteBuffer(bytes: part))
            }
            return try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    for try await buffer in inbound {
                        received.append(Array(buffer.readableBytesView))
                    }
                    return true
                }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return false
                }
                let first = try await group.next() ?? false
                group.cancelAll()
                return first
            }
        }
        return Reply(
            bytes: received.bytes, closed: closed, timedOut: !closed, elapsed: ContinuousClock.now - started)
    }

    /// Sends each request of `requests` on one connection, each only once the answer to the one
    /// before it is complete (so that each arrives in a read of its own, as from a client that waits
    /// for its answers), then reads until the server closes the connection or `timeout` passes
    /// (counted from the first request).
    func conversation(_ requests: [String], timeout: Duration) async throws -> Reply {
        let started = ContinuousClock.now
        let channel = try await connect()
        let received = Received()
        let (arrivals, arrived) = AsyncStream<Void>.makeStream()
        let closed = try await channel.executeThenClose { inbound, outbound in
            try await withThrowingTaskGroup(of: Bool?.self) { group in
                group.addTask {
                    defer { arrived.finish() }
                    for try await buffer in inbound {
                        received.append(Array(buffer.readableBytesView))
                        arrived.yield()
                    }
                    return true
                }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return false
                }
                group.addTask {
                    var arrivals = arrivals.makeAsyncIterator()
                    for (index, request) in requests.enumerated() {
                        while Self.completeResponses(received.bytes) < index {
                            guard await arrivals.next() != nil else { return nil }
                        }
                        try await outbound.write(ByteBuffer(string: request))
                    }
                    return nil
                }
                var result: Bool?
                while result == nil, let next = try await group.next() { result = next }
                group.cancelAll()
                return result ?? true
            }
        }
        return Reply(
            bytes: received.bytes, closed: closed, timedOut: !closed, elapsed: ContinuousClock.now - started)
    }

    /// A new connection to the server, as an async channel of bytes.
    func connect() async throws -> NIOAsyncChannel<ByteBuffer, ByteBuffer> {
        try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
    }

    /// How many whole responses (head and `Content-Length` body) `bytes` holds.
    static func completeResponses(_ bytes: [UInt8]) -> Int {
        var count = 0
        var rest = bytes[...]
        let end = Array("\r\n\r\n".utf8)
        while let headEnd = rest.firstRange(of: end) {
            let head = String(decoding: rest[..<headEnd.lowerBound], as: UTF8.self).lowercased()
            let length =
                head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
            guard rest.endIndex - headEnd.upperBound >= length else { break }
            count += 1
            rest = rest[(headEnd.upperBound + length)...]
        }
        return count
    }

    final class Received: Sendable {
        private let storage = Mutex<[UInt8]>([])
        func append(_ bytes: [UInt8]) { storage.withLock { $0.append(contentsOf: bytes) } }
        var bytes: [UInt8] { storage.withLock { $0 } }
    }
}
