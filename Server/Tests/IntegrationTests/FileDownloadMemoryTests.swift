import Crypto
import Foundation
import NIOCore
import NIOPosix
import OutpostServer
import OutpostServerTesting
import OutpostTestSupport
import Testing

/// A file download holds a bounded amount in the server whatever the reader's speed.
@Suite("File download memory", .closesWhatItOpens)
struct FileDownloadMemoryTests {
    /// The server's download piece (`FolderFileStorage.downloadChunkLength`) and NIO's default
    /// high watermark: a download hands the connection a piece only while the connection holds at
    /// most a watermark's worth, so it holds at most a watermark plus one piece unsent.
    static let piece = 256 * 1024
    static let watermark = 64 * 1024

    @Test("a reader that stalls mid-download, then reads on, never makes the server hold more than a piece past the watermark")
    func stalledReader() async throws {
        let meter = DownloadMeter()
        try await FilesIntegrationTests.withFixture(configure: { $0.downloadObserver = meter }) { fixture in
            let size = 24 * 1024 * 1024
            let name = "stall-\(UUID().uuidString.prefix(8)).bin"
            let (source, sha) = try fixture.makeFile("stall-source.bin", size: size)
            _ = try await fixture.client("ada").files.upload(from: source, as: name).result
            meter.watch(name)

            // A raw reader with a small receive buffer whose inbound stream reads from the socket
            // only as it is consumed (NIOAsyncChannel's backpressure): until the loop below starts
            // consuming, it stalls the download.
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelOption(.socketOption(.so_rcvbuf), value: 16 * 1024)
                .connect(host: "127.0.0.1", port: fixture.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
            let (head, body) = try await channel.executeThenClose { inbound, outbound in
                try await outbound.write(
                    ByteBuffer(string: "GET /files/\(name) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"))
                // Stalled: wait until the server holds bytes it cannot send (the kernel's buffers
                // on both sides are full). Polling, as nothing announces it; bounded by a deadline.
                let held = try await eventually(within: .seconds(60)) {
                    (meter.measurement(name)?.peakUnsentBytes ?? 0) > 0
                }
                try #require(held, "the server never had to hold bytes back")
                var received: [UInt8] = []
                received.reserveCapacity(size + 1024)
                for try await buffer in inbound { received.append(contentsOf: buffer.readableBytesView) }
                let end = try #require(Self.headEnd(received))
                return (String(decoding: received[..<end], as: UTF8.self), Array(received[end...]))
            }

            #expect(head.hasPrefix("HTTP/1.1 200"))
            #expect(body.count == size)
            #expect(SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined() == sha)
            let measured = try #require(meter.measurement(name))
            // One sample per piece handed over: the whole file went through the metered path.
            #expect(measured.samples == size / Self.piece)
            // The stall made the server hold bytes; a server that kept reading the file into the
            // connection would have held most of the 24 MiB here.
            #expect(measured.peakUnsentBytes > 0)
            #expect(measured.peakUnsentBytes <= Self.watermark + Self.piece)
        }
    }

    /// The index just past the first `CRLF CRLF`.
    static func headEnd(_ bytes: [UInt8]) -> Int? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where Array(bytes[index..<index + 4]) == separator {
            return index + 4
        }
        return nil
    }
}
