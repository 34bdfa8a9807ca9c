import NIOCore
import NIOEmbedded
import Prometheus
import Testing

@testable import OutpostServer

@Suite("Server instruments")
struct ServerInstrumentsTests {
    @Test("grants, methods and routes map to bounded label values")
    func labels() {
        #expect(ServerInstruments.grantLabel("password") == "password")
        #expect(ServerInstruments.grantLabel("urn:ietf:params:oauth:grant-type:device_code") == "device_code")
        #expect(ServerInstruments.grantLabel("urn:ietf:params:oauth:grant-type:token-exchange") == "token_exchange")
        #expect(ServerInstruments.grantLabel(String(repeating: "x", count: 500)) == "other")
        #expect(ServerInstruments.grantLabel(nil) == "missing")
        #expect(ServerInstruments.methodLabel("PATCH") == "PATCH")
        #expect(ServerInstruments.methodLabel("BREW") == "other")
        #expect(ServerInstruments.methodLabel("get") == "other")
        #expect(RequestInstrumentsMiddleware<OutpostRequestContext>.routeLabel(nil) == "unmatched")
        #expect(RequestInstrumentsMiddleware<OutpostRequestContext>.routeLabel("NotFound") == "unmatched")
        #expect(RequestInstrumentsMiddleware<OutpostRequestContext>.routeLabel("/records/{type}") == "/records/{type}")
    }

    @Test("a connection refused by the gate is counted")
    func refusedConnections() throws {
        let registry = PrometheusCollectorRegistry()
        let instruments = ServerInstruments(.prometheus(registry))
        let gate = ConnectionGate(limit: 1, refused: instruments.connectionsRefused)
        let channels = (0..<3).map { _ in EmbeddedChannel() }
        #expect(gate.admit(channels[0]))
        #expect(!gate.admit(channels[1]))
        #expect(!gate.admit(channels[2]))
        #expect(registry.emitToString().contains("outpost_connections_refused_total 2"))
        for channel in channels { _ = try? channel.finish() }
    }

    @Test("the no-op factory and tracer record nothing, and the server adds no middleware for them")
    func nothingRecorded() {
        #expect(!ServerInstruments.none.records)
        #expect(ServerInstruments(.prometheus(PrometheusCollectorRegistry())).records)
    }
}
