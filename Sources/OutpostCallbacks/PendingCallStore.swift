import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

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
final class PendingCallStore: Sendable {
    private struct File: Codable {
        var version: Int
        var pending: [PendingCall]
    }

    let fileURL: URL
    private let entries: Mutex<[String: PendingCall]>

    /// Loads the file (a missing file is an empty store) and drops expired entries.
    init(fileURL: URL, now: Date = Date()) throws(CallbackError) {
        self.fileURL = fileURL
        var loaded: [String: PendingCall] = [:]
        var dropped = false
        if FileManager.default.fileExists(atPath: fileURL.path) {
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
                if call.expiresAt > now { loaded[call.id] = call } else { dropped = true }
            }
        }
        entries = Mutex(loaded)
        if dropped {
            let snapshot = loaded
            try Self.persist(snapshot, to: fileURL)
        }
    }

    /// The pending calls, oldest first.
    var all: [PendingCall] {
        entries.withLock { $0.values.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) } }
    }

    /// Adds a call (dropping expired ones) and writes the file.
    func insert(_ call: PendingCall, now: Date = Date()) throws(CallbackError) {
        let url = fileURL
        try entries.withLock { (entries: inout [String: PendingCall]) throws(CallbackError) in
            var updated = entries.filter { $0.value.expiresAt > now }
            updated[call.id] = call
            try Self.persist(updated, to: url)
            entries = updated
        }
    }

    /// Removes and returns a call. A failure to rewrite the file is not reported: the entry
    /// is gone from memory and expires from the file in time.
    @discardableResult
    func remove(_ id: String) -> PendingCall? {
        let url = fileURL
        return entries.withLock { entries in
            guard let removed = entries.removeValue(forKey: id) else { return nil }
            try? Self.persist(entries, to: url)
            return removed
        }
    }

    /// Writes the entries as JSON: a temporary file created with mode 0600, then renamed.
    private static func persist(_ entries: [String: PendingCall], to url: URL) throws(CallbackError) {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        let pending = entries.values.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
        let data: Data
        do {
            data = try encoder.encode(File(version: 1, pending: pending))
        } catch {
            throw CallbackError(code: .storeFailed, url: url.path, detail: "\(error)")
        }
        let path = url.path
        let temporary = path + ".tmp-\(UUID().uuidString)"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw CallbackError(code: .storeFailed, url: path, detail: "cannot create \(temporary): errno \(errno)")
        }
        _ = fchmod(descriptor, 0o600)
        let written = data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> Bool in
            guard let base = raw.baseAddress else { return true }
            var offset = 0
            while offset < raw.count {
                let count = write(descriptor, base + offset, raw.count - offset)
                if count < 0, errno == EINTR { continue }
                if count <= 0 { return false }
                offset += count
            }
            return true
        }
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard written, synced, rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw CallbackError(code: .storeFailed, url: path, detail: "cannot write \(path): errno \(code)")
        }
    }
}
