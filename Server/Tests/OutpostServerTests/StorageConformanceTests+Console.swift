import Foundation
@_spi(OutpostInternal) import OutpostCore
import OutpostServerTesting
import Testing

@testable import OutpostServer

/// What the admin console's operations pages read and write, on every backend: a client's secret
/// replaced, the newest changes first, the audit log newest first.
extension StorageConformanceTests {
    @Test("Clients: a confidential client's secret is replaced, its tokens revoked only on request", arguments: backends)
    func replaceClientSecret(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, _ in
            let (service, _) = try await storage.registerClient(
                name: "Service", redirectURIs: [], grants: ["client_credentials"], scopes: [], confidential: true)
            let (app, _) = try await storage.registerClient(
                name: "App", redirectURIs: ["https://app.example/cb"], grants: ["authorization_code"], scopes: [],
                confidential: false)
            let token = StoredToken(
                hash: "h1", kind: .access, userID: nil, clientID: service.id, scope: "", family: "f1",
                expiresAt: Int64.max / 2, state: "active")
            try await storage.saveToken(token)

            #expect(try await storage.replaceClientSecret(id: service.id, secretHash: "new-1", revokeTokens: false))
            #expect(try await storage.client(id: service.id)?.secretHash == "new-1")
            #expect(try await storage.token(hash: "h1")?.state == "active")
            #expect(try await storage.replaceClientSecret(id: service.id, secretHash: "new-2", revokeTokens: true))
            #expect(try await storage.client(id: service.id)?.secretHash == "new-2")
            #expect(try await storage.token(hash: "h1")?.state == "revoked")
            // A public client has no secret to replace; an unknown one neither.
            #expect(try await !storage.replaceClientSecret(id: app.id, secretHash: "x", revokeTokens: true))
            #expect(try await storage.client(id: app.id)?.secretHash == nil)
            #expect(try await !storage.replaceClientSecret(id: "oc_none", secretHash: "x", revokeTokens: true))
        }
    }

    @Test("Change feed: the latest changes, newest first, of one type or all, before a position", arguments: backends)
    func latestChanges(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, _ in
            let feed = try feed(storage)
            #expect(try await feed.latestChanges(type: nil, before: .max, limit: 10).isEmpty)
            for index in 0..<5 {
                _ = try await storage.createRecord(
                    type: index % 2 == 0 ? "notes" : "todos", fields: ["i": .int(index)], owner: nil)
            }
            let all = try await feed.changes(type: nil, after: 0, limit: 100)
            let latest = try await feed.latestChanges(type: nil, before: .max, limit: 3)
            #expect(latest.map(\.position) == all.suffix(3).reversed().map(\.position))
            let notes = try await feed.latestChanges(type: "notes", before: .max, limit: 10)
            #expect(notes.map(\.record.type) == ["notes", "notes", "notes"])
            #expect(zip(notes, notes.dropFirst()).allSatisfy { $0.position > $1.position })
            let older = try await feed.latestChanges(type: nil, before: latest[2].position, limit: 10)
            #expect(older.map(\.position) == all.prefix(2).reversed().map(\.position))
        }
    }

    @Test("Audit log: newest first, before an id, with the filters", arguments: backends)
    func auditNewestFirst(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, _ in
            let audit = try #require(storage as? any AuditStorage)
            for index in 0..<6 {
                try await audit.appendAuditEvent(
                    AuditEvent(
                        time: 1000 + Int64(index), actor: nil, action: index % 2 == 0 ? "a.even" : "b.odd", subject: "\(index)"))
            }
            let newest = try await audit.auditEvents(AuditQuery(limit: 4, newestFirst: true))
            #expect(newest.compactMap(\.subject) == ["5", "4", "3", "2"])
            let next = try await audit.auditEvents(AuditQuery(beforeID: newest[3].id, limit: 4, newestFirst: true))
            #expect(next.compactMap(\.subject) == ["1", "0"])
            let even = try await audit.auditEvents(AuditQuery(since: 1001, actionPrefix: "a.", newestFirst: true))
            #expect(even.compactMap(\.subject) == ["4", "2"])
            // Oldest first stays the default.
            #expect(try await audit.auditEvents(AuditQuery(limit: 2)).compactMap(\.subject) == ["0", "1"])
        }
    }
}
