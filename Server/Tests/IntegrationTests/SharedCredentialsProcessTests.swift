import Foundation
import OutpostServer
import OutpostTestSupport
import Testing

/// Separate `outpost` processes sharing one credentials file, against the live server, with the
/// server's reuse grace window off: a refresh token spent twice would revoke the whole sign-in.
@Suite("Processes sharing one credentials file", .closesWhatItOpens)
struct SharedCredentialsProcessTests {
    @Test(
        "four processes with an expired token spend the refresh token once between them, and the sign-in lives on",
        .enabled(if: CrashRecoveryTests.binary != nil))
    func fourProcesses() async throws {
        let binary = try #require(CrashRecoveryTests.binary)
        try await withAuthFixture(configure: { $0.auth.refreshReuseGrace = .zero }) { fixture in
            let storage = try await fixture.server.openStorage()
            _ = try await storage.registerClient(
                name: "Outpost CLI (password)", redirectURIs: [], grants: ["password", "refresh_token"],
                scopes: ["records:read", "records:write", "profile"], confidential: false, id: "outpost-cli-password")
            try await storage.close()
            let file = fixture.server.folder.appendingPathComponent("shared/credentials.json")
            let common = ["--server", fixture.base, "--credentials", file.path]
            let login = try await OutboxIntegrationTests.cli(
                binary, ["login", "--password", "--username", "ada"] + common, input: AuthFixture.password + "\n")
            #expect(login.status == 0, "\(login.output)")
            let before = try Self.refreshToken(in: file)
            try await fixture.expireAccessTokens()

            let runs = try await withThrowingTaskGroup(of: (output: String, status: Int32).self) { group in
                for _ in 0..<4 { group.addTask { try await OutboxIntegrationTests.cli(binary, ["whoami"] + common) } }
                return try await group.reduce(into: [(output: String, status: Int32)]()) { $0.append($1) }
            }
            for run in runs {
                #expect(run.status == 0 && run.output.hasPrefix("ada at "), "\(run.output)")
            }
            let after = try Self.refreshToken(in: file)
            #expect(after != before, "one of them refreshed")
            // Reuse detection is strict here: had two processes spent `before`, the family would be revoked.
            let next = try await fixture.token([
                "grant_type": "refresh_token", "refresh_token": after, "client_id": "outpost-cli-password",
            ])
            #expect(next.status == 200, "\(next.body)")
            let lease = try String(contentsOf: file.appendingPathExtension("lease"), encoding: .utf8)
            #expect(lease.contains(#""leases":{}"#), "every lease was released: \(lease)")
        }
    }

    static func refreshToken(in file: URL) throws -> String {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any]
        let accounts = try #require(object?["accounts"] as? [String: [String: Any]])
        return try #require(accounts.values.first?["refreshToken"] as? String)
    }
}
