public import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Replaces a file's contents so that a crash leaves either the old file or the new one.
///
/// A temporary file (mode 0600, hidden, in the same folder) is written, flushed to disk
/// (``FileSync``: `F_FULLFSYNC` on Apple platforms, `fsync` elsewhere) and renamed over the target;
/// then the folder is flushed so that the rename itself is durable.
/// It blocks its thread: call it from ``BlockingPool``, not from a task on the cooperative pool.
@_spi(OutpostInternal) public enum AtomicFile {
    /// Writes `data` to `url`, readable by its owner only. With `sync` (the default) the file and its
    /// folder are flushed to disk, so the new contents survive a power cut; a cache that can lose an
    /// entry passes `false`.
    @_spi(OutpostInternal) public static func write(_ data: Data, to url: URL, sync: Bool = true) throws(AtomicFileError) {
        let folder = url.deletingLastPathComponent().path
        let temporary = folder + "/." + url.lastPathComponent + ".tmp-" + UUID().uuidString
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw AtomicFileError(operation: "create", path: temporary, errno: errno) }
        // The mode given to `open` is reduced by the umask; make it 0600 whatever the umask.
        var failure: AtomicFileError?
        if fchmod(descriptor, 0o600) != 0 {
            failure = AtomicFileError(operation: "set the mode of", path: temporary, errno: errno)
        } else if !writeAll(data, to: descriptor) {
            failure = AtomicFileError(operation: "write", path: temporary, errno: errno)
        } else if sync, !FileSync.toDisk(descriptor) {
            failure = AtomicFileError(operation: "flush", path: temporary, errno: errno)
        }
        if close(descriptor) != 0, failure == nil {
            failure = AtomicFileError(operation: "close", path: temporary, errno: errno)
        }
        if failure == nil, rename(temporary, url.path) != 0 {
            failure = AtomicFileError(operation: "rename into place", path: url.path, errno: errno)
        }
        if let failure {
            unlink(temporary)
            throw failure
        }
        guard sync else { return }
        FileSync.folderToDisk(folder)
    }

    /// Creates `folder` (and its parents) with mode 0700 when it does not exist.
    @_spi(OutpostInternal) public static func createFolder(_ folder: URL) throws {
        guard !FileManager.default.fileExists(atPath: folder.path) else { return }
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    /// The contents of `url`, `nil` when there is no such file, refusing files over `maxBytes`.
    @_spi(OutpostInternal) public static func read(_ url: URL, maxBytes: Int) throws(AtomicFileError) -> Data? {
        let descriptor = open(url.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            throw AtomicFileError(operation: "open", path: url.path, errno: errno)
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw AtomicFileError(operation: "read", path: url.path, errno: errno) }
        // `Int(exactly:)`: a size past a 32-bit `Int` (watchOS on arm64_32) is refused, not a trap.
        guard let size = Int(exactly: info.st_size), size <= maxBytes else {
            throw AtomicFileError(
                operation: "read", path: url.path, errno: EFBIG,
                reason: "it is \(info.st_size) bytes, more than the \(maxBytes) allowed")
        }
        var data = Data(count: size)
        let complete = data.withUnsafeMutableBytes { buffer -> Bool in
            guard let base = buffer.baseAddress else { return true }
            var offset = 0
            while offset < size {
                let count = systemRead(descriptor, base + offset, size - offset)
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { return false }
                offset += count
            }
            return true
        }
        guard complete else { throw AtomicFileError(operation: "read", path: url.path, errno: errno) }
        return data
    }

    /// `write(2)` until every byte is written; false on an error other than `EINTR`.
    private static func writeAll(_ data: Data, to descriptor: Int32) -> Bool {
        data.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return true }
            var offset = 0
            while offset < buffer.count {
                let written = systemWrite(descriptor, base + offset, buffer.count - offset)
                if written < 0, errno == EINTR { continue }
                if written <= 0 { return false }
                offset += written
            }
            return true
        }
    }
}

/// `write(2)`, named apart from `AtomicFile.write`.
private func systemWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, buffer, count)
}

/// `read(2)`, named apart from `AtomicFile.read`.
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}

/// A system call of ``AtomicFile`` failed, or a file was refused.
@_spi(OutpostInternal) public struct AtomicFileError: Error, CustomStringConvertible {
    /// What was being done: "create", "write", "flush", "rename into place", …
    @_spi(OutpostInternal) public var operation: String
    /// The file it was done to.
    @_spi(OutpostInternal) public var path: String
    /// The `errno` it failed with.
    @_spi(OutpostInternal) public var errno: Int32
    /// Why, when it is not the system's error alone (a file over its size limit).
    @_spi(OutpostInternal) public var reason: String? = nil

    @_spi(OutpostInternal) public var description: String {
        if let reason { return "could not \(operation) \(path): \(reason)" }
        return "could not \(operation) \(path): \(String(cString: strerror(errno))) (errno \(errno))"
    }
}
