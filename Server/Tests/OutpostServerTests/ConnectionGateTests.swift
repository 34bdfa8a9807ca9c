import NIOCore
import NIOEmbedded
import Testing

@testable import OutpostServer

@Suite("Connection gate")
struct ConnectionGateTests {
    @Test("admits up to its limit, refuses one more, and frees a place when a connection closes")
    func places() async throws {
        let gate = ConnectionGate(limit: 2)
        let channels = (0..<3).map { _ in EmbeddedChannel() }
        #expect(gate.admit(channels[0]))
        #expect(gate.admit(channels[1]))
        #expect(!gate.admit(channels[2]))
        #expect(gate.count == 2)
        _ = try await channels[0].close()
        channels[0].embeddedEventLoop.run()
        #expect(gate.count == 1)
        #expect(gate.admit(channels[2]))
        for channel in channels[1...] {
            _ = try? await channel.close()
            channel.embeddedEventLoop.run()
        }
        #expect(gate.count == 0)
    }

    @Test("the default bound leaves room below the process's open-file limit")
    func defaultBound() {
        let limit = ConnectionGate.defaultLimit()
        #expect(limit >= 64)
        #expect(String(buffer: ConnectionGate.refusal).contains("Content-Length: 119\r\n"))
    }
}
