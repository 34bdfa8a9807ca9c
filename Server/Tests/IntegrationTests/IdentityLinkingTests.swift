import Foundation
import Outpost
import OutpostServer
import OutpostTestSupport
import Testing

/// Linking, listing and unlinking upstream identities through the SDK against a live server: an
/// account keeps a way to sign in, and nobody unlinks another user's identity.
@Suite("Linked identities: list, link, unlink", .closesWhatItOpens)
struct IdentityLinkingTests {
    @Test("a provider-only account lists its identity, cannot unlink its last one, links a second and unlinks the first")
    func linkAndUnlink() async throws {
        try await withIssuer { issuer in
            try await withAuthFixture { fixture in
                let client = try await fixture.federation(issuer)
                try await fixture.withAuthenticator(client: client) { auth in
                    let nonce = SignInNonce()
                    try await auth.signIn(
                        idToken: try await issuer.idToken(subject: "first", nonce: nonce.value, email: "p@example.com"),
                        provider: "example", nonce: nonce)
                    let owner = try await fixture.me(auth)["id"]
                    let listed = try await auth.linkedIdentities()
                    #expect(
                        listed == [
                            LinkedIdentity(
                                provider: "example", issuer: issuer.base, subject: "first", email: "p@example.com")
                        ])
                    let first = try #require(listed.first)
                    // The account has no password: its only identity stays.
                    let last = await #expect(throws: AuthError.self) { try await auth.unlinkIdentity(first) }
                    #expect(last?.oauthError == "last_sign_in_method" && last?.status == 409, "\(String(describing: last))")

                    let linked = try await auth.linkIdentity(
                        idToken: try await issuer.idToken(subject: "second/with space", nonce: nonce.value),
                        provider: "example", nonce: nonce)
                    #expect(linked.subject == "second/with space" && linked.issuer == issuer.base)
                    #expect(try await auth.linkedIdentities().map(\.subject) == ["first", "second/with space"])
                    try await auth.unlinkIdentity(first)
                    #expect(try await auth.linkedIdentities().map(\.subject) == ["second/with space"])
                    let gone = await #expect(throws: AuthError.self) { try await auth.unlinkIdentity(first) }
                    #expect(gone?.oauthError == "identity_not_linked" && gone?.status == 404)

                    // The remaining identity (its subject percent-encoded in the path) still signs in to the account.
                    try await auth.signIn(
                        idToken: try await issuer.idToken(subject: "second/with space", nonce: nonce.value),
                        provider: "example", nonce: nonce)
                    #expect(try await fixture.me(auth)["id"] == owner)
                    // The unlinked one no longer does: it makes a new account.
                    try await auth.signIn(
                        idToken: try await issuer.idToken(subject: "first", nonce: nonce.value), provider: "example",
                        nonce: nonce)
                    #expect(try await fixture.me(auth)["id"] != owner)
                }
            }
        }
    }

    @Test("an account with a password may unlink its only identity; another user's identity is not theirs to unlink")
    func passwordAccountsAndStrangers() async throws {
        try await withIssuer { issuer in
            try await withAuthFixture { fixture in
                _ = try await fixture.federation(issuer)
                let nonce = "nonce-1"
                func bearer(_ username: String) async throws -> String {
                    "Bearer " + (try #require(try await fixture.passwordTokens(username)["access_token"] as? String))
                }
                let ada = try await bearer("ada")
                let bob = try await bearer("bob")
                let linked = try await fixture.browser.postJSON(
                    fixture.base + "/me/identities",
                    ["provider": "example", "id_token": try await issuer.idToken(subject: "ada-1"), "nonce": nonce],
                    authorization: ada)
                #expect(linked.status == 201, "\(linked.body)")
                let path = fixture.base + "/me/identities/example/ada-1"
                let stranger = try await fixture.browser.delete(path, authorization: bob)
                #expect(stranger.status == 404, "\(stranger.body)")
                let anonymous = try await fixture.browser.delete(path)
                #expect(anonymous.status == 401)
                let unlinked = try await fixture.browser.delete(path, authorization: ada)
                #expect(unlinked.status == 204, "\(unlinked.body)")
                let listed = try await fixture.browser.get(fixture.base + "/me/identities", authorization: ada)
                #expect(listed.status == 200 && (listed.json["identities"] as? [Any])?.isEmpty == true, "\(listed.body)")
            }
        }
    }

    @Test("two unlinks at once of a provider-only account's two identities: one succeeds, the other keeps the last")
    func concurrentUnlinks() async throws {
        try await withIssuer { issuer in
            try await withAuthFixture { fixture in
                let client = try await fixture.federation(issuer)
                let signedIn = try await fixture.exchange(try await issuer.idToken(subject: "one"), client: client)
                let bearer = "Bearer " + (try #require(signedIn.json["access_token"] as? String))
                let linked = try await fixture.browser.postJSON(
                    fixture.base + "/me/identities",
                    ["provider": "example", "id_token": try await issuer.idToken(subject: "two"), "nonce": "nonce-1"],
                    authorization: bearer)
                #expect(linked.status == 201, "\(linked.body)")
                let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                    for subject in ["one", "two"] {
                        group.addTask {
                            try await fixture.browser.delete(
                                fixture.base + "/me/identities/example/\(subject)", authorization: bearer
                            ).status
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(statuses.sorted() == [204, 409], "\(statuses)")
                let listed = try await fixture.browser.get(fixture.base + "/me/identities", authorization: bearer)
                #expect((listed.json["identities"] as? [Any])?.count == 1, "\(listed.body)")
            }
        }
    }
}
