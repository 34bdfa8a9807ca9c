import Foundation
@_spi(OutpostInternal) import OutpostSupport

/// The exclusive access of a credential store shared by several processes: an advisory lock
/// (`flock`) on a lock file, held only while a credential is read, compared and written.
///
/// The wait is a blocking `flock` on a thread of its own (``FileLock``), so a long wait for another
/// process occupies no thread of the cooperative pool. A task that already holds the lock runs
/// nested bodies at once (a save inside ``CredentialStore/withExclusiveAccess(account:_:)``).
struct CredentialFileLock: Sendable {
    let path: String
    let timeout: Duration

    /// Which lock files the current task holds.
    @TaskLocal static var held: Set<String> = []

    func run<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        if Self.held.contains(path) { return try await body() }
        let lock: FileLock
        do throws(FileLockError) {
            lock = try await FileLock.acquire(path: path, timeout: timeout)
        } catch .timedOut {
            throw AuthError(.storeFailed, "Another process has held \(path) for too long; try again")
        } catch .cancelled {
            throw CancellationError()
        } catch {
            throw AuthError(.storeFailed, "Could not lock the credentials: \(error)")
        }
        defer { lock.release() }
        return try await Self.$held.withValue(Self.held.union([path])) { try await body() }
    }
}
