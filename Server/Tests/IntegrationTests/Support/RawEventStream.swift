import AsyncHTTPClient
import Foundation
import NIOCore
@_spi(OutpostInternal) import OutpostCore

/// A `text/event-stream` read with AsyncHTTPClient directly, not through the SDK: for what a
/// browser's EventSource or curl would see.
final class RawEventStream {
    let status: Int
    let headers: [String: String]
    /// The body of a refused subscription (an error envelope).
    private(set) var errorBody = ""
    private var iterator: HTTPClientResponse.Body.AsyncIterator
    private var parser = ServerSentEventParser()
    private var queued: [ServerSentEvent] = []
    private var line: [UInt8] = []
    /// `: heartbeat` comment lines seen so far.
    private(set) var heartbeats = 0

    private init(status: Int, headers: [String: String], iterator: HTTPClientResponse.Body.AsyncIterator) {
        self.status = status
        self.headers = headers
        self.iterator = iterator
    }

    /// Opens `GET url` with `headers`; the stream is ready to read when the status is 200.
    static func open(_ client: HTTPClient, _ url: String, headers: [(String, String)] = []) async throws -> RawEventStream {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "text/event-stream")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let response = try await client.execute(request, timeout: .seconds(10))
        var fields: [String: String] = [:]
        for header in response.headers { fields[header.name.lowercased()] = header.value }
        let stream = RawEventStream(
            status: Int(response.status.code), headers: fields, iterator: response.body.makeAsyncIterator())
        if response.status.code != 200 {
            var body = Data()
            while let chunk = try await stream.iterator.next() { body.append(contentsOf: chunk.readableBytesView) }
            stream.errorBody = String(decoding: body, as: UTF8.self)
        }
        return stream
    }

    /// The next event, or `nil` when the server closed the stream.
    func next() async throws -> ServerSentEvent? {
        while queued.isEmpty {
            guard try await readChunk() else { return nil }
        }
        return queued.removeFirst()
    }

    /// The next event that is not `ready`.
    func nextChange() async throws -> ServerSentEvent? {
        while let event = try await next() {
            if event.event != "ready" { return event }
        }
        return nil
    }

    /// Reads until `count` heartbeats have arrived in all; events met meanwhile are kept for ``next()``.
    func waitForHeartbeats(_ count: Int) async throws -> Bool {
        while heartbeats < count {
            guard try await readChunk() else { return false }
        }
        return true
    }

    /// Reads until the stream's last event id, from an event or a heartbeat, is at least
    /// `position`: the server has passed that change, whether it sent or skipped it. Events met
    /// meanwhile are kept for ``next()``; `false` when the server closed the stream first.
    func waitForPosition(_ position: Int64) async throws -> Bool {
        while (parser.lastEventID.flatMap { Int64($0) } ?? 0) < position {
            guard try await readChunk() else { return false }
        }
        return true
    }

    /// Reads to the end of the stream; `true` when the server closed it.
    func readToEnd() async throws -> Bool {
        while try await readChunk() {}
        return true
    }

    /// Parses the next chunk of the body into ``queued``; `false` at the end of the stream.
    private func readChunk() async throws -> Bool {
        guard let chunk = try await iterator.next() else { return false }
        countHeartbeats(chunk.readableBytesView)
        queued += try parser.parse(chunk.readableBytesView)
        return true
    }

    private func countHeartbeats(_ bytes: ByteBufferView) {
        for byte in bytes {
            if byte == 0x0A {
                if line == Array(": heartbeat".utf8) { heartbeats += 1 }
                line.removeAll(keepingCapacity: true)
            } else if line.count < 64 {
                line.append(byte)
            }
        }
    }
}
