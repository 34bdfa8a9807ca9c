import Synchronization

/// The per-owner ``FileUsage`` of a ``FolderFileStorage``, kept in memory: built when the folder is
/// opened and set again by every change the store makes. One process owns a folder store, so its
/// tally is the whole truth.
///
/// Entries are set, not added to: setting a file or an upload replaces what the tally had for it,
/// so a change counted twice (a retried completion, a sweep after a delete) never drifts the sums.
/// Owners are keyed by the SHA-256 of their id, as the folder names pending uploads.
final class FileUsageTally: Sendable {
    private struct Entry {
        var owner: String
        var bytes: Int64
    }

    private struct State {
        var files: [String: Entry] = [:]
        var uploads: [String: Entry] = [:]
        var owners: [String: FileUsage] = [:]

        /// Sets (or, with `nil`, removes) the entry of `key` in `table` and the sums of its owners.
        mutating func set(_ key: String, to entry: Entry?, in table: WritableKeyPath<State, [String: Entry]>) {
            if let old = self[keyPath: table][key] { adjust(old, sign: -1, isFile: table == \.files) }
            self[keyPath: table][key] = entry
            if let entry { adjust(entry, sign: 1, isFile: table == \.files) }
        }

        mutating func adjust(_ entry: Entry, sign: Int, isFile: Bool) {
            var usage = owners[entry.owner] ?? FileUsage()
            if isFile {
                usage.files += sign
                usage.fileBytes += Int64(sign) * entry.bytes
            } else {
                usage.pendingUploads += sign
                usage.pendingBytes += Int64(sign) * entry.bytes
            }
            owners[entry.owner] = usage == FileUsage() ? nil : usage
        }
    }

    private let state = Mutex(State())

    /// The file of `name` belongs to the owner keyed `owner` and holds `bytes`.
    func setFile(_ name: String, owner: String, bytes: Int64) {
        state.withLock { $0.set(name, to: Entry(owner: owner, bytes: bytes), in: \.files) }
    }

    func removeFile(_ name: String) {
        state.withLock { $0.set(name, to: nil, in: \.files) }
    }

    /// The pending upload `digest` belongs to the owner keyed `owner` and holds `bytes`.
    func setUpload(_ digest: String, owner: String, bytes: Int64) {
        state.withLock { $0.set(digest, to: Entry(owner: owner, bytes: bytes), in: \.uploads) }
    }

    func removeUpload(_ digest: String) {
        state.withLock { $0.set(digest, to: nil, in: \.uploads) }
    }

    /// The usage of the owner keyed `owner`.
    func usage(owner: String) -> FileUsage {
        state.withLock { $0.owners[owner] } ?? FileUsage()
    }
}
