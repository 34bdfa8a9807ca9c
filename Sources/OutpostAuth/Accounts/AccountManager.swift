public import Foundation
@_spi(OutpostInternal) import OutpostCore
@_spi(OutpostInternal) import OutpostSupport

/// Several signed-in accounts, on one server or several, one of them active.
///
/// ```swift
/// let accounts = AccountManager(
///     listFile: support.appending(path: "accounts.json"),
///     credentials: FileCredentialStore(fileURL: support.appending(path: "credentials.json")),
///     makeAuthenticator: { account, store in
///         try await Authenticator.discover(issuer: account.server, client: client, registration: registration, store: store)
///     })
/// let ada = try await accounts.add(server: api, name: "ada") { try await $0.signInWithBrowser() }
/// try await accounts.use(ada.id)
/// let signed = OutpostClient(configuration: .init(baseURL: api), middlewares: [ActiveAccountMiddleware(accounts: accounts)])
/// ```
///
/// - Every account has its own ``Authenticator``, made by `makeAuthenticator` over a view of the
///   credential store that keeps each account's credential under a key of its own: give the
///   authenticator that store, or accounts would share a credential.
/// - The list (ids, servers, names, the active id; no secret) is a JSON file written atomically with
///   mode 0600, its I/O in order on the shared blocking threads, off Swift's cooperative pool.
/// - ``remove(_:revoke:)`` signs one account out (revokes its tokens, deletes its credential) and
///   leaves the others alone.
/// - ``changes()`` reports every addition, removal and switch.
public actor AccountManager {
    /// Makes the authenticator of `account`; it must keep its credential in `store`.
    public typealias AuthenticatorFactory =
        @Sendable (_ account: Account, _ store: any CredentialStore) async throws -> Authenticator

    /// The accounts file.
    public nonisolated let listFile: URL
    private let credentials: any CredentialStore
    private let makeAuthenticator: AuthenticatorFactory
    private let io = SerialBlockingQueue()

    private var list: AccountList?
    private var authenticators: [String: Authenticator] = [:]
    private var observers: [UUID: AsyncStream<AccountChange>.Continuation] = [:]

    /// The largest accounts file read.
    static let maxFileBytes = 1024 * 1024

    public init(listFile: URL, credentials: any CredentialStore, makeAuthenticator: @escaping AuthenticatorFactory) {
        self.listFile = listFile
        self.credentials = credentials
        self.makeAuthenticator = makeAuthenticator
    }

    struct AccountList: Codable, Sendable {
        var version = 1
        var active: String?
        var accounts: [Account] = []
    }

    // MARK: Reading

    /// Every account, in the order they were added.
    ///
    /// - Throws: ``AuthError`` ``AuthError/Code/storeCorrupt`` when the file is not an accounts file
    ///   (it is left alone), ``AuthError/Code/storeFailed`` when it cannot be read.
    public func accounts() async throws -> [Account] { try await loaded().accounts }

    /// The active account: the one ``use(_:)`` chose, else the first added; `nil` with no account.
    public func activeAccount() async throws -> Account? {
        let list = try await loaded()
        return list.accounts.first { $0.id == list.active }
    }

    /// The authenticator of account `id`, made on first use.
    ///
    /// - Throws: ``AuthError`` ``AuthError/Code/notSignedIn`` when there is no such account.
    public func authenticator(for id: String) async throws -> Authenticator {
        if let existing = authenticators[id] { return existing }
        guard let account = try await loaded().accounts.first(where: { $0.id == id }) else {
            throw Self.unknown(id)
        }
        return try await authenticator(for: account)
    }

    /// The active account's authenticator; `nil` with no account.
    public func activeAuthenticator() async throws -> Authenticator? {
        guard let active = try await activeAccount() else { return nil }
        return try await authenticator(for: active.id)
    }

    // MARK: Changing

    /// Signs an account in with `signIn` (given the account's new authenticator) and adds it to the
    /// list; it becomes the active account when there was none. Signing in again with an existing id
    /// replaces that account's credential. Nothing is added when `signIn` throws.
    ///
    /// - Parameters:
    ///   - server: The server's base URL, given to `makeAuthenticator` in the ``Account``.
    ///   - name: A name to show, e.g. the username.
    ///   - id: Default: ``Account/defaultID(name:server:)``.
    ///   - signIn: Signs in with the account's authenticator, by any flow.
    @discardableResult
    public func add(
        server: URL, name: String, id: String? = nil,
        signIn: @Sendable (Authenticator) async throws -> Credential
    ) async throws -> Account {
        let account = Account(id: id ?? Account.defaultID(name: name, server: server), server: server, name: name)
        let authenticator = try await authenticator(for: account)
        _ = try await signIn(authenticator)
        var list = try await loaded()
        var kept = account
        if let index = list.accounts.firstIndex(where: { $0.id == account.id }) {
            kept.addedAt = list.accounts[index].addedAt
            list.accounts[index] = kept
        } else {
            list.accounts.append(kept)
        }
        let activated = list.active == nil
        if activated { list.active = kept.id }
        try await save(list)
        emit(.added(kept))
        if activated { emit(.activated(kept)) }
        return kept
    }

    /// Makes account `id` the active one.
    ///
    /// - Throws: ``AuthError`` ``AuthError/Code/notSignedIn`` when there is no such account.
    public func use(_ id: String) async throws {
        var list = try await loaded()
        guard let account = list.accounts.first(where: { $0.id == id }) else { throw Self.unknown(id) }
        guard list.active != id else { return }
        list.active = id
        try await save(list)
        emit(.activated(account))
    }

    /// Signs account `id` out and removes it: its tokens are revoked at its server (with `revoke`),
    /// its credential deleted, and no other account is touched. When it was the active account, the
    /// first remaining one becomes active.
    ///
    /// - Throws: ``AuthError`` ``AuthError/Code/notSignedIn`` when there is no such account;
    ///   ``AuthError/Code/revocationFailed`` when the server could not revoke the tokens (the account
    ///   is removed nonetheless).
    public func remove(_ id: String, revoke: Bool = true) async throws {
        var list = try await loaded()
        guard let account = list.accounts.first(where: { $0.id == id }) else { throw Self.unknown(id) }
        let authenticator = try await self.authenticator(for: account)
        var revocationError: (any Error)?
        do {
            try await authenticator.signOut(revoke: revoke)
        } catch let error as AuthError where error.code == .revocationFailed {
            revocationError = error
        }
        list.accounts.removeAll { $0.id == id }
        authenticators[id] = nil
        let wasActive = list.active == id
        if wasActive { list.active = list.accounts.first?.id }
        try await save(list)
        emit(.removed(account))
        if wasActive { emit(.activated(list.accounts.first)) }
        if let revocationError { throw revocationError }
    }

    /// Every change from now on, to each caller its own sequence; it ends when the caller stops iterating.
    public func changes() -> AsyncStream<AccountChange> {
        let (stream, continuation) = AsyncStream.makeStream(of: AccountChange.self, bufferingPolicy: .bufferingNewest(64))
        let token = UUID()
        observers[token] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { await self?.stopObserving(token) }
        }
        return stream
    }

    // MARK: Inside

    private func stopObserving(_ token: UUID) { observers[token] = nil }

    private func emit(_ change: AccountChange) {
        for observer in observers.values { observer.yield(change) }
    }

    private func authenticator(for account: Account) async throws -> Authenticator {
        if let existing = authenticators[account.id] { return existing }
        let made = try await makeAuthenticator(account, AccountCredentialStore(base: credentials, accountID: account.id))
        authenticators[account.id] = made
        return made
    }

    private func loaded() async throws -> AccountList {
        if let list { return list }
        let file = listFile
        let read = try await io.run { try Self.read(file) }
        if let list { return list }  // another call loaded it meanwhile
        list = read
        return read
    }

    private func save(_ updated: AccountList) async throws {
        let file = listFile
        try await io.run { try Self.write(updated, to: file) }
        list = updated
    }

    static func read(_ file: URL) throws -> AccountList {
        let data: Data?
        do {
            data = try AtomicFile.read(file, maxBytes: maxFileBytes)
        } catch {
            throw AuthError(.storeFailed, "The accounts file \(file.path) could not be read: \(error)", underlying: error)
        }
        guard let data else { return AccountList() }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        do {
            let list = try decoder.decode(AccountList.self, from: data)
            guard Set(list.accounts.map(\.id)).count == list.accounts.count else {
                throw AuthError(.storeCorrupt, "duplicate account ids")
            }
            return list
        } catch {
            throw AuthError(
                .storeCorrupt,
                "The accounts file \(file.path) is not a valid accounts file (\(data.count) bytes); "
                    + "it was left as it is: move it aside or delete it, then sign in again",
                underlying: error)
        }
    }

    static func write(_ list: AccountList, to file: URL) throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        do {
            try AtomicFile.createFolder(file.deletingLastPathComponent())
            try AtomicFile.write(try encoder.encode(list), to: file, sync: true)
        } catch {
            throw AuthError(.storeFailed, "The accounts file \(file.path) could not be written: \(error)", underlying: error)
        }
    }

    static func unknown(_ id: String) -> AuthError {
        AuthError(.notSignedIn, "There is no account '\(id)'; add it by signing in first")
    }
}
