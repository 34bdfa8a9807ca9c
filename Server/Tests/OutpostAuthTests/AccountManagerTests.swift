import Foundation
@_spi(OutpostInternal) import OutpostCore
import OutpostTesting
import Synchronization
import Testing

@testable import OutpostAuth

@Suite("Accounts")
struct AccountManagerTests {
    let folder = FileManager.default.temporaryDirectory.appending(path: "outpost-accounts-\(UUID().uuidString)")
    var listFile: URL { folder.appending(path: "config/accounts.json") }

    /// A token endpoint that issues `<username>-access` / `<username>-refresh` and accepts revocations.
    static func server() -> ScriptedTransport {
        authServer { request in
            switch request.path {
            case "/oauth/token":
                let user = request.form["username"] ?? "?"
                return .token("\(user)-access", refresh: "\(user)-refresh")
            case "/oauth/revoke": return Reply(status: 200, body: Data())
            default: return .json(404, ["error": "not_found"])
            }
        }
    }

    func manager(_ transport: ScriptedTransport, store: any CredentialStore) -> AccountManager {
        let client = OutpostClient(configuration: .init(baseURL: URL(string: "https://id.example")!), transport: transport)
        return AccountManager(listFile: listFile, credentials: store) { account, store in
            Authenticator(
                configuration: .init(
                    registration: ClientRegistration(clientID: "app"), endpoints: .outpost(base: account.server), store: store),
                client: client)
        }
    }

    static func password(_ user: String) -> @Sendable (Authenticator) async throws -> Credential {
        { try await $0.signIn(username: user, password: "pw") }
    }

    @Test("two accounts: the first added is active, the list persists (0600), each credential under its own key")
    func addAndPersist() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = InMemoryCredentialStore()
        let accounts = manager(Self.server(), store: store)
        let server = URL(string: "https://id.example")!
        let ada = try await accounts.add(server: server, name: "ada", signIn: Self.password("ada"))
        let bob = try await accounts.add(
            server: URL(string: "https://other.example:8443")!, name: "bob", signIn: Self.password("bob"))
        #expect(ada.id == "ada@id.example" && bob.id == "bob@other.example:8443")
        #expect(try await accounts.activeAccount() == ada)
        #expect(try await accounts.authenticator(for: ada.id).credential()?.accessToken == "ada-access")
        #expect(try await accounts.authenticator(for: bob.id).credential()?.accessToken == "bob-access")
        #expect(await store.load(account: "app") == nil, "no credential under the bare client id")

        let permissions = try FileManager.default.attributesOfItem(atPath: listFile.path)[.posixPermissions] as? Int
        #expect(permissions == 0o600)
        let text = try String(contentsOf: listFile, encoding: .utf8)
        #expect(!text.contains("access") && !text.contains("refresh"), "the list holds no token")

        let reopened = manager(Self.server(), store: store)
        #expect(try await reopened.accounts().map(\.id) == [ada.id, bob.id])
        #expect(try await reopened.activeAccount()?.id == ada.id)
        #expect(try await reopened.authenticator(for: bob.id).credential()?.accessToken == "bob-access")
    }

    @Test("switching and removing: only the removed account's tokens are revoked and its credential deleted")
    func switchAndRemove() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let transport = Self.server()
        let accounts = manager(transport, store: InMemoryCredentialStore())
        let server = URL(string: "https://id.example")!
        let changes = await accounts.changes()
        let ada = try await accounts.add(server: server, name: "ada", signIn: Self.password("ada"))
        let bob = try await accounts.add(server: server, name: "bob", signIn: Self.password("bob"))
        try await accounts.use(bob.id)
        #expect(try await accounts.activeAccount() == bob)
        let bobAuth = try await accounts.authenticator(for: bob.id)
        try await accounts.remove(bob.id)
        #expect(try await accounts.activeAccount() == ada, "the remaining account becomes active")
        #expect(try await bobAuth.credential() == nil)
        #expect(try await accounts.authenticator(for: ada.id).credential()?.accessToken == "ada-access")
        let revoked = transport.requests.filter { $0.path == "/oauth/revoke" }.map { $0.form["token"] ?? "" }
        #expect(Set(revoked) == ["bob-refresh", "bob-access"])
        await #expect(throws: AuthError.self) { try await accounts.use(bob.id) }

        var seen: [AccountChange] = []
        for await change in changes {
            seen.append(change)
            if seen.count == 6 { break }
        }
        #expect(seen == [.added(ada), .activated(ada), .added(bob), .activated(bob), .removed(bob), .activated(ada)])
    }

    @Test("a failed sign-in adds nothing; an unknown id is notSignedIn")
    func failures() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let transport = authServer { _ in .oauthError("invalid_grant") }
        let accounts = manager(transport, store: InMemoryCredentialStore())
        await #expect(throws: AuthError.self) {
            try await accounts.add(server: URL(string: "https://id.example")!, name: "ada", signIn: Self.password("ada"))
        }
        #expect(try await accounts.accounts().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: listFile.path))
        let error = await #expect(throws: AuthError.self) { try await accounts.remove("nobody@x") }
        #expect(error?.code == .notSignedIn)
    }

    @Test("a damaged accounts file is reported and left as it is")
    func corruptFile() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: listFile.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data("{\"version\":1,\"accounts\":[{\"id\":".utf8).write(to: listFile)
        let accounts = manager(Self.server(), store: InMemoryCredentialStore())
        let error = await #expect(throws: AuthError.self) { try await accounts.accounts() }
        #expect(error?.code == .storeCorrupt)
        #expect(try Data(contentsOf: listFile) == Data("{\"version\":1,\"accounts\":[{\"id\":".utf8))
    }
}
