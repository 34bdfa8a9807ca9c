package import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Files written whole or not at all, readable by their owner only, for the HTTP cache and the
/// accounts list. The calls block: run them off the cooperative pool (``BlockingIO``).
package enum AtomicFile {
    /// Writes `data` to a temporary file (mode 0600) in `url`'s folder and renames it over `url`, so a
    /// reader sees the old contents or the new, never a mix. With `sync`, the file and its folder are
    /// flushed to disk too, so the new contents survive a power cut.
    package static func write(_ data: Data, to url: URL, sync: Bool) throws {
        let folder = url.deletingLastPathComponent().path
        let temporary = folder + "/." + url.lastPathComponent + ".tmp-" + UUID().uuidString
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw failure("create \(temporary)") }
        var ok = fchmod(fd, 0o600) == 0
        ok =
            ok
            && data.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = systemWrite(fd, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        return false
                    }
                    offset += written
                }
                return true
            }
        if sync { ok = ok && fsync(fd) == 0 }
        let closed = close(fd) == 0
        guard ok, closed, rename(temporary, url.path) == 0 else {
            let error = failure("write \(url.path)")
            unlink(temporary)
            throw error
        }
        guard sync else { return }
        let folderFD = open(folder, O_RDONLY | O_CLOEXEC)
        if folderFD >= 0 {
            _ = fsync(folderFD)
            close(folderFD)
        }
    }

    /// Creates `folder` (and its parents) with mode 0700 when it does not exist.
    package static func createFolder(_ folder: URL) throws {
        guard !FileManager.default.fileExists(atPath: folder.path) else { return }
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    /// The contents of `url`, `nil` when there is no such file, refusing files over `maxBytes`.
    package static func read(_ url: URL, maxBytes: Int) throws -> Data? {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw failure("open \(url.path)")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw failure("read \(url.path)") }
        let size = Int(info.st_size)
        guard size <= maxBytes else {
            throw AtomicFileError(message: "\(url.path) is \(size) bytes, more than the \(maxBytes) allowed")
        }
        var data = Data(count: size)
        let complete = data.withUnsafeMutableBytes { buffer -> Bool in
            var offset = 0
            while offset < size {
                let count = systemRead(fd, buffer.baseAddress.map { $0 + offset }, size - offset)
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { return false }
                offset += count
            }
            return true
        }
        guard complete else { throw failure("read \(url.path)") }
        return data
    }

    private static func failure(_ what: String) -> AtomicFileError {
        AtomicFileError(message: "Could not \(what) (errno \(errno))")
    }
}

/// A file could not be read or written; the message names it and the reason.
package struct AtomicFileError: Error, CustomStringConvertible {
    package var message: String
    package var description: String { message }
}

/// Runs blocking calls (file I/O) on a serial dispatch queue of their own, so they never hold a
/// thread of Swift's cooperative pool.
package final class BlockingIO: Sendable {
    private let queue: DispatchQueue

    package init(label: String) {
        queue = DispatchQueue(label: label)
    }

    /// Runs `body` on the queue and returns its result.
    package func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Runs `body` on the queue without waiting for it.
    package func start(_ body: @escaping @Sendable () -> Void) {
        queue.async(execute: body)
    }

    /// Returns once everything queued before it has run.
    package func drain() async {
        await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
    }
}

private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int { write(fd, buffer, count) }
private func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int { read(fd, buffer, count) }
