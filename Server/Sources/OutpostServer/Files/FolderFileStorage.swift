package import Foundation
import Logging
package import NIOCore
import _NIOFileSystem

/// The ``FileStorage`` of a folder: the one an SQLite server keeps next to its database, or the one
/// the operator names (``ServerConfiguration/filesDirectory``), which every instance must share.
///
/// Layout, all names derived from SHA-256 so no outside text ever becomes part of a path:
/// - `objects/<sha256(name)>.json`: the metadata of a file, replaced atomically;
/// - `objects/<sha256(name)>-<sha256 of the bytes>.data`: its bytes;
/// - `uploads/<sha256(owner)>-<sha256(owner, name, upload id)>.part`: a pending upload, whose
///   modification time is when it was last written to.
///
/// Completing an upload renames the `.part` to its `.data` (atomic, same folder tree and device),
/// then replaces the metadata (atomic), then removes the previous `.data`. A reader that opened the
/// previous bytes keeps reading them.
///
/// Each owner's ``FileUsage`` is a tally in memory (``FileUsageTally``), built from the folder when
/// it is opened and kept by this store's own changes: when several instances share the folder, each
/// counts what it found at start plus what it wrote itself.
package struct FolderFileStorage: FileStorage {
    package let root: String
    let fileSystem: FileSystem
    /// A pending upload untouched for this long is gone (``ServerConfiguration/uploadLifetime``).
    let uploadLifetime: Duration
    /// The clock uploads expire by (tests move it).
    let now: @Sendable () -> Date
    let tally = FileUsageTally()
    /// Read from disk in pieces of this size (uploads being hashed again).
    static let chunkLength = 256 * 1024
    /// A download reads pieces of this size, one at a time, the next only once the route has handed
    /// the previous one to the connection (no read-ahead: `readChunks` keeps up to eight pieces).
    /// 64 KiB pieces held less but moved a 1 GiB file half as fast (docs/BENCHMARKS.md, Files).
    static let downloadChunkLength: Int64 = 256 * 1024

    var objects: String { root + "/objects" }
    var uploads: String { root + "/uploads" }

    /// Creates the folder (and its `objects` and `uploads` folders) when missing, owner-only, removes
    /// the pending uploads that expired, and counts what each owner keeps.
    package static func open(
        directory: String, uploadLifetime: Duration = ServerConfiguration.defaultUploadLifetime,
        now: @escaping @Sendable () -> Date = { Date() }
    ) async throws -> FolderFileStorage {
        let storage = FolderFileStorage(root: directory, fileSystem: .shared, uploadLifetime: uploadLifetime, now: now)
        for path in [directory, storage.objects, storage.uploads] {
            try await storage.fileSystem.createDirectory(
                at: FilePath(path), withIntermediateDirectories: true, permissions: [.ownerReadWriteExecute])
        }
        try await storage.countFiles()
        _ = try await storage.scanUploads(counting: true)
        return storage
    }

    /// Sets every stored file in the tally.
    func countFiles() async throws {
        for name in try await entries(of: objects) where name.hasSuffix(".json") {
            let data = try await fileSystem.withFileHandle(forReadingAt: FilePath(objects + "/" + name)) { handle in
                try await handle.readToEnd(maximumSizeAllowed: .kibibytes(64))
            }
            guard let file = try? Self.decode(data) else { continue }
            tally.setFile(file.name, owner: FileNames.digest(file.owner), bytes: file.size)
        }
    }

    /// The names in the folder at `path`.
    func entries(of path: String) async throws -> [String] {
        try await fileSystem.withDirectoryHandle(atPath: FilePath(path)) { directory in
            var names: [String] = []
            for try await entry in directory.listContents() { names.append(entry.name.string) }
            return names
        }
    }

    static func decode(_ data: ByteBuffer) throws -> StoredFile {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return try decoder.decode(StoredFile.self, from: Data(data.readableBytesView))
    }

    func metadataPath(_ name: String) -> String { objects + "/" + FileNames.digest(name) + ".json" }
    func partPath(_ upload: UploadKey) -> String {
        uploads + "/" + FileNames.digest(upload.owner) + "-" + upload.digest + ".part"
    }

    package func file(named name: String) async throws -> StoredFile? {
        let data: ByteBuffer
        do {
            data = try await fileSystem.withFileHandle(forReadingAt: FilePath(metadataPath(name))) { handle in
                try await handle.readToEnd(maximumSizeAllowed: .kibibytes(64))
            }
        } catch let error as FileSystemError where error.code == .notFound {
            return nil
        }
        return try Self.decode(data)
    }

    package func read(_ file: StoredFile, range: Range<Int64>, to sink: (ByteBuffer) async throws -> Void) async throws {
        _ = try await readCountingPieces(file, range: range, to: sink)
    }

    /// ``read(_:range:to:)``, returning how many piece buffers it allocated: one when every piece
    /// was read into the same buffer, more when `sink` (the connection) still held the previous
    /// piece when the next was read.
    ///
    /// The pieces go through one ``PieceBuffer``: a buffer per piece would be 4096 fresh 256 KiB
    /// allocations for a 1 GiB download, each on whichever thread of the file system's pool read
    /// it, and glibc keeps freed memory in the arena of the thread that allocated it. Reuse never
    /// overwrites a piece the connection still holds: `ByteBuffer` is copy-on-write, so while
    /// another copy of the buffer exists, clearing ours gives it fresh storage instead.
    package func readCountingPieces(
        _ file: StoredFile, range: Range<Int64>, to sink: (ByteBuffer) async throws -> Void
    ) async throws -> Int {
        guard !range.isEmpty else { return 0 }
        let length = Int(min(Self.downloadChunkLength, range.upperBound - range.lowerBound))
        let piece = PieceBuffer(capacity: length)
        try await fileSystem.withFileHandle(forReadingAt: FilePath(objects + "/" + file.location)) { handle in
            var offset = range.lowerBound
            while offset < range.upperBound {
                let count = Int(min(Int64(length), range.upperBound - offset))
                let at = offset
                let read: Int = try await handle.withUnsafeDescriptor { descriptor in
                    try piece.fill(count: count) { target in
                        try descriptor.read(fromAbsoluteOffset: at, into: target)
                    }
                }
                // The file shrank under us (it is replaced by renaming, so only by outside hands).
                guard read > 0 else {
                    throw FileSystemError(
                        code: .unknown, message: "The file ended before the bytes its metadata promises", cause: nil,
                        location: .init(function: #function, file: #fileID, line: #line))
                }
                offset += Int64(read)
                try await sink(piece.bytes)
            }
        }
        return piece.allocations
    }

    package func deleteFile(named name: String) async throws -> Bool {
        guard let file = try await file(named: name) else { return false }
        try await fileSystem.removeItem(at: FilePath(metadataPath(name)), strategy: .platformDefault)
        _ = try? await fileSystem.removeItem(at: FilePath(objects + "/" + file.location), strategy: .platformDefault)
        tally.removeFile(name)
        return true
    }

    package func completeUpload(_ upload: UploadKey, as file: StoredFile) async throws {
        var file = file
        file.location = FileNames.digest(file.name) + "-" + file.sha256 + ".data"
        let previous = try await self.file(named: file.name)
        guard try await fileSystem.info(forFileAt: FilePath(partPath(upload)))?.size == file.size else {
            throw PendingUploadMoved()
        }
        guard rename(partPath(upload), objects + "/" + file.location) == 0 else {
            throw FileSystemError(
                code: .unknown, message: "Could not move the upload into place (errno \(errno))", cause: nil,
                location: .init(function: #function, file: #fileID, line: #line))
        }
        try await writeMetadata(file)
        tally.removeUpload(upload.digest)
        tally.setFile(file.name, owner: FileNames.digest(file.owner), bytes: file.size)
        if let previous, previous.location != file.location {
            _ = try? await fileSystem.removeItem(at: FilePath(objects + "/" + previous.location), strategy: .platformDefault)
        }
    }

    package func usage(owner: String) async throws -> FileUsage {
        tally.usage(owner: FileNames.digest(owner))
    }
}

extension FolderFileStorage {
    /// Writes `file`'s metadata (JSON, owner-only) over the file's metadata path.
    func writeMetadata(_ file: StoredFile) async throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        let metadata = try encoder.encode(file)
        try await fileSystem.withFileHandle(
            forWritingAt: FilePath(metadataPath(file.name)),
            options: .newFile(replaceExisting: true, permissions: [.ownerReadWrite])
        ) { handle in
            _ = try await handle.write(contentsOf: metadata, toAbsoluteOffset: 0)
        }
    }
}
