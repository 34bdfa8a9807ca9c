import Foundation
import OutpostServerTesting
import Testing

@testable import OutpostServer

extension StorageConformanceTests {
    @Test("Upstream providers: one per name and per issuer, seen by every instance; identity e-mail kept", arguments: backends)
    func upstreamProviders(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, database in
            let second = try await database.open()
            do {
                let providers = try #require(storage as? any UpstreamProviderStorage)
                let other = try #require(second as? any UpstreamProviderStorage)
                let apple = UpstreamProvider(
                    name: "apple", issuer: "https://appleid.apple.com", kind: .apple,
                    clientIDs: ["com.example.app", "com.example.web"],
                    clientSecret: "s3cret", appleTeamID: "TEAM", appleKeyID: "KEY", applePrivateKeyPEM: "PEM", createdAt: 7)
                #expect(try await providers.addUpstreamProvider(apple))
                #expect(try await other.upstreamProvider(name: "apple") == apple)
                // The same name, or the same issuer under another name: refused.
                var sameName = apple
                sameName.issuer = "https://elsewhere.example"
                #expect(try await !other.addUpstreamProvider(sameName))
                var sameIssuer = apple
                sameIssuer.name = "apple2"
                #expect(try await !other.addUpstreamProvider(sameIssuer))
                let google = UpstreamProvider(
                    name: "google", issuer: "https://accounts.google.com", kind: .openID, clientIDs: ["g"], createdAt: 8)
                #expect(try await other.addUpstreamProvider(google))
                #expect(try await providers.upstreamProviders().map(\.name) == ["apple", "google"])
                #expect(try await providers.upstreamProvider(name: "google")?.hasClientSecret == false)

                let user = try await storage.createUser(username: "relay", provider: apple.issuer, subject: "001.abc")
                try await providers.saveIdentityEmail(
                    provider: apple.issuer, subject: "001.abc", email: "x7@privaterelay.appleid.com", verified: true)
                let kept = try await other.identityEmail(provider: apple.issuer, subject: "001.abc")
                #expect(kept.email == "x7@privaterelay.appleid.com" && kept.verified == true)
                #expect(try await storage.userID(provider: apple.issuer, subject: "001.abc") == user.id)

                #expect(try await other.removeUpstreamProvider(name: "apple"))
                #expect(try await !providers.removeUpstreamProvider(name: "apple"))
                #expect(try await providers.upstreamProvider(name: "apple") == nil)
                // The link outlives the provider.
                #expect(try await storage.userID(provider: apple.issuer, subject: "001.abc") == user.id)
                try await second.close()
            } catch {
                try? await second.close()
                throw error
            }
        }
    }
}
