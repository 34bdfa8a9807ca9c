import Foundation
import Testing

@testable import OutpostServer
@testable import outpost

@Suite("outpost clients rotate")
struct ClientRotateCommandTests {
    @Test("a confidential client gets a new secret: the old one fails, tokens stay unless --revoke-tokens; audited")
    func rotate() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-rotate-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("db.sqlite").path
        let options = try DatabaseOptions.parse(["--database", database])
        let (client, secret, publicID) = try await options.withStorage { storage in
            let (client, secret) = try await storage.registerClient(
                name: "Service", redirectURIs: [], grants: ["client_credentials"], scopes: ["profile"], confidential: true)
            let (app, _) = try await storage.registerClient(
                name: "App", redirectURIs: ["http://127.0.0.1/cb"], grants: ["authorization_code"], scopes: ["profile"],
                confidential: false)
            try await storage.saveToken(
                StoredToken(
                    hash: "t1", kind: .access, userID: nil, clientID: client.id, scope: "profile", family: "f1",
                    expiresAt: Int64.max / 2, state: "active"))
            return (client, try #require(secret), app.id)
        }
        try await ClientsCommand.Rotate.parse([client.id, "--database", database]).run()
        try await options.withStorage { storage in
            let stored = try #require(try await storage.client(id: client.id))
            #expect(stored.secretHash != Secrets.hash(secret), "the old secret no longer matches")
            #expect(try await storage.token(hash: "t1")?.state == "active", "tokens stay without --revoke-tokens")
        }
        try await ClientsCommand.Rotate.parse([client.id, "--revoke-tokens", "--database", database]).run()
        try await options.withStorage { storage in
            #expect(try await storage.token(hash: "t1")?.state == "revoked")
            let events = try await (storage as? any AuditStorage)?.auditEvents(AuditQuery(actionPrefix: "client.")) ?? []
            let rotations = events.filter { $0.action == AuditAction.clientSecretRotated && $0.subject == client.id }
            #expect(rotations.map { $0.detail["tokens_revoked"] } == ["false", "true"])
            #expect(rotations.allSatisfy { $0.actor == AuditEvent.operatorActor })
        }
        await #expect(throws: (any Error).self, "a public client has no secret") {
            try await ClientsCommand.Rotate.parse([publicID, "--database", database]).run()
        }
        await #expect(throws: (any Error).self, "an unknown client") {
            try await ClientsCommand.Rotate.parse(["nobody", "--database", database]).run()
        }
    }
}
