import Crypto
import Foundation
import HTTPTypes
@_spi(OutpostInternal) import OutpostCore
import OutpostServer
import OutpostTestSupport
import Testing

/// `ClientTransport.stream`, the one streaming path (files and the change feed), on both built-in
/// transports against the real server: the feed, backpressure and the two timeout modes.
@Suite("Streaming transports", .closesWhatItOpens, .timeLimit(.minutes(2)))
struct StreamingTransportTests {
    enum Kind: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case asyncHTTPClient, urlSession

        func make() -> any ClientTransport {
            switch self {
            case .asyncHTTPClient: AsyncHTTPClientTransport()
            case .urlSession: URLSessionTransport()
            }
        }

        var testDescription: String { rawValue }
    }

    static func get(_ server: LiveServer, _ path: String, accept: String? = nil) -> HTTPRequest {
        var request = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(server.running.port)", path: path)
        if let accept { request.headerFields[.accept] = accept }
        return request
    }

    @Test("the change feed delivers a create and a patch through the transport", arguments: Kind.allCases)
    func changeFeed(kind: Kind) async throws {
        try await withLiveServer(client: { OutpostClient(configuration: .init(baseURL: $0), ownedTransport: kind.make()) }) {
            _, client in
            let store = client.entities()
            let subscriber = ChangesIntegrationTests.Subscriber(store)
            defer { subscriber.task.cancel() }
            var note = try await store.push(LiveNote(text: "first"))
            note.value.text = "second"
            note = try await store.patch(note)
            var iterator = subscriber.changes.makeAsyncIterator()
            let changes = try await subscriber.take(2, from: &iterator)
            #expect(changes.map(\.kind) == [.created, .updated])
            #expect(changes.map(\.entity?.value.text) == ["first", "second"])
            #expect(changes.allSatisfy { $0.id == note.value.id })
        }
    }

    @Test("a file goes up (streamed request body) and comes back through the transport", arguments: Kind.allCases)
    func fileRoundTrip(kind: Kind) async throws {
        try await FilesIntegrationTests.withFixture { fixture in
            let size = 3 * 1024 * 1024 + 17
            let (source, sha) = try fixture.makeFile("up.bin", size: size)
            let client = try await fixture.client("ada", transport: kind.make())
            let uploaded = try await client.files.upload(from: source, as: "up.bin").result
            #expect(uploaded.file.sha256 == sha)
            #expect(uploaded.file.size == Int64(size))
            let target = fixture.folder.appendingPathComponent("down.bin")
            let downloaded = try await client.files.download("up.bin", to: target).result
            #expect(downloaded.sha256 == sha)
            #expect(try FilesIntegrationTests.Fixture.sha256(of: target) == sha)
        }
    }

    @Test(
        "a slow reader of a 24 MiB download: the transport holds at most its buffer bound in memory; the bytes arrive intact",
        arguments: Kind.allCases)
    func boundedDownload(kind: Kind) async throws {
        try await FilesIntegrationTests.withFixture { fixture in
            let size = 24 << 20
            let (source, sha) = try fixture.makeFile("big.bin", size: size)
            _ = try await fixture.client("ada").files.upload(from: source, as: "big.bin").result
            let transport = kind.make()
            defer { Task { try? await transport.shutdown() } }
            let (head, body) = try await transport.stream(
                Self.get(fixture.server, "/files/big.bin"), body: nil, options: TransportOptions(timeout: .seconds(60)))
            #expect(head.status == .ok)
            let exchange = try #require(body.exchange)
            // What may wait: the buffer's bound plus the one network read that crossed it.
            let bound = exchange.highWatermark + 512 * 1024
            var hasher = SHA256()
            var received = 0
            var pauses = 0
            for try await chunk in body {
                hasher.update(data: chunk)
                received += chunk.count
                // Every 2 MiB the reader stops until the transport has filled its buffer and paused
                // (or, on FoundationNetworking, started to spill to disk); a transport that did
                // neither would buffer the rest of the file in memory meanwhile.
                if received / (2 << 20) > pauses {
                    pauses += 1
                    await exchange.waitUntilPausedOrOver()
                    #expect(exchange.bufferedBytes <= bound)
                }
            }
            #expect(received == size)
            #expect(hasher.finalize().map { String(format: "%02x", $0) }.joined() == sha)
            #expect(exchange.peakBufferedBytes <= bound, "peak \(exchange.peakBufferedBytes) bytes buffered")
            // The reader was slow enough for the buffer to fill: the bound was exercised.
            #expect(exchange.peakBufferedBytes >= exchange.lowWatermark)
            // A spilling transport (FoundationNetworking cannot pause) counts as paused only once a
            // chunk went to the file, so the reader's waits made it spill.
            if exchange.spills { #expect(exchange.peakSpilledBytes > 0) }
        }
    }

    @Test(
        "timeouts: a whole-exchange deadline ends a stream despite heartbeats; an idle timeout ends a silent one",
        arguments: Kind.allCases)
    func timeouts(kind: Kind) async throws {
        let transport = kind.make()
        let chatty = try await LiveServer.start { $0.changes.heartbeatInterval = .milliseconds(50) }
        let silent = try await LiveServer.start { $0.changes.heartbeatInterval = .seconds(3600) }
        do {
            // Without an idle timeout, `timeout` bounds the whole exchange, body included. (4 s: on a
            // loaded machine the head alone has taken most of 2 s, leaving no time for a heartbeat.)
            let (head, body) = try await transport.stream(
                Self.get(chatty, "/records/notes/changes", accept: "text/event-stream"), body: nil,
                options: TransportOptions(timeout: .seconds(4)))
            #expect(head.status == .ok)
            var received = ""
            let whole = await #expect(throws: OutpostError.self) {
                for try await chunk in body { received += String(decoding: chunk, as: UTF8.self) }
            }
            #expect(whole?.code == .timeout)
            // Heartbeats kept coming (counted in the bytes: a loaded machine may deliver several in
            // one chunk), and the deadline still ended the stream.
            #expect(received.components(separatedBy: ": heartbeat\n").count > 2, "\(received)")

            // With one, the head comes within `timeout` and the silence after `ready` ends the stream.
            let (quietHead, quiet) = try await transport.stream(
                Self.get(silent, "/records/notes/changes", accept: "text/event-stream"), body: nil,
                options: TransportOptions(timeout: .seconds(10), idleTimeout: .milliseconds(300)))
            #expect(quietHead.status == .ok)
            var iterator = quiet.makeAsyncIterator()
            var text = ""
            let idle = await #expect(throws: OutpostError.self) {
                while let chunk = try await iterator.next() { text += String(decoding: chunk, as: UTF8.self) }
            }
            #expect(idle?.code == .timeout)
            #expect(idle?.message.contains("No bytes") == true)
            #expect(text.contains("event: ready"))
        } catch {
            Issue.record(error)
        }
        try await transport.shutdown()
        await chatty.stop()
        await silent.stop()
    }
}
