import Foundation
import HTTPTypes
@_spi(OutpostInternal) import OutpostCore
import OutpostServer
import OutpostTestSupport
import Testing

/// A transport that is released without `shutdown()`: a client an application forgot to shut down,
/// or a test that threw before its cleanup. AsyncHTTPClient alone stops a debug build with a fatal
/// error when its `HTTPClient` is released before being shut down; the transport shuts it down.
@Suite("Transport lifetime", .closesWhatItOpens, .timeLimit(.minutes(2)))
struct TransportLifetimeTests {
    @Test("an AsyncHTTPClientTransport released without shutdown() shuts its clients down instead of trapping")
    func releasedWithoutShutdown() async throws {
        let server = try await LiveServer.start()
        do {
            try await Self.useAndRelease(server)
            // Released again, after its stream pool made a client of its own.
            try await Self.useAndRelease(server, stream: true)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// Sends one request (and opens one stream) through a transport that is then released unclosed.
    static func useAndRelease(_ server: LiveServer, stream: Bool = false) async throws {
        let transport = AsyncHTTPClientTransport()
        let request = HTTPRequest(
            method: .get, scheme: "http", authority: "127.0.0.1:\(server.running.port)", path: "/health")
        let (response, _) = try await transport.send(request, body: nil, options: TransportOptions())
        #expect(response.status == .ok)
        if stream {
            let (head, body) = try await transport.stream(request, body: nil, options: TransportOptions())
            #expect(head.status == .ok)
            var bytes = 0
            for try await chunk in body { bytes += chunk.count }
            #expect(bytes > 0)
        }
    }
}
