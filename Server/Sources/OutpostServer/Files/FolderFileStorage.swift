import Foundation
import Logging
package import NIOCore
import _NIOFileSystem

/// The default ``FileStorage``: a folder the operator chooses
/// (``ServerConfiguration/filesDirectory``, next to the SQLite database unless set).
///
/// Layout, all names derived from SHA-256 so no outside text ever becomes part of a path:
/// - `objects/<sha256(name)>.json`: the metadata of a file, replaced atomically;
/// - `objects/<sha256(name)>-<sha256 of the bytes>.data`: its bytes;
/// - `uploads/<sha256(owner, name, upload id)>.part`: a pending upload.
///
/// Completing an upload renames the `.part` to its `.data` (atomic, same folder tree and device),
/// then replaces the metadata (atomic), then removes the previous `.data`. A reader that opened the
/// previous bytes keeps reading them.
package struct FolderFileStorage: FileStorage {
    package let root: String
    let fileSystem: FileSystem
    /// Read from disk in pieces of this size (uploads being hashed again).
    static let chunkLength = 256 * 1024
    /// A download reads pieces of this size, one at a time, the next only once the route has handed
    /// the previous one to the connection (no read-ahead: `readChunks` keeps up to eight pieces).
    /// 64 KiB pieces held less but moved a 1 GiB file half as fast (docs/BENCHMARKS.md, Files).
    static let downloadChunkLength: Int64 = 256 * 1024

    var objects: String { root + "/objects" }
    var uploads: String { root + "/uploads" }

    /// Creates the folder (and its `objects` and `uploads` folders) when missing, owner-only.
    package static func open(directory: String) async throws -> FolderFileStorage {
        let storage = FolderFileStorage(root: directory, fileSystem: .shared)
        for path in [directory, storage.objects, storage.uploads] {
            try await storage.fileSystem.createDirectory(
                at: FilePath(path), withIntermediateDirectories: true, permissions: [.ownerReadWriteExecute])
        }
        storage.sweepUploads(olderThan: uploadLifetime)
        return storage
    }

    /// Pending uploads untouched for this long are removed when the server starts.
    static let uploadLifetime: TimeInterval = 7 * 24 * 3600

    /// Removes `.part` files not written to within `age` (abandoned uploads).
    func sweepUploads(olderThan age: TimeInterval) {
        let manager = FileManager.default
        let limit = Date().addingTimeInterval(-age)
        for entry in (try? manager.contentsOfDirectory(atPath: uploads)) ?? [] where entry.hasSuffix(".part") {
            let path = uploads + "/" + entry
            if let modified = (try? manager.attributesOfItem(atPath: path))?[.modificationDate] as? Date, modified < limit {
                try? manager.removeItem(atPath: path)
            }
        }
    }

    func metadataPath(_ name: String) -> String { objects + "/" + FileNames.digest(name) + ".json" }
    func partPath(_ upload: UploadKey) -> String { uploads + "/" + upload.digest + ".part" }

    package func file(named name: String) async throws -> StoredFile? {
        let data: ByteBuffer
        do {
            data = try await fileSystem.withFileHandle(forReadingAt: FilePath(metadataPath(name))) { handle in
                try await handle.readToEnd(maximumSizeAllowed: .kibibytes(64))
            }
        } catch let error as FileSystemError where error.code == .notFound {
            return nil
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return try decoder.decode(StoredFile.self, from: Data(data.readableBytesView))
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
        return true
    }

    package func uploadOffset(_ upload: UploadKey) async throws -> Int64? {
        guard let info = try await fileSystem.info(forFileAt: FilePath(partPath(upload))) else { return nil }
        return info.size
    }

    package func readUpload(_ upload: UploadKey, to sink: (ByteBuffer) async throws -> Void) async throws {
        try await fileSystem.withFileHandle(forReadingAt: FilePath(partPath(upload))) { handle in
            for try await chunk in handle.readChunks(in: 0..<Int64.max, chunkLength: .bytes(Int64(Self.chunkLength))) {
                try await sink(chunk)
            }
        }
    }

    package func appendUpload<Body: AsyncSequence>(
        _ upload: UploadKey, at offset: Int64, body: Body, observe: (ByteBuffer) throws -> Void
    ) async throws -> Int64 where Body.Element == ByteBuffer {
        let options = OpenOptions.Write.modifyFile(createIfNecessary: offset == 0, permissions: [.ownerReadWrite])
        return try await fileSystem.withFileHandle(forWritingAt: FilePath(partPath(upload)), options: options) { handle in
            // Drop anything past `offset` (the caller checked the size; this keeps the file exact).
            try await handle.resize(to: .bytes(offset))
            var written = offset
            try await handle.withBufferedWriter(startingAtAbsoluteOffset: offset, capacity: .kibibytes(512)) { writer in
                for try await chunk in body {
                    try observe(chunk)
                    written += Int64(try await writer.write(contentsOf: chunk.readableBytesView))
                }
            }
            return written
        }
    }

    package func completeUpload(_ upload: UploadKey, as file: StoredFile) async throws {
        var file = file
        file.location = FileNames.digest(file.name) + "-" + file.sha256 + ".data"
        let previous = try await self.file(named: file.name)
        guard rename(partPath(upload), objects + "/" + file.location) == 0 else {
            throw FileSystemError(
                code: .unknown, message: "Could not move the upload into place (errno \(errno))", cause: nil,
                location: .init(function: #function, file: #fileID, line: #line))
        }
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        let metadata = try encoder.encode(file)
        try await fileSystem.withFileHandle(
            forWritingAt: FilePath(metadataPath(file.name)),
            options: .newFile(replaceExisting: true, permissions: [.ownerReadWrite])
        ) { handle in
            _ = try await handle.write(contentsOf: metadata, toAbsoluteOffset: 0)
        }
        if let previous, previous.location != file.location {
            _ = try? await fileSystem.removeItem(at: FilePath(objects + "/" + previous.location), strategy: .platformDefault)
        }
    }

    package func deleteUpload(_ upload: UploadKey) async throws {
        _ = try? await fileSystem.removeItem(at: FilePath(partPath(upload)), strategy: .platformDefault)
    }
}
