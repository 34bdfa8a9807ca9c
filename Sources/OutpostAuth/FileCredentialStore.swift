public import Foundation
@_spi(OutpostInternal) import OutpostCore
@_spi(OutpostInternal) import OutpostSupport

/// Keeps credentials in a JSON file readable by its owner only: for Linux desktops, CLIs and servers.
///
/// - The file is created with mode 0600, and its folder, when created, with 0700.
/// - Writes are atomic: a temporary file in the same folder is written, flushed to disk (`fsync`)
///   and renamed over the old one, so a process dying mid-write leaves the old file intact.
/// - A file that is not a credentials file is reported (``AuthError/Code/storeCorrupt``), never
///   overwritten: move it aside or delete it.
/// - ``withExclusiveAccess(account:_:)`` holds an advisory lock (`flock`) on a `.lock` file
///   beside the store while a credential is read, compared and written, never across a network
///   call; processes sharing the file agree who refreshes through the ``refreshLease`` file
///   beside it (``RefreshLease``), so they never spend one refresh token twice.
/// - File work (reads, writes, `fsync`) runs on a small thread pool of its own, and a wait for the
///   lock on a thread of its own: a slow disk or a long-held lock never occupies the threads that
///   run Swift tasks.
///
/// One file can hold the credentials of several accounts.
public struct FileCredentialStore: CredentialStore {
    /// The credentials file.
    public let fileURL: URL
    /// The lock file beside it: `credentials.json.lock`.
    public var lockURL: URL { fileURL.deletingLastPathComponent().appending(path: fileURL.lastPathComponent + ".lock") }
    /// How long ``withExclusiveAccess(account:_:)`` waits for another process's lock. Default: 30 seconds.
    public var lockTimeout: Duration

    /// The refresh lease beside the file: `credentials.json.lease`.
    public var refreshLease: RefreshLease? {
        RefreshLease(fileURL: fileURL.deletingLastPathComponent().appending(path: fileURL.lastPathComponent + ".lease"))
    }

    public init(fileURL: URL, lockTimeout: Duration = .seconds(30)) {
        self.fileURL = fileURL
        self.lockTimeout = lockTimeout
    }

    /// `credentials.json` in the application's folder of `ConfigurationFolder.Location.standard`:
    /// `$XDG_CONFIG_HOME/<application>/` or `~/.config/<application>/` on Linux, Application
    /// Support on Apple platforms (where `KeychainCredentialStore` is the better place).
    public static func defaultLocation(application: String) -> URL {
        ConfigurationFolder.standardURL(application: application).appending(path: "credentials.json")
    }

    struct Contents: Codable {
        var version: Int
        var accounts: [String: Credential]
    }

    public func load(account: String) async throws -> Credential? {
        try await readOffPool()?.accounts[account]
    }

    public func save(_ credential: Credential, account: String) async throws {
        try await locked {
            var contents = try await readOffPool() ?? Contents(version: 1, accounts: [:])
            contents.accounts[account] = credential
            try await writeOffPool(contents)
        }
    }

    public func remove(account: String) async throws {
        try await locked {
            guard var contents = try await readOffPool(), contents.accounts[account] != nil else { return }
            contents.accounts[account] = nil
            try await writeOffPool(contents)
        }
    }

    public func withExclusiveAccess<T: Sendable>(account: String, _ body: @Sendable () async throws -> T) async throws -> T {
        try await locked(body)
    }

    // MARK: Locking

    /// Runs `body` holding the lock file (``CredentialFileLock``).
    private func locked<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        let store = self
        try await BlockingPool.shared.run { try store.createFolder() }
        return try await CredentialFileLock(path: lockURL.path, timeout: lockTimeout).run(body)
    }

    // MARK: Reading and writing

    /// ``read()`` on the blocking pool, off the cooperative threads.
    private func readOffPool() async throws -> Contents? {
        let store = self
        return try await BlockingPool.shared.run { try store.read() }
    }

    /// ``write(_:)`` on the blocking pool: the write and its `fsync` calls block their thread.
    private func writeOffPool(_ contents: Contents) async throws {
        let store = self
        try await BlockingPool.shared.run { try store.write(contents) }
    }

    /// The file's contents, `nil` when there is no file. Blocks: call it through ``readOffPool()``.
    func read() throws -> Contents? {
        let data: Data
        do {
            data = try Data(contentsOf: fileURL)
        } catch let error as CocoaError where error.code == .fileReadNoSuchFile {
            return nil
        } catch {
            if !FileManager.default.fileExists(atPath: fileURL.path) { return nil }
            throw AuthError(
                .storeFailed, "The credentials file \(fileURL.path) could not be read; check its permissions", underlying: error)
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        do {
            return try decoder.decode(Contents.self, from: data)
        } catch {
            throw AuthError(
                .storeCorrupt,
                "The credentials file \(fileURL.path) is not a valid credentials file (\(data.count) bytes); "
                    + "it was left as it is: move it aside or delete it, then sign in again",
                underlying: error)
        }
    }

    /// Writes atomically (``AtomicFile``: temporary file 0600 → fsync → rename → fsync the folder).
    /// Blocks: call it through ``writeOffPool(_:)``.
    func write(_ contents: Contents) throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(contents)
        try createFolder()
        do {
            try AtomicFile.write(data, to: fileURL)
        } catch {
            throw AuthError(.storeFailed, "Could not write \(fileURL.path): \(error)", underlying: error)
        }
    }

    private func createFolder() throws {
        let folder = fileURL.deletingLastPathComponent()
        guard !FileManager.default.fileExists(atPath: folder.path) else { return }
        do {
            try FileManager.default.createDirectory(
                at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw AuthError(.storeFailed, "The folder \(folder.path) could not be created", underlying: error)
        }
    }
}
