import ArgumentParser
import Foundation
import JWTKit
import Testing

@testable import OutpostServer
@testable import outpost

@Suite("outpost providers")
struct ProvidersCommandTests {
    @Test("add (OpenID Connect and Apple with its key file), list, refuse a second of one name or issuer, remove")
    func addListRemove() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-providers-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("db.sqlite").path
        let keyFile = folder.appendingPathComponent("AuthKey_KEY1234567.p8")
        let pem = ES256PrivateKey().pemRepresentation
        try pem.write(to: keyFile, atomically: true, encoding: .utf8)

        try await ProvidersCommand.Add.parse([
            "google", "--issuer", "https://accounts.google.com", "--client-id", "ios.apps.googleusercontent.com",
            "--client-id", "android.apps.googleusercontent.com", "--client-secret", "shh", "--database", database,
        ]).run()
        try await ProvidersCommand.Add.parse([
            "apple", "--client-id", "com.example.app", "--apple-team-id", "TEAM123456", "--apple-key-id", "KEY1234567",
            "--apple-private-key", keyFile.path, "--database", database,
        ]).run()
        let options = try DatabaseOptions.parse(["--database", database])
        let stored = try await options.withStorage { try await ProvidersCommand.storage($0).upstreamProviders() }
        #expect(stored.map(\.name) == ["apple", "google"])
        #expect(stored[0].kind == .apple && stored[0].issuer == UpstreamProvider.appleIssuer)
        #expect(stored[0].applePrivateKeyPEM == pem && stored[0].appleTeamID == "TEAM123456")
        #expect(stored[1].kind == .openID && stored[1].clientSecret == "shh")
        #expect(stored[1].clientIDs == ["ios.apps.googleusercontent.com", "android.apps.googleusercontent.com"])
        try await ProvidersCommand.List.parse(["--database", database]).run()

        // The same name, the same issuer, an http issuer, a key that is not one: refused.
        for arguments in [
            ["google", "--issuer", "https://other.example", "--client-id", "x"],
            ["google2", "--issuer", "https://accounts.google.com", "--client-id", "x"],
            ["plain", "--issuer", "http://idp.example", "--client-id", "x"],
            [
                "apple2", "--issuer", "https://apple2.example", "--client-id", "x", "--apple-team-id", "T", "--apple-key-id", "K",
                "--apple-private-key", database,
            ],
        ] {
            await #expect(throws: (any Error).self, "\(arguments)") {
                try await ProvidersCommand.Add.parse(arguments + ["--database", database]).run()
            }
        }
        try await ProvidersCommand.Remove.parse(["google", "--database", database]).run()
        await #expect(throws: (any Error).self) {
            try await ProvidersCommand.Remove.parse(["google", "--database", database]).run()
        }
        let left = try await options.withStorage { try await ProvidersCommand.storage($0).upstreamProviders() }
        #expect(left.map(\.name) == ["apple"])
    }
}
