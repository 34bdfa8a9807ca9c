import Foundation
import Outpost

/// The accounts list and the credentials file of `outpost accounts`, which the other commands read
/// too: they sign requests as the active account when its server is the one they talk to.
struct AccountFolder {
    var accountsPath: String?
    var credentialsPath: String?

    var credentialsURL: URL {
        credentialsPath.map { URL(fileURLWithPath: $0) } ?? FileCredentialStore.defaultLocation(application: "outpost")
    }

    /// Beside the credentials file unless given.
    var accountsURL: URL {
        accountsPath.map { URL(fileURLWithPath: $0) }
            ?? credentialsURL.deletingLastPathComponent().appending(path: "accounts.json")
    }

    /// A manager whose authenticators talk to each account's server through `transport`.
    func manager(transport: any ClientTransport) -> AccountManager {
        AccountManager(listFile: accountsURL, credentials: FileCredentialStore(fileURL: credentialsURL)) { account, store in
            Authenticator(
                configuration: .init(
                    registration: ClientRegistration(clientID: SignInOptions.passwordClientID, scopes: SignInOptions.scopes),
                    endpoints: .outpost(base: account.server), store: store),
                client: OutpostClient(configuration: .init(baseURL: account.server), transport: transport))
        }
    }

    /// Runs `body` with a manager whose authenticators share one transport, shut down afterwards.
    func withManager<T: Sendable>(_ body: (AccountManager) async throws -> T) async throws -> T {
        let transport = AsyncHTTPClientTransport()
        do {
            let result = try await body(manager(transport: transport))
            try await transport.shutdown()
            return result
        } catch {
            try? await transport.shutdown()
            throw error
        }
    }

    /// The account to sign with: `id` when given (an error when there is no such account), else the
    /// active account when it is for `server` (or for any server when `server` is `nil`).
    func account(id: String?, server: URL?) async throws -> Account? {
        guard FileManager.default.fileExists(atPath: accountsURL.path) else {
            if let id { throw AccountFolderError.noAccounts(id: id, file: accountsURL.path) }
            return nil
        }
        return try await withManager { manager in
            if let id {
                guard let account = try await manager.accounts().first(where: { $0.id == id }) else {
                    throw AccountFolderError.unknown(id: id, known: try await manager.accounts().map(\.id))
                }
                return account
            }
            guard let active = try await manager.activeAccount() else { return nil }
            guard let server else { return active }
            return Self.sameOrigin(active.server, server) ? active : nil
        }
    }

    /// Same scheme, host and port (a trailing slash or path does not matter).
    static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        func origin(_ url: URL) -> String {
            let scheme = url.scheme?.lowercased() ?? ""
            let port = url.port ?? (scheme == "https" ? 443 : 80)
            return "\(scheme)://\(url.host?.lowercased() ?? ""):\(port)"
        }
        return origin(a) == origin(b)
    }
}

enum AccountFolderError: Error, CustomStringConvertible {
    case noAccounts(id: String, file: String)
    case unknown(id: String, known: [String])

    var description: String {
        switch self {
        case .noAccounts(let id, let file):
            "There is no account \(id): no accounts file at \(file). Add one with: outpost accounts add --username NAME --server URL"
        case .unknown(let id, let known):
            "There is no account \(id). "
                + (known.isEmpty ? "Add one with: outpost accounts add" : "The accounts are: \(known.joined(separator: ", "))")
        }
    }
}
