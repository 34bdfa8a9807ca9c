public import Foundation
@_spi(OutpostInternal) import OutpostSupport

/// Which process refreshes a credential that several processes share (an app and its widget, two
/// CLI runs): a small file naming the holder of each account's refresh and until when.
///
/// An ``Authenticator`` claims the lease inside its store's
/// ``CredentialStore/withExclusiveAccess(account:_:)`` (a brief file lock), lets go of that lock,
/// spends the refresh token over the network, and takes the lock again only to store the result
/// and release the lease. So no file lock is ever held across a network call or a suspension
/// (which would get an app with a lock on a file in its App Group container killed with
/// `0xdead10cc`). Another process that finds the lease held waits for it, then reads the
/// credential the holder stored.
///
/// A holder that is suspended or killed mid-refresh keeps its lease only until it expires
/// (``duration``); then another process refreshes with the same refresh token. The server's reuse
/// grace window (`AuthConfiguration.refreshReuseGrace` of Outpost's server, 30 seconds by default,
/// longer than the lease's 20) answers that second exchange with the same new pair, so neither
/// process is signed out.
///
/// Read and written only inside the store's exclusive access: the lease has no lock of its own.
public struct RefreshLease: Sendable {
    /// The lease file.
    public let fileURL: URL
    /// How long a claim holds when its holder does not release it. Default: 20 seconds.
    public var duration: Duration
    /// Put before every account name in the file, so that several views of one store (the
    /// accounts of an ``AccountManager``) keep apart leases of the same account name.
    public var prefix: String

    public init(fileURL: URL, duration: Duration = .seconds(20), prefix: String = "") {
        self.fileURL = fileURL
        self.duration = duration
        self.prefix = prefix
    }

    /// The outcome of ``claim(account:holder:now:)``.
    public enum Claim: Sendable, Equatable {
        /// The lease is the caller's until `until`.
        case claimed(until: Date)
        /// Another holder has it until `until`.
        case heldElsewhere(until: Date)
    }

    struct Holding: Codable, Equatable {
        var holder: String
        var until: Date
    }

    struct Contents: Codable {
        var version: Int
        var leases: [String: Holding]
    }

    /// Claims `account`'s lease for `holder` unless another holder's claim is still running.
    /// Expired claims of other accounts are dropped on the way.
    ///
    /// - Throws: ``AuthError`` ``AuthError/Code/storeFailed`` when the file cannot be written.
    public func claim(account: String, holder: String, now: Date = Date()) async throws -> Claim {
        let lease = self
        return try await BlockingPool.shared.run {
            var contents = lease.read()
            let key = lease.prefix + account
            contents.leases = contents.leases.filter { $0.value.until > now }
            if let current = contents.leases[key], current.holder != holder {
                return .heldElsewhere(until: current.until)
            }
            let until = now.addingTimeInterval(lease.duration.inSeconds)
            contents.leases[key] = Holding(holder: holder, until: until)
            try lease.write(contents)
            return .claimed(until: until)
        }
    }

    /// Ends `holder`'s claim on `account`'s lease; another holder's claim is left as it is.
    public func release(account: String, holder: String) async throws {
        let lease = self
        try await BlockingPool.shared.run {
            var contents = lease.read()
            let key = lease.prefix + account
            guard contents.leases[key]?.holder == holder else { return }
            contents.leases[key] = nil
            try lease.write(contents)
        }
    }

    /// The file's leases; none when there is no file or it is not a lease file (a crash can leave
    /// at most an old lease behind, since writes are atomic, and a lease expires by itself).
    func read() -> Contents {
        guard let data = try? Data(contentsOf: fileURL), data.count <= 1 << 20,
            let contents = try? JSONDecoder().decode(Contents.self, from: data)
        else { return Contents(version: 1, leases: [:]) }
        return contents
    }

    func write(_ contents: Contents) throws {
        do {
            try FileManager.default.createDirectory(
                at: fileURL.deletingLastPathComponent(), withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            try AtomicFile.write(try JSONEncoder().encode(contents), to: fileURL)
        } catch {
            throw AuthError(.storeFailed, "Could not write the refresh lease \(fileURL.path): \(error)", underlying: error)
        }
    }
}
