import Foundation
import Testing

@testable import OutpostServer
@testable import outpost

@Suite("outpost users disable, enable and sign-out")
struct UserAccessCommandTests {
    @Test("disable revokes the user's tokens and marks them disabled; enable clears it; sign-out revokes only; each is audited")
    func disableEnableSignOut() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-access-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("db.sqlite").path
        let options = try DatabaseOptions.parse(["--database", database])
        let token = StoredToken(
            hash: "h1", kind: .access, userID: nil, clientID: "outpost-cli", scope: "profile", family: "f1",
            expiresAt: Int64.max / 2, state: "active")
        let ada = try await options.withStorage { storage in
            let ada = try await storage.addUser(username: "ada", password: "correct horse").id
            var first = token
            first.userID = ada
            try await storage.saveToken(first)
            return ada
        }
        try await UserAccessCommands.Disable.parse(["ada", "--database", database]).run()
        try await options.withStorage { storage in
            #expect(try await storage.user(id: ada)?.isDisabled == true)
            #expect(try await storage.token(hash: "h1")?.state == "revoked")
            var second = token
            second.hash = "h2"
            second.family = "f2"
            second.userID = ada
            try await storage.saveToken(second)
        }
        try await UserAccessCommands.Enable.parse(["ada", "--database", database]).run()
        try await UserAccessCommands.SignOut.parse(["ada", "--database", database]).run()
        try await options.withStorage { storage in
            #expect(try await storage.user(id: ada)?.isDisabled == false)
            #expect(try await storage.token(hash: "h2")?.state == "revoked")
            let events = try await (storage as? any AuditStorage)?.auditEvents(AuditQuery(limit: 100)) ?? []
            let actions = events.filter { $0.subject == ada && $0.actor == AuditEvent.operatorActor }.map(\.action)
            #expect(Set(actions).isSuperset(of: [AuditAction.userDisabled, AuditAction.userEnabled, AuditAction.userSignedOut]))
        }
        await #expect(throws: (any Error).self) {
            try await UserAccessCommands.Disable.parse(["nobody", "--database", database]).run()
        }
    }
}
