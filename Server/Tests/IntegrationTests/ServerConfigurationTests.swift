import Foundation
import Hummingbird
import OutpostServer
import OutpostTestSupport
import Testing

/// `ServerConfiguration.application` is Hummingbird's `ApplicationConfiguration`, used as is by the
/// running server; `host` and `port` are its address.
@Suite("The server configuration embeds Hummingbird's ApplicationConfiguration", .closesWhatItOpens)
struct ServerConfigurationTests {
    @Test("host and port set application.address; the server name defaults to Outpost")
    func hostAndPortSetTheAddress() {
        var configuration = ServerConfiguration()
        #expect(configuration.application.address == .hostname("127.0.0.1", port: 8080))
        #expect(configuration.application.serverName == "Outpost")
        configuration.port = 0
        configuration.host = "::1"
        #expect(configuration.application.address == .hostname("::1", port: 0))
        let initialised = ServerConfiguration(host: "0.0.0.0", port: 9000)
        #expect(initialised.application.address == .hostname("0.0.0.0", port: 9000))
        #expect(initialised.host == "0.0.0.0" && initialised.port == 9000)
    }

    @Test("the running server uses application: its server name, and an address set apart from host and port")
    func runningServerUsesApplication() async throws {
        let server = try await LiveServer.start { configuration in
            // Hummingbird's address wins over the host name it was set apart from: what was bound is reported.
            configuration.host = "localhost"
            configuration.application.address = .hostname("127.0.0.1", port: 0)
            configuration.application.serverName = "Outpost-Test"
        }
        do {
            #expect(server.running.host == "127.0.0.1")
            #expect(server.running.port > 0)
            let reply = try await RawHTTP(port: server.running.port).exchange(
                "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", timeout: .seconds(10))
            #expect(reply.status == 200)
            #expect(reply.headers["server"] == "Outpost-Test")
            // Absolute URLs start with the address actually bound.
            let discovery = try await RawHTTP(port: server.running.port).exchange(
                "GET /.well-known/oauth-authorization-server HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                timeout: .seconds(10))
            #expect(discovery.body.contains("\"issuer\":\"http://127.0.0.1:\(server.running.port)\""))
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
