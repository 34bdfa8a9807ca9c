import ArgumentParser
import OutpostServer
import Testing

@testable import outpost

@Suite("outpost serve's options")
struct ServeCommandTests {
    @Test("sign-up takes an invite by default, is open with --demo, and --signup wins over both")
    func signUpDefault() throws {
        #expect(try ServeCommand.parse([]).signUpMode == .invite)
        #expect(try ServeCommand.parse(["--demo"]).signUpMode == .open)
        #expect(try ServeCommand.parse(["--signup", "closed", "--demo"]).signUpMode == .closed)
        #expect(try ServeCommand.parse(["--signup", "open"]).signUpMode == .open)
        #expect(throws: (any Error).self) { try ServeCommand.parse(["--signup", "sometimes"]) }
    }

    @Test("--files-url must be another host's http(s) origin")
    func filesURL() throws {
        #expect(try ServeCommand.parse(["--files-url", "https://files.example.net"]).filesURL == "https://files.example.net")
        for bad in ["ftp://files.example.net", "https://files.example.net/path", "https://127.0.0.1:9", "files.example.net"] {
            #expect(throws: (any Error).self, "\(bad)") { try ServeCommand.parse(["--files-url", bad]) }
        }
        #expect(throws: (any Error).self) {
            try ServeCommand.parse(["--public-url", "https://auth.example.net", "--files-url", "https://AUTH.example.net"])
        }
    }
}
