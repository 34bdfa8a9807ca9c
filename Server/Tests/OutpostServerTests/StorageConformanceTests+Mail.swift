import Foundation
import OutpostServerTesting
import Testing

@testable import OutpostServer

extension StorageConformanceTests {
    @Test(
        "Mail tokens: single use across instances, expiring, bound to the address; a reset revokes every family and session",
        arguments: backends)
    func mailTokens(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, database in
            let second = try await database.open()
            do {
                let mails = try #require(storage as? any MailStorage)
                let other = try #require(second as? any MailStorage)
                let ada = try await storage.createUser(username: "ada", passwordHash: "old")
                let bob = try await storage.createUser(username: "bob", passwordHash: "old")
                #expect(try await mails.setEmail("Ada@Example.com", verified: true, userID: ada.id))
                #expect(try await mails.setEmail("ada@example.com", verified: false, userID: bob.id))
                #expect(try await !mails.setEmail("x@example.com", verified: true, userID: "u_missing"))
                #expect(try await other.email(userID: ada.id) == StoredEmail(address: "ada@example.com", verified: true))
                // Only verified addresses find their users.
                #expect(try await other.users(verifiedEmail: "ADA@example.com", limit: 5) == [ada.id])

                let now = Identifiers.nowMilliseconds()
                func token(_ name: String, _ purpose: StoredMailToken.Purpose, user: String = ada.id, expiresAt: Int64? = nil)
                    -> StoredMailToken
                {
                    StoredMailToken(
                        hash: Secrets.hash(name), purpose: purpose, userID: user, email: "ada@example.com",
                        expiresAt: expiresAt ?? now + 60_000)
                }
                try await mails.saveMailToken(token("reset", .reset))
                try await mails.saveMailToken(token("other-reset", .reset))
                try await mails.saveMailToken(token("expired", .reset, expiresAt: now - 1))
                try await mails.saveMailToken(token("verify", .verify, user: bob.id))
                #expect(try await other.mailToken(hash: Secrets.hash("reset"), purpose: .reset, now: now)?.userID == ada.id)
                #expect(try await other.mailToken(hash: Secrets.hash("reset"), purpose: .verify, now: now) == nil)
                #expect(try await other.mailToken(hash: Secrets.hash("expired"), purpose: .reset, now: now) == nil)
                #expect(try await other.resetPassword(tokenHash: Secrets.hash("expired"), passwordHash: "x", now: now) == nil)

                // Tokens of every family the user has, and their sessions, are revoked with the reset.
                try await storage.saveToken(
                    StoredToken(
                        hash: "h1", kind: .refresh, userID: ada.id, clientID: "c", scope: "", family: "f1",
                        expiresAt: now + 60_000,
                        state: "active"))
                try await storage.saveToken(
                    StoredToken(
                        hash: "h2", kind: .access, userID: bob.id, clientID: "c", scope: "", family: "f2",
                        expiresAt: now + 60_000,
                        state: "active"))
                try await storage.saveSession(hash: "s1", userID: ada.id, expiresAt: now + 60_000)
                async let first = mails.resetPassword(tokenHash: Secrets.hash("reset"), passwordHash: "new", now: now)
                async let again = other.resetPassword(tokenHash: Secrets.hash("reset"), passwordHash: "newer", now: now)
                let outcomes = try await [first, again]
                #expect(outcomes.compactMap { $0 } == [ada.id])  // one use, whichever instance
                let hash = try await storage.user(id: ada.id)?.passwordHash
                #expect(hash == "new" || hash == "newer")
                #expect(try await storage.token(hash: "h1")?.state == "revoked")
                #expect(try await storage.token(hash: "h2")?.state == "active")
                #expect(try await storage.sessionUser(hash: "s1", now: now) == nil)
                // The user's other reset links are spent too.
                #expect(try await other.mailToken(hash: Secrets.hash("other-reset"), purpose: .reset, now: now) == nil)

                // Verification: bound to the address it was sent to.
                #expect(try await other.mailToken(hash: Secrets.hash("verify"), purpose: .verify, now: now) != nil)
                #expect(try await mails.setEmail("bob@example.com", verified: false, userID: bob.id))
                #expect(try await other.verifyEmail(tokenHash: Secrets.hash("verify"), now: now) == nil)
                try await mails.saveMailToken(
                    StoredMailToken(
                        hash: Secrets.hash("verify-2"), purpose: .verify, userID: bob.id, email: "bob@example.com",
                        expiresAt: now + 60_000))
                #expect(try await other.verifyEmail(tokenHash: Secrets.hash("verify-2"), now: now) == bob.id)
                #expect(try await mails.verifyEmail(tokenHash: Secrets.hash("verify-2"), now: now) == nil)
                #expect(try await mails.email(userID: bob.id) == StoredEmail(address: "bob@example.com", verified: true))
                #expect(try await mails.setEmail(nil, verified: true, userID: bob.id))
                #expect(try await mails.email(userID: bob.id) == nil)
                try await second.close()
            } catch {
                try? await second.close()
                throw error
            }
        }
    }
}
