import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The journal file of an ``Outbox``: owner-only (0600), appended to with one `write(2)` and an
/// `fsync(2)` per record, rewritten atomically (temporary file, fsync, rename, fsync of the folder)
/// when compacted, and locked against a second process with `flock(2)` on a sibling `.lock` file.
///
/// Every method blocks: the outbox calls them on its own serial dispatch queue, never on the Swift
/// concurrency pool.
final class OutboxFile {
    let url: URL
    private var descriptor: Int32
    private let lockDescriptor: Int32
    /// The file's size, as this process wrote it.
    private(set) var size: Int

    /// Opens (creating it when needed) and locks the journal at `url`.
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
        let lockPath = url.path + ".lock"
        lockDescriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lockDescriptor >= 0 else { throw Self.failure("open the lock file \(lockPath)") }
        guard flock(lockDescriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(lockDescriptor)
            throw OutpostError(
                .outboxUnavailable, "Another process has the outbox \(url.path) open",
                suggestion: "Close the other program (or wait for its replay to end), then try again")
        }
        descriptor = open(url.path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let error = Self.failure("open \(url.path)")
            close(lockDescriptor)
            throw error
        }
        // A journal created by hand or restored from a backup may be readable by others: it holds
        // request bodies, so it is made owner-only.
        _ = fchmod(descriptor, 0o600)
        var status = stat()
        size = fstat(descriptor, &status) == 0 ? Int(status.st_size) : 0
        if size == 0 {
            try append(Data(OutboxFraming.header))
            syncFolder()
        }
    }

    deinit {
        close(descriptor)
        flock(lockDescriptor, LOCK_UN)
        close(lockDescriptor)
    }

    /// The whole file.
    func readAll() throws -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var offset: off_t = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, offset) }
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

    /// Appends `data` with one write and, when `durably`, makes it durable before returning
    /// (otherwise it becomes durable with the next `fsync`; it survives the process being killed
    /// either way, since the kernel has it).
    func append(_ data: Data, durably: Bool = true) throws {
        try Self.writeAll(data, to: descriptor, path: url.path)
        size += data.count
        guard !durably || fsync(descriptor) == 0 else { throw Self.failure("fsync \(url.path)") }
    }

    /// Replaces the file's contents atomically: a reader (or a crash) sees the old file or the new
    /// one, never a mix.
    func replace(with data: Data) throws {
        let temporary = url.deletingLastPathComponent().path + "/." + url.lastPathComponent + ".tmp-" + UUID().uuidString
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Self.failure("create \(temporary)") }
        do {
            try Self.writeAll(data, to: fd, path: temporary)
            guard fsync(fd) == 0 else { throw Self.failure("fsync \(temporary)") }
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
        syncFolder()
        let reopened = open(url.path, O_RDWR | O_APPEND | O_CLOEXEC)
        guard reopened >= 0 else { throw Self.failure("reopen \(url.path)") }
        close(descriptor)
        descriptor = reopened
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
            guard fsync(fd) == 0 else { throw Self.failure("fsync \(path)") }
            syncFolder()
            return URL(fileURLWithPath: path)
        }
    }

    private func syncFolder() {
        let folder = open(url.deletingLastPathComponent().path, O_RDONLY | O_CLOEXEC)
        guard folder >= 0 else { return }
        _ = fsync(folder)
        close(folder)
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
