import Foundation
@_spi(OutpostInternal) import OutpostSupport
import Synchronization

/// One outgoing call that waits for its answer.
struct PendingCall: Codable, Sendable, Hashable {
    var id: String
    var scheme: String
    var action: String
    var createdAt: Date
    var expiresAt: Date
}

/// Outgoing calls that wait for an answer, kept in a JSON file readable by its owner only,
/// so that an answer arriving after a restart is still recognised. Expired entries are dropped.
///
/// The entries live in memory behind a `Mutex` that is held only to read or change them; the
/// file is rewritten (atomically, with `fsync`) on ``BlockingPool``, never on the cooperative pool
/// and never under that `Mutex`.
final class PendingCallStore: Sendable {
    private struct File: Codable {
        var version: Int
        var pending: [PendingCall]
    }

    private struct Entries {
        var calls: [String: PendingCall]
        /// Counts the changes; ``PendingCallStore/persistLatest()`` skips a file already this new.
        var generation = 0
    }

    let fileURL: URL
    private let entries: Mutex<Entries>
    /// The generation the file holds. Held while writing, on a pool thread, so that writes never
    /// overlap and the last one leaves the newest entries.
    private let written = Mutex(0)

    /// Loads the file (a missing file is an empty store) and drops expired entries. Reads the file
    /// on the calling thread; ``opening(fileURL:now:pool:)`` reads it on the blocking pool.
    convenience init(fileURL: URL, now: Date = Date()) throws(CallbackError) {
        self.init(fileURL: fileURL, loaded: try Self.load(fileURL, now: now))
    }

    /// Loads the file like ``init(fileURL:now:)``, but reads and decodes it on `pool`'s threads, off
    /// the cooperative pool.
    static func opening(fileURL: URL, now: Date = Date(), pool: BlockingPool = .shared) async throws(CallbackError)
        -> PendingCallStore
    {
        let loaded: Loaded
        do {
            loaded = try await pool.run { try Self.load(fileURL, now: now) }
        } catch let error as CallbackError {
            throw error
        } catch {
            throw CallbackError(code: .storeFailed, url: fileURL.path, detail: "\(error)")
        }
        return PendingCallStore(fileURL: fileURL, loaded: loaded)
    }

    /// What the file held: the calls not yet expired, and whether expired ones were dropped.
    private struct Loaded: Sendable {
        var calls: [String: PendingCall] = [:]
        var dropped = false
    }

    private init(fileURL: URL, loaded: Loaded) {
        self.fileURL = fileURL
        entries = Mutex(Entries(calls: loaded.calls, generation: loaded.dropped ? 1 : 0))
        if loaded.dropped { persistInBackground() }
    }

    /// Reads and decodes the file. Blocks.
    private static func load(_ fileURL: URL, now: Date) throws(CallbackError) -> Loaded {
        var loaded = Loaded()
        guard FileManager.default.fileExists(atPath: fileURL.path) else { return loaded }
        let file: File
        do {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .secondsSince1970
            file = try decoder.decode(File.self, from: Data(contentsOf: fileURL))
        } catch {
            throw CallbackError(
                code: .storeFailed, url: fileURL.path,
                detail: "\(fileURL.path) is not a readable pending-call store; move it away to start afresh: \(error)")
        }
        for call in file.pending {
            if call.expiresAt > now { loaded.calls[call.id] = call } else { loaded.dropped = true }
        }
        return loaded
    }

    /// The pending calls, oldest first.
    var all: [PendingCall] {
        entries.withLock { Self.ordered($0.calls) }
    }

    /// Adds a call (dropping expired ones) and waits until the file holds it.
    ///
    /// - Throws: ``CallbackError/Code/storeFailed`` when the file cannot be written; the call is
    ///   then not kept.
    func insert(_ call: PendingCall, now: Date = Date()) async throws(CallbackError) {
        entries.withLock { entries in
            entries.calls = entries.calls.filter { $0.value.expiresAt > now }
            entries.calls[call.id] = call
            entries.generation += 1
        }
        do {
            try await flush()
        } catch {
            entries.withLock { entries in
                entries.calls[call.id] = nil
                entries.generation += 1
            }
            persistInBackground()
            throw error
        }
    }

    /// Removes and returns a call. The file is rewritten in the background; a failure to rewrite
    /// it is not reported: the entry is gone from memory and expires from the file in time.
    @discardableResult
    func remove(_ id: String) -> PendingCall? {
        let removed = entries.withLock { entries in
            let removed = entries.calls.removeValue(forKey: id)
            if removed != nil { entries.generation += 1 }
            return removed
        }
        if removed != nil { persistInBackground() }
        return removed
    }

    /// Waits until the file holds every change made before the call.
    func flush() async throws(CallbackError) {
        do {
            try await BlockingPool.shared.run { [self] in try persistLatest() }
        } catch let error as CallbackError {
            throw error
        } catch {
            throw CallbackError(code: .storeFailed, url: fileURL.path, detail: "\(error)")
        }
    }

    private func persistInBackground() {
        BlockingPool.shared.submit { [self] in try? persistLatest() }
    }

    /// Writes the current entries unless the file already holds them. Blocks: runs on the pool.
    private func persistLatest() throws(CallbackError) {
        try written.withLock { (written: inout Int) throws(CallbackError) in
            let (calls, generation) = entries.withLock { ($0.calls, $0.generation) }
            guard generation != written else { return }
            try Self.write(calls, to: fileURL)
            written = generation
        }
    }

    private static func ordered(_ calls: [String: PendingCall]) -> [PendingCall] {
        calls.values.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
    }

    /// Writes the entries as JSON, atomically, readable by the owner only.
    private static func write(_ calls: [String: PendingCall], to url: URL) throws(CallbackError) {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        do {
            let data = try encoder.encode(File(version: 1, pending: ordered(calls)))
            try AtomicFile.write(data, to: url)
        } catch {
            throw CallbackError(code: .storeFailed, url: url.path, detail: "cannot write \(url.path): \(error)")
        }
    }
}
