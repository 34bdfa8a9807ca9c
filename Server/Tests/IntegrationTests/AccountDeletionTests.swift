import Foundation
import HTTPTypes
import Outpost
import OutpostServer
import OutpostTestSupport
import Synchronization
import Testing

/// `DELETE /me` against the live server, on SQLite and (with `OUTPOST_TEST_LIVE_BACKEND=postgres`)
/// PostgreSQL: what it removes, what it leaves, who may call it, and the SDK's way to call it.
@Suite("Account deletion", .closesWhatItOpens, .timeLimit(.minutes(3)))
struct AccountDeletionTests {
    /// Sends `request` with `token` and answers the status, and the error code of a refusal.
    static func send(_ client: OutpostClient, _ request: Request, token: String?) async throws -> (status: Int, code: String?) {
        var request = request
        if let token { request.headers[.authorization] = "Bearer \(token)" }
        do {
            let response = try await client.send(request)
            return (response.status, nil)
        } catch let error as OutpostError where error.status != nil {
            return (error.status ?? 0, error.serverCode)
        }
    }

    static func createNote(_ client: OutpostClient, _ text: String, token: String) async throws -> String? {
        var request = Request.post("/records/notes", json: ["text": .string(text)])
        request.headers[.authorization] = "Bearer \(token)"
        return try await client.send(request, decoding: JSONValue.self)["id"]?.stringValue
    }

    static func upload(_ client: OutpostClient, _ name: String, token: String) async throws -> Int {
        let request = Request(
            method: .put, path: "/files/\(name)", headers: [.contentType: "text/plain"],
            body: .data(Data("hello".utf8), contentType: "text/plain"))
        return try await send(client, request, token: token).status
    }

    static func accessToken(_ tokens: [String: Any]) throws -> String { try #require(tokens["access_token"] as? String) }

    @Test("removes the user's records (deletions in a listener's feed), files and every token; bob keeps his")
    func deletesEverything() async throws {
        try await withAuthFixture { fixture in
            let client = OutpostClient(configuration: .init(baseURL: fixture.server.baseURL))
            let listener = OutpostClient(configuration: .init(baseURL: fixture.server.baseURL))
            let subscriber = ChangesIntegrationTests.Subscriber(listener.entities())
            defer { subscriber.task.cancel() }
            let adaTokens = try await fixture.passwordTokens("ada")
            let ada = try Self.accessToken(adaTokens)
            let adaRefresh = try #require(adaTokens["refresh_token"] as? String)
            // A second family of ada's, from another sign-in.
            let adaOther = try Self.accessToken(try await fixture.passwordTokens("ada"))
            let bob = try Self.accessToken(try await fixture.passwordTokens("bob"))
            let adaNotes = [
                try #require(try await Self.createNote(client, "ada 1", token: ada)),
                try #require(try await Self.createNote(client, "ada 2", token: adaOther)),
            ]
            let bobNote = try #require(try await Self.createNote(client, "bob 1", token: bob))
            #expect(try await Self.upload(client, "ada.txt", token: ada) == 201)
            #expect(try await Self.upload(client, "bob.txt", token: bob) == 201)
            #expect(try await Self.send(client, .get("/files/ada.txt"), token: bob).status == 200)

            #expect(try await Self.send(client, .delete("/me"), token: ada) == (204, nil))

            var iterator = subscriber.changes.makeAsyncIterator()
            let changes = try await subscriber.take(5, from: &iterator)
            #expect(changes.map(\.kind) == [.created, .created, .created, .deleted, .deleted])
            #expect(Set(changes.suffix(2).map(\.id)) == Set(adaNotes))

            for token in [ada, adaOther] {
                #expect(try await Self.send(client, .get("/me"), token: token).status == 401)
            }
            let refreshed = try await fixture.token([
                "grant_type": "refresh_token", "refresh_token": adaRefresh, "client_id": fixture.publicClient.id,
            ])
            #expect(refreshed.status == 400 && refreshed.body.contains("invalid_grant"))
            let signIn = try await fixture.token([
                "grant_type": "password", "username": "ada", "password": AuthFixture.password,
                "client_id": fixture.publicClient.id,
            ])
            #expect(signIn.status == 400, "ada can no longer sign in")
            for id in adaNotes { #expect(try await Self.send(client, .get("/records/notes/\(id)"), token: bob).status == 404) }
            #expect(try await Self.send(client, .get("/files/ada.txt"), token: bob).status == 404)

            #expect(try await Self.send(client, .get("/records/notes/\(bobNote)"), token: bob).status == 200)
            #expect(try await Self.send(client, .get("/files/bob.txt"), token: bob).status == 200)
            #expect(
                try await client.send(
                    Request(method: .get, path: "/me", headers: [.authorization: "Bearer \(bob)"]), decoding: JSONValue.self)[
                        "username"] == "bob")
            for each in [client, listener] { try await each.shutdown() }
        }
    }

    @Test(
        "anonymous is 401; a client's own token 403 no_user; a token without records:write 403; a body is ignored; a second request 401"
    )
    func whoMayDelete() async throws {
        try await withAuthFixture { fixture in
            let client = OutpostClient(configuration: .init(baseURL: fixture.server.baseURL))
            #expect(try await Self.send(client, .delete("/me"), token: nil) == (401, "sign_in_required"))
            let service = try await fixture.token([
                "grant_type": "client_credentials", "client_id": fixture.confidentialClient.id,
                "client_secret": fixture.confidentialSecret, "scope": "records profile",
            ])
            let serviceToken = try #require(service.json["access_token"] as? String)
            #expect(try await Self.send(client, .delete("/me"), token: serviceToken) == (403, "no_user"))
            let profileOnly = try await fixture.token([
                "grant_type": "password", "username": "ada", "password": AuthFixture.password,
                "client_id": fixture.publicClient.id, "scope": "profile",
            ])
            let narrow = try #require(profileOnly.json["access_token"] as? String)
            #expect(try await Self.send(client, .delete("/me"), token: narrow) == (403, "insufficient_scope"))
            #expect(try await Self.send(client, .get("/me"), token: narrow).status == 200, "still there")

            // Any body is ignored; the path names no other user, so ada's token deletes ada only.
            let ada = try Self.accessToken(try await fixture.passwordTokens("ada"))
            var request = Request(method: .delete, path: "/me", body: .json(["username": "bob"]))
            request.headers[.authorization] = "Bearer \(ada)"
            #expect(try await Self.send(client, request, token: nil).status == 204)
            #expect(try await Self.send(client, .delete("/me"), token: ada) == (401, "invalid_token"))
            let bob = try Self.accessToken(try await fixture.passwordTokens("bob"))
            #expect(try await Self.send(client, .get("/me"), token: bob).status == 200)
            try await client.shutdown()
        }
    }

    @Test("two deletions at once: one 204, the other 401")
    func concurrentDeletions() async throws {
        try await withAuthFixture { fixture in
            let client = OutpostClient(configuration: .init(baseURL: fixture.server.baseURL))
            let ada = try Self.accessToken(try await fixture.passwordTokens("ada"))
            async let first = Self.send(client, .delete("/me"), token: ada)
            async let second = Self.send(client, .delete("/me"), token: ada)
            let statuses = try await [first.status, second.status].sorted()
            #expect(statuses == [204, 401])
            try await client.shutdown()
        }
    }

    @Test("writes racing a deletion land before it (and are deleted) or are refused: no record is left to the deleted id")
    func writesRacingDeletion() async throws {
        try await withAuthFixture { fixture in
            let client = OutpostClient(configuration: .init(baseURL: fixture.server.baseURL))
            let ada = try Self.accessToken(try await fixture.passwordTokens("ada"))
            let storage = try await fixture.server.openStorage()
            do {
                let adaID = try #require(try await storage.user(username: "ada")?.id)
                let (created, deleted) = try await withThrowingTaskGroup(of: (String?, Int?).self) { group in
                    for index in 0..<24 {
                        group.addTask {
                            let note = try? await Self.createNote(client, "racing \(index)", token: ada)
                            return (note, nil)
                        }
                    }
                    group.addTask { (nil, try await Self.send(client, .delete("/me"), token: ada).status) }
                    var created: [String] = []
                    var deleted: Int?
                    for try await (note, status) in group {
                        if let note { created.append(note) }
                        if let status { deleted = status }
                    }
                    return (created, deleted)
                }
                #expect(deleted == 204)
                for id in created { #expect(try await storage.record(type: "notes", id: id) == nil, "\(id) outlived its owner") }
                #expect(try await (storage as? any QuotaStorage)?.recordUsage(owner: adaID).records == 0)
                // A write after the deletion, as a storage write for the id: refused.
                await #expect(throws: (any Error).self) {
                    _ = try await storage.createRecord(type: "notes", fields: [:], owner: adaID)
                }
                try await storage.close()
            } catch {
                try? await storage.close()
                throw error
            }
            try await client.shutdown()
        }
    }

    @Test("transfer mode gives the records and files to the operator's user")
    func transferMode() async throws {
        try await withAuthFixture(configure: { $0.accountDeletion.data = .transfer(toUsername: "bob") }) { fixture in
            let client = OutpostClient(configuration: .init(baseURL: fixture.server.baseURL))
            let ada = try Self.accessToken(try await fixture.passwordTokens("ada"))
            let bob = try Self.accessToken(try await fixture.passwordTokens("bob"))
            let note = try #require(try await Self.createNote(client, "ada's", token: ada))
            #expect(try await Self.upload(client, "ada.txt", token: ada) == 201)
            #expect(try await Self.send(client, .delete("/files/ada.txt"), token: bob).status == 403, "not bob's yet")
            // bob receives deleted accounts' records: he may not delete his own account.
            #expect(try await Self.send(client, .delete("/me"), token: bob) == (409, "account_is_recipient"))

            #expect(try await Self.send(client, .delete("/me"), token: ada).status == 204)
            #expect(try await Self.send(client, .get("/me"), token: ada).status == 401)
            let storage = try await fixture.server.openStorage()
            let owner = try await storage.record(type: "notes", id: note)?.owner
            let bobID = try await storage.user(username: "bob")?.id
            try await storage.close()
            #expect(owner != nil && owner == bobID)
            // bob may now change and delete them.
            var patch = Request(method: .patch, path: "/records/notes/\(note)", body: .json(["text": "bob's now"]))
            patch.headers[.contentType] = "application/merge-patch+json"
            #expect(try await Self.send(client, patch, token: bob).status == 200)
            #expect(try await Self.send(client, .delete("/files/ada.txt"), token: bob).status == 204)
            try await client.shutdown()
        }
    }

    @Test("a hook is told first; one that fails stops the deletion and nothing is removed")
    func hooks() async throws {
        final class Hook: AccountDeletionHook {
            let seen = Mutex<[String]>([])
            let fails = Mutex(true)
            struct Refused: Error {}
            func accountWillBeDeleted(_ account: DeletingAccount) async throws {
                seen.withLock { $0.append(account.username) }
                if fails.withLock({ $0 }) { throw Refused() }
            }
        }
        let hook = Hook()
        try await withAuthFixture(configure: { $0.accountDeletion.hooks = [hook] }) { fixture in
            // No retries: the client would send the DELETE again after a 502.
            let client = OutpostClient(configuration: .init(baseURL: fixture.server.baseURL, retry: .none))
            let ada = try Self.accessToken(try await fixture.passwordTokens("ada"))
            #expect(try await Self.send(client, .delete("/me"), token: ada) == (502, "account_deletion_failed"))
            #expect(try await Self.send(client, .get("/me"), token: ada).status == 200, "nothing was removed")
            hook.fails.withLock { $0 = false }
            #expect(try await Self.send(client, .delete("/me"), token: ada).status == 204)
            #expect(hook.seen.withLock { $0 } == ["ada", "ada"])
            try await client.shutdown()
        }
    }

    @Test("the SDK: Authenticator.deleteAccount clears the credential; AccountManager.deleteAccount drops the account")
    func sdk() async throws {
        try await withAuthFixture { fixture in
            let folder = fixture.server.folder.appending(path: "accounts")
            let client = OutpostClient(configuration: .init(baseURL: fixture.server.baseURL))
            let accounts = AccountsIntegrationTests().manager(fixture, client: client, folder: folder)
            let server = fixture.server.baseURL
            let ada = try await accounts.add(server: server, name: "ada") {
                try await $0.signIn(username: "ada", password: AuthFixture.password)
            }
            let bob = try await accounts.add(server: server, name: "bob") {
                try await $0.signIn(username: "bob", password: AuthFixture.password)
            }
            let adaAuthenticator = try await accounts.authenticator(for: ada.id)
            let adaToken = try #require(try await adaAuthenticator.credential()?.accessToken)
            try await accounts.deleteAccount(ada.id)
            #expect(try await accounts.accounts().map(\.id) == [bob.id])
            #expect(try await accounts.activeAccount()?.id == bob.id)
            #expect(try await adaAuthenticator.credential() == nil)
            #expect(try await Self.send(client, .get("/me"), token: adaToken).status == 401)

            // An authenticator on its own: the server deletes, the local credential goes.
            let bobAuthenticator = try await accounts.authenticator(for: bob.id)
            try await bobAuthenticator.deleteAccount()
            #expect(try await bobAuthenticator.credential() == nil)
            await #expect(throws: AuthError.self) { try await bobAuthenticator.deleteAccount() }
            let storage = try await fixture.server.openStorage()
            let left = (try await storage.user(username: "ada"), try await storage.user(username: "bob"))
            try await storage.close()
            #expect(left.0 == nil && left.1 == nil)
            try await client.shutdown()
        }
    }
}
