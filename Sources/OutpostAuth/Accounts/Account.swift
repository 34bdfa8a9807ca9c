public import Foundation

/// One signed-in account of an ``AccountManager``: who, on which server.
///
/// It holds no secret: the credential lives in the manager's ``CredentialStore``, under a key of this
/// account's own.
public struct Account: Sendable, Hashable, Codable, Identifiable {
    /// Stable and unique within the manager, e.g. `ada@api.example.com`.
    public var id: String
    /// The server's base URL (its OAuth issuer).
    public var server: URL
    /// A name to show, e.g. the username.
    public var name: String
    /// When the account was added.
    public var addedAt: Date

    public init(id: String, server: URL, name: String, addedAt: Date = Date()) {
        self.id = id
        self.server = server
        self.name = name
        self.addedAt = addedAt
    }

    /// `name@host[:port]`: the default id of an account.
    public static func defaultID(name: String, server: URL) -> String {
        let host = server.host ?? "server"
        return name + "@" + host + (server.port.map { ":\($0)" } ?? "")
    }
}

/// What changed in an ``AccountManager``'s list.
public enum AccountChange: Sendable, Hashable {
    /// An account was signed in and added (or signed in again, replacing its credential).
    case added(Account)
    /// An account was signed out and removed.
    case removed(Account)
    /// The active account is now this one; `nil` when no account is left.
    case activated(Account?)
}

/// A view of a credential store that files every key under one account's prefix, so that the
/// authenticators of several accounts can share one store without ever reading each other's credential.
struct AccountCredentialStore: CredentialStore {
    let base: any CredentialStore
    let accountID: String

    func key(_ account: String) -> String { "account:" + accountID + "#" + account }

    func load(account: String) async throws -> Credential? { try await base.load(account: key(account)) }

    func save(_ credential: Credential, account: String) async throws {
        try await base.save(credential, account: key(account))
    }

    func remove(account: String) async throws { try await base.remove(account: key(account)) }

    func withExclusiveAccess<T: Sendable>(account: String, _ body: @Sendable () async throws -> T) async throws -> T {
        try await base.withExclusiveAccess(account: key(account), body)
    }

    var refreshLease: RefreshLease? {
        guard var lease = base.refreshLease else { return nil }
        lease.prefix += key("")
        return lease
    }
}
