import Foundation

/// A download in progress on disk: the bytes so far in `<destination>.part`, the ETag of the file
/// they belong to in `<destination>.part.etag`.
struct PartialDownload: Sendable {
    struct Resume: Sendable {
        var offset: Int64
        var etag: String
    }

    let destination: URL
    var data: URL { URL(fileURLWithPath: destination.path + ".part") }
    var etagFile: URL { URL(fileURLWithPath: destination.path + ".part.etag") }

    /// Where to go on from, when an earlier download left bytes and the ETag they belong to.
    func resumable() -> Resume? {
        guard let etag = try? String(contentsOf: etagFile, encoding: .utf8), !etag.isEmpty, etag.utf8.count <= 256,
            let attributes = try? FileManager.default.attributesOfItem(atPath: data.path),
            let size = (attributes[.size] as? NSNumber)?.int64Value, size > 0
        else { return nil }
        return Resume(offset: size, etag: etag)
    }

    /// Empties the partial file and records the ETag of the file its bytes will belong to (none:
    /// the bytes cannot be resumed, as nothing tells whether the file changed).
    func restart(etag: String?) throws {
        try? FileManager.default.removeItem(at: etagFile)
        guard FileManager.default.createFile(atPath: data.path, contents: nil) else {
            throw OutpostError(
                .invalidRequest, "Cannot write \(data.path)", suggestion: "Download to a folder this program may write to")
        }
        if let etag, etag.hasPrefix("\"") { try Data(etag.utf8).write(to: etagFile) }
    }

    /// Writes the stream's chunks from `offset` on, as they arrive.
    func append(_ stream: ByteStream, at offset: Int64) async throws {
        let handle = try FileHandle(forWritingTo: data)
        defer { try? handle.close() }
        try handle.truncate(atOffset: UInt64(offset))
        try handle.seek(toOffset: UInt64(offset))
        for try await chunk in stream {
            try handle.write(contentsOf: chunk)
        }
    }

    /// Moves the complete file into place, replacing what was there.
    func finish() throws {
        guard rename(data.path, destination.path) == 0 else {
            throw OutpostError(
                .invalidRequest, "Cannot move the download to \(destination.path) (errno \(errno))",
                suggestion: "Check that the folder exists and may be written")
        }
        try? FileManager.default.removeItem(at: etagFile)
    }

    func remove() {
        try? FileManager.default.removeItem(at: data)
        try? FileManager.default.removeItem(at: etagFile)
    }
}
