import Foundation
@_spi(OutpostInternal) import OutpostSupport
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The journal file of an ``Outbox``: owner-only (0600), appended to with one `write(2)` and a
/// flush to disk (``FileSync``) per record, rewritten atomically (temporary file, flush, rename,
/// flush of the folder) when compacted.
///
/// Processes that share the journal (an app and its extensions in an App Group container) take
/// turns: every read or write happens inside ``withLock(_:)``, which holds an exclusive `flock(2)`
/// on a sibling `.lock` file for that piece of work only and lets it go before returning. No lock
/// is held between operations, so a suspended app never holds one (iOS ends an app that is
/// suspended with a file lock in a shared container, exception code `0xdead10cc`). Before its own
/// work, each holder reads what the others appended or rewrote since it last looked
/// (``readChanges()``), so no process writes from a stale view.
///
/// Every method blocks: the outbox calls them on its own serial dispatch queue, never on the Swift
/// concurrency pool.
final class OutboxFile {
    let url: URL
    private var descriptor: Int32
    private let lockDescriptor: Int32
    private let lockPath: String
    /// The lock file's device and inode: this process's key in ``openJournals``.
    private let lockIdentity: FileIdentity
    /// The file `descriptor` has open; another process's compaction renames a new file into place.
    private var identity: FileIdentity
    /// How much of the file this process has read or written: everything before it is applied.
    private(set) var size = 0

    /// How long a read or write waits for another process's turn. Turns last one write.
    static let lockTimeout: Duration = .seconds(10)

    /// The journals open in this process, by lock file. One ``Outbox`` per journal and process:
    /// a second one would send every write twice. Process-wide because the journal is.
    private static let openJournals = Mutex<Set<FileIdentity>>([])

    struct FileIdentity: Hashable {
        var device: UInt64
        var inode: UInt64

        init(_ status: stat) {
            device = UInt64(truncatingIfNeeded: status.st_dev)
            inode = UInt64(truncatingIfNeeded: status.st_ino)
        }
    }

    /// Opens (creating them when needed) the journal at `url` and its lock file. Reads nothing:
    /// the first ``readChanges()`` reads the whole file.
    init(url: URL) throws {
        self.url = url
        let folder = url.deletingLastPathComponent()
        if !FileManager.default.fileExists(atPath: folder.path) {
            do {
                try FileManager.default.createDirectory(
                    at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw OutpostError(
                    .outboxUnavailable, "The outbox folder \(folder.path) could not be created",
                    suggestion: "Check that the parent folder exists and is writable", underlying: error)
            }
        }
        lockPath = url.path + ".lock"
        lockDescriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lockDescriptor >= 0 else { throw Self.failure("open the lock file \(lockPath)") }
        var lockStatus = stat()
        guard fstat(lockDescriptor, &lockStatus) == 0 else {
            let error = Self.failure("read the lock file \(lockPath)")
            close(lockDescriptor)
            throw error
        }
        let key = FileIdentity(lockStatus)
        lockIdentity = key
        let registered = Self.openJournals.withLock { $0.insert(key).inserted }
        guard registered else {
            close(lockDescriptor)
            throw OutpostError(
                .outboxUnavailable, "This process has the outbox \(url.path) open already",
                suggestion: "Use the open Outbox, or close it before opening the journal again")
        }
        descriptor = open(url.path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        var status = stat()
        guard descriptor >= 0, fstat(descriptor, &status) == 0 else {
            let error = Self.failure("open \(url.path)")
            if descriptor >= 0 { close(descriptor) }
            close(lockDescriptor)
            Self.openJournals.withLock { _ = $0.remove(key) }
            throw error
        }
        identity = FileIdentity(status)
        // A journal created by hand or restored from a backup may be readable by others: it holds
        // request bodies, so it is made owner-only.
        _ = fchmod(descriptor, 0o600)
    }

    deinit {
        close(descriptor)
        close(lockDescriptor)
        Self.openJournals.withLock { _ = $0.remove(lockIdentity) }
    }

    // MARK: Taking turns

    /// Runs `body` holding the journal's lock, and lets go of it before returning.
    ///
    /// - Throws: ``OutpostError/Code/outboxUnavailable`` when another process keeps its turn past
    ///   ``lockTimeout``, or the lock cannot be taken.
    func withLock<T>(_ body: () throws -> T) throws -> T {
        do {
            try FileLock.lockBriefly(lockDescriptor, path: lockPath, timeout: Self.lockTimeout)
        } catch .timedOut {
            throw OutpostError(
                .outboxUnavailable, "Another process has kept the outbox \(url.path) locked for too long",
                suggestion: "Check for a program stuck while writing to the outbox, then try again")
        } catch {
            throw OutpostError(.outboxUnavailable, "The outbox \(url.path) could not be locked: \(error)")
        }
        defer { FileLock.unlock(lockDescriptor) }
        return try body()
    }

    /// Under the lock: what the file holds that this process has not read yet, and where it
    /// starts; `nil` when nothing changed. Offset 0 means the whole file (the first read, or
    /// another process replaced the file by compacting it): the caller rebuilds its view from it.
    /// A journal with no header yet gets one.
    func readChanges() throws -> (data: Data, offset: Int)? {
        var onDisk = stat()
        if stat(url.path, &onDisk) != 0 {
            guard errno == ENOENT else { throw Self.failure("look at \(url.path)") }
            // Deleted by hand: start a new journal where it was.
            try reopen(creating: true)
            size = 0
        } else if FileIdentity(onDisk) != identity {
            try reopen(creating: false)
            size = 0
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw Self.failure("look at \(url.path)") }
        // An outbox past what `Int` holds (2 GiB on watchOS's arm64_32) is refused, not a trap.
        guard var length = Int(exactly: status.st_size) else {
            throw OutpostError(
                .outboxUnavailable, "The outbox \(url.path) is \(status.st_size) bytes, more than this device can read",
                suggestion: "Send or cancel its entries from a device that can, or remove the file")
        }
        if length == 0 {
            try Self.writeAll(Data(OutboxFraming.header), to: descriptor, path: url.path)
            guard FileSync.toDisk(descriptor) else { throw Self.failure("flush \(url.path)") }
            FileSync.folderToDisk(url.deletingLastPathComponent().path)
            length = OutboxFraming.header.count
            size = 0
        }
        if length == size { return nil }
        if length < size { size = 0 }  // shorter than this process left it: read it again
        let offset = size
        let data = try read(from: offset, to: length)
        size = offset + data.count
        return (data, offset)
    }

    /// The bytes from `start` to `end` (or to the end of the file, if sooner).
    private func read(from start: Int, to end: Int) throws -> Data {
        var data = Data(capacity: end - start)
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var offset = off_t(start)
        while offset < off_t(end) {
            let wanted = min(buffer.count, end - Int(offset))
            let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, wanted, offset) }
            if count < 0 {
                if errno == EINTR { continue }
                throw Self.failure("read \(url.path)")
            }
            if count == 0 { break }
            data.append(contentsOf: buffer[0..<count])
            offset += off_t(count)
        }
        return data
    }

    /// Opens the file now at ``url`` in place of the one `descriptor` has open.
    private func reopen(creating: Bool) throws {
        let reopened = open(url.path, O_RDWR | O_APPEND | O_CLOEXEC | (creating ? O_CREAT : 0), 0o600)
        guard reopened >= 0 else { throw Self.failure("reopen \(url.path)") }
        var status = stat()
        guard fstat(reopened, &status) == 0 else {
            close(reopened)
            throw Self.failure("look at \(url.path)")
        }
        close(descriptor)
        descriptor = reopened
        identity = FileIdentity(status)
    }

    // MARK: Writing (under the lock)

    /// Appends `data` with one write and, when `durably`, makes it durable before returning
    /// (otherwise it becomes durable with the next flush; it survives the process being killed
    /// either way, since the kernel has it). Call it under ``withLock(_:)``, after ``readChanges()``.
    func append(_ data: Data, durably: Bool = true) throws {
        try Self.writeAll(data, to: descriptor, path: url.path)
        size += data.count
        guard !durably || FileSync.toDisk(descriptor) else { throw Self.failure("flush \(url.path)") }
    }

    /// Replaces the file's contents atomically: a reader (or a crash) sees the old file or the new
    /// one, never a mix. Call it under ``withLock(_:)``.
    func replace(with data: Data) throws {
        let temporary = url.deletingLastPathComponent().path + "/." + url.lastPathComponent + ".tmp-" + UUID().uuidString
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Self.failure("create \(temporary)") }
        do {
            try Self.writeAll(data, to: fd, path: temporary)
            guard FileSync.toDisk(fd) else { throw Self.failure("flush \(temporary)") }
        } catch {
            close(fd)
            unlink(temporary)
            throw error
        }
        close(fd)
        guard rename(temporary, url.path) == 0 else {
            let error = Self.failure("rename \(temporary) to \(url.path)")
            unlink(temporary)
            throw error
        }
        FileSync.folderToDisk(url.deletingLastPathComponent().path)
        try reopen(creating: false)
        size = data.count
    }

    /// Keeps `data` (a corrupt tail) beside the journal, owner-only, in a file nobody else uses:
    /// `<journal>.corrupt`, or `<journal>.N.corrupt` when that exists already.
    func setAside(_ data: Data) throws -> URL {
        var number = 0
        while true {
            let path = url.path + (number == 0 ? "" : ".\(number)") + ".corrupt"
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd < 0 {
                if errno == EEXIST, number < 10_000 {
                    number += 1
                    continue
                }
                throw Self.failure("create \(path)")
            }
            defer { close(fd) }
            try Self.writeAll(data, to: fd, path: path)
            guard FileSync.toDisk(fd) else { throw Self.failure("flush \(path)") }
            FileSync.folderToDisk(url.deletingLastPathComponent().path)
            return URL(fileURLWithPath: path)
        }
    }

    private static func writeAll(_ data: Data, to fd: Int32, path: String) throws {
        let ok = data.withUnsafeBytes { buffer -> Bool in
            var offset = 0
            while offset < buffer.count {
                let written = systemWrite(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += written
            }
            return true
        }
        guard ok else { throw failure("write \(path)") }
    }

    private static func failure(_ what: String) -> OutpostError {
        let reason = String(cString: strerror(errno))
        return OutpostError(
            .outboxUnavailable, "Could not \(what): \(reason)",
            suggestion: "Check the outbox file's folder: it must exist, be writable, and have free space")
    }
}

/// `write(2)`, named apart from the `write` methods around.
private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, buffer, count)
}
