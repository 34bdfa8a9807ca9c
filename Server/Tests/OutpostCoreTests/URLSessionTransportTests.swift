import Foundation
import Testing

@_spi(OutpostInternal) @testable import OutpostCore

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("URLSession transport configuration")
struct URLSessionTransportTests {
    @Test("an owned session has no URLCache and enough connections per host for feeds and transfers")
    func preparedConfiguration() {
        let given = URLSessionConfiguration.default
        given.urlCache = URLCache.shared
        given.httpMaximumConnectionsPerHost = 4
        let prepared = URLSessionTransport.prepared(given)
        #expect(prepared.urlCache == nil)
        #expect(prepared.requestCachePolicy == .reloadIgnoringLocalCacheData)
        #expect(prepared.httpMaximumConnectionsPerHost == URLSessionTransport.connectionsPerHost)
        // A copy: the caller's configuration is left as it was.
        #expect(given.urlCache != nil)
        #expect(given.httpMaximumConnectionsPerHost == 4)
        // A higher limit the caller chose stays.
        given.httpMaximumConnectionsPerHost = 64
        #expect(URLSessionTransport.prepared(given).httpMaximumConnectionsPerHost == 64)
    }

    @Test("a body from memory or a file can be sent again from its start; another stream cannot")
    func reopenableBodies() async throws {
        let data = Data("outpost".utf8)
        let again = try #require(try ByteStream.data(data).reopen?())
        #expect(try await again.collect(upTo: 100) == data)

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-reopen-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("body.bin")
        try Data("0123456789".utf8).write(to: file)
        let stream = try ByteStream.file(at: file, from: 3)
        #expect(try await stream.collect(upTo: 100) == Data("3456789".utf8))
        let reopened = try #require(try stream.reopen?())
        #expect(try await reopened.collect(upTo: 100) == Data("3456789".utf8))

        #expect(ByteStream(length: nil) { nil }.reopen == nil)
    }
}
