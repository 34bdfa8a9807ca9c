import Foundation
import Outpost
import OutpostServer
import OutpostTestSupport
import Testing

@Suite("Accounts against the live server", .closesWhatItOpens)
struct AccountsIntegrationTests {
    func manager(_ fixture: AuthFixture, client: OutpostClient, folder: URL) -> AccountManager {
        let registration = ClientRegistration(clientID: fixture.publicClient.id, scopes: ["records", "profile"])
        return AccountManager(
            listFile: folder.appending(path: "accounts.json"),
            credentials: FileCredentialStore(fileURL: folder.appending(path: "credentials.json"))
        ) { account, store in
            Authenticator(
                configuration: .init(registration: registration, endpoints: .outpost(base: account.server), store: store),
                client: client)
        }
    }

    @Test("two users signed in: switching changes who the server sees; removing one revokes only its tokens")
    func twoUsers() async throws {
        try await withAuthFixture { fixture in
            let folder = fixture.server.folder.appending(path: "accounts")
            let client = OutpostClient(configuration: .init(baseURL: fixture.server.baseURL))
            let accounts = manager(fixture, client: client, folder: folder)
            let server = fixture.server.baseURL
            let ada = try await accounts.add(server: server, name: "ada") {
                try await $0.signIn(username: "ada", password: AuthFixture.password)
            }
            let bob = try await accounts.add(server: server, name: "bob") {
                try await $0.signIn(username: "bob", password: AuthFixture.password)
            }
            let api = OutpostClient(
                configuration: .init(baseURL: server), middlewares: [ActiveAccountMiddleware(accounts: accounts)])
            func whoami() async throws -> JSONValue? { try await api.send(.get("/me"), decoding: JSONValue.self)["username"] }
            #expect(try await whoami() == "ada")
            try await accounts.use(bob.id)
            #expect(try await whoami() == "bob")

            let adaToken = try #require(try await accounts.authenticator(for: ada.id).credential()?.accessToken)
            try await accounts.remove(ada.id)
            let direct = OutpostClient(configuration: .init(baseURL: server))
            let refused = await #expect(throws: OutpostError.self) {
                try await direct.send(Request(method: .get, path: "/me", headers: [.authorization: "Bearer \(adaToken)"]))
            }
            #expect(refused?.code == .unauthorized, "ada's token was revoked at the server")
            #expect(try await whoami() == "bob", "bob is untouched")

            // Another run of the program finds bob, active, with his stored credential.
            let reopened = manager(fixture, client: client, folder: folder)
            #expect(try await reopened.accounts().map(\.id) == [bob.id])
            #expect(try await reopened.activeAccount()?.id == bob.id)
            let again = OutpostClient(
                configuration: .init(baseURL: server), middlewares: [ActiveAccountMiddleware(accounts: reopened)])
            #expect(try await again.send(.get("/me"), decoding: JSONValue.self)["username"] == "bob")
            for each in [api, direct, again, client] { try await each.shutdown() }
        }
    }
}
