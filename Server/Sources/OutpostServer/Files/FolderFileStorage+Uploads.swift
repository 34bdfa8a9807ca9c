import Foundation
package import NIOCore
@_spi(OutpostInternal) import OutpostSupport
import _NIOFileSystem

extension FolderFileStorage {
    package func uploadOffset(_ upload: UploadKey) async throws -> Int64? {
        guard let info = try await fileSystem.info(forFileAt: FilePath(partPath(upload))), !isExpired(info) else {
            return nil
        }
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
        if offset > 0 {
            guard try await uploadOffset(upload) == offset else { throw PendingUploadMoved() }
        }
        let options = OpenOptions.Write.modifyFile(createIfNecessary: offset == 0, permissions: [.ownerReadWrite])
        let written: Int64
        do {
            written = try await fileSystem.withFileHandle(forWritingAt: FilePath(partPath(upload)), options: options) {
                handle in
                // Drop anything past `offset` (the caller checked the size; this keeps the file exact).
                try await handle.resize(to: .bytes(offset))
                var written = offset
                // Marked written to by the store's clock afterwards, even when no byte arrived (a
                // request that only completes the upload) or the body failed.
                do {
                    try await handle.withBufferedWriter(startingAtAbsoluteOffset: offset, capacity: .kibibytes(512)) { writer in
                        for try await chunk in body {
                            try observe(chunk)
                            written += Int64(try await writer.write(contentsOf: chunk.readableBytesView))
                        }
                    }
                } catch {
                    try? await handle.setLastDataModificationTime(to: nowTimespec)
                    throw error
                }
                try await handle.setLastDataModificationTime(to: nowTimespec)
                return written
            }
        } catch let error as FileSystemError where error.code == .notFound {
            throw PendingUploadMoved()
        } catch {
            // What was written before the failure stays, and counts.
            let info = try? await fileSystem.info(forFileAt: FilePath(partPath(upload)))
            if let size = info?.size {
                tally.setUpload(upload.digest, owner: FileNames.digest(upload.owner), bytes: size)
            }
            throw error
        }
        tally.setUpload(upload.digest, owner: FileNames.digest(upload.owner), bytes: written)
        return written
    }

    package func deleteUpload(_ upload: UploadKey) async throws {
        _ = try? await fileSystem.removeItem(at: FilePath(partPath(upload)), strategy: .platformDefault)
        tally.removeUpload(upload.digest)
    }

    package func sweepUploads() async throws -> Int {
        try await scanUploads(counting: false)
    }

    /// Removes the pending uploads that expired (and any `.part` not named as this store names
    /// them, which no request can reach); with `counting`, sets the others in the tally (when the
    /// folder is opened: later, only the store's own changes set them, so a scan never puts back an
    /// upload completed while it ran). Returns how many it removed.
    func scanUploads(counting: Bool) async throws -> Int {
        var removed = 0
        for entry in try await entries(of: uploads) where entry.hasSuffix(".part") {
            let path = FilePath(uploads + "/" + entry)
            guard let info = try await fileSystem.info(forFileAt: path) else { continue }
            let parts = Self.partName(entry)
            guard let parts, !isExpired(info) else {
                _ = try? await fileSystem.removeItem(at: path, strategy: .platformDefault)
                if let parts { tally.removeUpload(parts.digest) }
                removed += 1
                continue
            }
            if counting { tally.setUpload(parts.digest, owner: parts.owner, bytes: info.size) }
        }
        return removed
    }

    /// The owner's key and the upload's digest in a `.part` file's name, or `nil` when the name is
    /// not `<64 hex>-<64 hex>.part`.
    static func partName(_ entry: String) -> (owner: String, digest: String)? {
        let stem = entry.dropLast(".part".count)
        let halves = stem.split(separator: "-", omittingEmptySubsequences: false)
        guard halves.count == 2, halves.allSatisfy({ $0.utf8.count == 64 && $0.allSatisfy(\.isHexDigit) }) else {
            return nil
        }
        return (String(halves[0]), String(halves[1]))
    }

    /// ``now``, as a file's time.
    var nowTimespec: FileInfo.Timespec {
        let seconds = now().timeIntervalSince1970
        let whole = seconds.rounded(.down)
        return FileInfo.Timespec(seconds: Int(whole), nanoseconds: Int((seconds - whole) * 1_000_000_000))
    }

    /// Whether the upload of `info` was last written to longer than ``uploadLifetime`` ago (by
    /// ``now``, which ``appendUpload(_:at:body:observe:)`` sets as its modification time).
    func isExpired(_ info: FileInfo) -> Bool {
        let modified = info.lastDataModificationTime
        let seconds = Double(modified.seconds) + Double(modified.nanoseconds) / 1_000_000_000
        return seconds < now().timeIntervalSince1970 - uploadLifetime.inSeconds
    }
}
