import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import Outpost
@_spi(OutpostInternal) import OutpostCore
import OutpostTestSupport
import Synchronization
import Testing

/// An upload through `AsyncHTTPClientTransport` reads its next chunk only once the connection's
/// event loop has taken the previous one, so chunks cannot pile up in the loop's task queue.
@Suite("Upload pacing", .closesWhatItOpens)
struct UploadPacingTests {
    @Test("while the event loop is busy, the upload asks its source for no more chunks; then the bytes all arrive")
    func pacedByTheLoop() async throws {
        try await FilesIntegrationTests.withFixture { fixture in
            // One loop, so that blocking it stalls every connection of this client.
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let http = HTTPClient(eventLoopGroupProvider: .shared(group))
            let gate = DispatchSemaphore(value: 0)
            let chunkSize = 64 * 1024
            let chunks = 32
            let chunk = Data((0..<chunkSize).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            let asked = Mutex(0)
            let source = ByteStream(length: Int64(chunks * chunkSize)) {
                let count = asked.withLock { count -> Int in
                    count += 1
                    return count
                }
                guard count <= chunks else { return nil }
                // Once the body has started, the loop is kept busy until the test opens the gate.
                if count == 1 { group.next().execute { gate.wait() } }
                return chunk
            }
            let client = try await fixture.client("ada", transport: AsyncHTTPClientTransport(borrowing: http))
            let transfer = client.files.upload(source, length: Int64(chunks * chunkSize), as: "paced.bin")
            async let result = transfer.result

            // The loop is blocked from the first chunk on. An upload that did not wait for the loop
            // would ask for all 32 chunks at once (AsyncHTTPClient queues each write and asks for
            // the next); a paced one asks for the second only when the loop has run. Nothing
            // announces that the source was not asked, so this watches for a bounded time.
            _ = try await eventually(within: .seconds(30)) { asked.withLock { $0 } > 0 }
            _ = try await eventually(within: .milliseconds(500)) { asked.withLock { $0 } >= 3 }
            let askedWhileBlocked = asked.withLock { $0 }
            gate.signal()

            let uploaded = try await result
            try await client.shutdown()
            try await http.shutdown()
            try await group.shutdownGracefully()
            #expect(askedWhileBlocked >= 1)
            #expect(askedWhileBlocked <= 2)
            #expect(uploaded.file.size == Int64(chunks * chunkSize))
            var expected = Data()
            for _ in 0..<chunks { expected.append(chunk) }
            let reader = try await fixture.client(nil)
            let target = fixture.folder.appendingPathComponent("paced-back.bin")
            _ = try await reader.files.download("paced.bin", to: target).result
            #expect(try Data(contentsOf: target) == expected)
        }
    }

    @Test("a file is read into one reused buffer, yet a chunk still held keeps its bytes")
    func fileChunksHeldKeepTheirBytes() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-chunks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("source.bin")
        let bytes = Data((0..<(3 * 65_536 + 999)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) })
        try bytes.write(to: url)
        let stream = try ByteStream.file(at: url, chunkSize: 65_536)
        #expect(stream.direct != nil)
        // Every chunk is kept, as a connection that has not sent them would: a buffer refilled in
        // place would show the last chunk's bytes in all of them.
        var held: [ByteBuffer] = []
        for try await chunk in ByteBufferChunks(base: stream, loops: MultiThreadedEventLoopGroup.singleton) {
            held.append(chunk)
        }
        #expect(held.map(\.readableBytes) == [65_536, 65_536, 65_536, 999])
        var joined = Data()
        for chunk in held { joined.append(contentsOf: chunk.readableBytesView) }
        #expect(joined == bytes)
    }
}
