import Foundation
import Outpost
import OutpostServer

/// Two accounts signed in at once, switched, and one signed out without touching the other.
/// Runs after ``AuthTour``, which signed grace and linus up and opened the password grant.
enum AccountsTour {
    static func run(baseURL: URL, folder: URL, log: TourLog) async throws {
        log.section("Accounts")
        let plain = OutpostClient(configuration: .init(baseURL: baseURL))
        defer { Task { try? await plain.shutdown() } }
        let accountsFolder = folder.appending(path: "accounts")
        let accounts = AccountManager(
            listFile: accountsFolder.appending(path: "accounts.json"),
            credentials: FileCredentialStore(fileURL: accountsFolder.appending(path: "credentials.json"))
        ) { account, store in
            Authenticator(
                configuration: .init(
                    registration: ClientRegistration(
                        clientID: OutpostServer.cliPasswordClientID, scopes: ["records:read", "records:write", "profile"]),
                    endpoints: .outpost(base: account.server), store: store),
                client: plain)
        }
        let changes = await accounts.changes()
        let grace = try await accounts.add(server: baseURL, name: "grace") {
            try await $0.signIn(username: "grace", password: "demo-password-1")
        }
        let linus = try await accounts.add(server: baseURL, name: "linus") {
            try await $0.signIn(username: "linus", password: "demo-password-1")
        }
        log.step("two accounts signed in: \(try await accounts.accounts().map(\.id).joined(separator: ", "))")
        let api = OutpostClient(
            configuration: .init(baseURL: baseURL), middlewares: [ActiveAccountMiddleware(accounts: accounts)])
        defer { Task { try? await api.shutdown() } }
        func whoami() async throws -> String {
            try await api.send(.get("/me"), decoding: JSONValue.self)["username"]?.stringValue ?? "?"
        }
        log.detail("active: \(try await accounts.activeAccount()?.id ?? "-"); GET /me → \(try await whoami())")
        try await accounts.use(linus.id)
        log.step("use(\(linus.id)); GET /me → \(try await whoami())")
        try await accounts.remove(grace.id)
        log.step("remove(\(grace.id)): her tokens revoked, her credential deleted; GET /me → \(try await whoami())")
        log.detail(
            "left: \(try await accounts.accounts().map(\.id)); the list in \(accounts.listFile.lastPathComponent), mode 0600")
        var seen: [String] = []
        for await change in changes {
            switch change {
            case .added(let account): seen.append("added \(account.name)")
            case .removed(let account): seen.append("removed \(account.name)")
            case .activated(let account): seen.append("active \(account?.name ?? "none")")
            }
            if seen.count == 5 { break }  // grace was not active when removed: no switch
        }
        log.step("changes(): \(seen.joined(separator: ", "))")
    }
}
