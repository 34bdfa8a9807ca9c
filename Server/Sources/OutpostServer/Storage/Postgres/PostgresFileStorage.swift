package import Foundation
package import NIOCore
@_spi(OutpostInternal) import OutpostSupport
import PostgresNIO

/// The ``FileStorage`` of a PostgreSQL database (schema step 9, ``PostgresStorage/filesSchema``):
/// every instance on the database reads every file, and a resumable upload begun through one
/// instance goes on through any other.
///
/// Bytes live in chunk rows of ``chunkLength`` bytes. Every statement is short and moves at most
/// one chunk, on a pooled connection held for that statement only: a download reads the chunk its
/// range needs next (one at a time, the next once the connection has taken the previous one), an
/// upload stores a chunk once that many bytes have arrived. Neither holds a connection, a
/// transaction or more than a chunk (and one piece of the request body) while a slow client sends
/// or reads.
///
/// Completing an upload moves its chunks to the file in one transaction and removes the file's
/// previous chunks in it: a reader of the previous bytes that is still reading then fails (its
/// connection ends short of the promised length) rather than receive a mix; a new reader gets the
/// new bytes.
package struct PostgresFileStorage: FileStorage {
    let storage: PostgresStorage
    /// A pending upload untouched for this long is gone (``ServerConfiguration/uploadLifetime``).
    let uploadLifetime: Duration
    /// The clock uploads expire by (tests move it).
    let now: @Sendable () -> Date

    /// The bytes of one chunk row: the piece a download hands the connection at a time, as the
    /// folder store's (`FolderFileStorage.downloadChunkLength`).
    package static let chunkLength: Int64 = 256 * 1024

    package init(
        storage: PostgresStorage, uploadLifetime: Duration = ServerConfiguration.defaultUploadLifetime,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.storage = storage
        self.uploadLifetime = uploadLifetime
        self.now = now
    }

    /// ``now``, in milliseconds since 1970.
    var nowMilliseconds: Int64 { Int64((now().timeIntervalSince1970 * 1000).rounded(.down)) }
    /// Uploads last written to before this (milliseconds) have expired.
    var expiredBefore: Int64 { nowMilliseconds - uploadLifetime.inMilliseconds }

    package func file(named name: String) async throws -> StoredFile? {
        guard
            let row = try await storage.rows(
                "SELECT name, owner, size, content_type, sha256, updated_at, blob FROM files WHERE name = \(name)"
            ).first
        else { return nil }
        return StoredFile(
            name: try row.string("name"), size: try row.int64("size"), contentType: try row.string("content_type"),
            sha256: try row.string("sha256"), owner: try row.string("owner"),
            updatedAt: Date(timeIntervalSince1970: Double(try row.int64("updated_at")) / 1000),
            location: String(try row.int64("blob")))
    }

    package func read(_ file: StoredFile, range: Range<Int64>, to sink: (ByteBuffer) async throws -> Void) async throws {
        guard let blob = Int64(file.location) else { throw Self.bytesGone }
        try await read(blob: blob, range: range, to: sink)
    }

    /// Passes the bytes of `range` of `blob` to `sink`, one chunk's worth (or less, at the range's
    /// ends) per statement.
    func read(blob: Int64, range: Range<Int64>, to sink: (ByteBuffer) async throws -> Void) async throws {
        var offset = range.lowerBound
        while offset < range.upperBound {
            let chunk = Int32(offset / Self.chunkLength)
            let within = offset % Self.chunkLength
            let count = min(Self.chunkLength - within, range.upperBound - offset)
            // `substring` of an uncompressed out-of-line value fetches only the slices it covers.
            let rows = try await storage.rows(
                """
                SELECT substring(data FROM \(Int32(within + 1)) FOR \(Int32(count))) AS data FROM file_chunks
                WHERE blob = \(blob) AND chunk = \(chunk)
                """)
            guard let bytes = try rows.first?["data"].decode(ByteBuffer.self), Int64(bytes.readableBytes) == count else {
                throw Self.bytesGone
            }
            offset += count
            try await sink(bytes)
        }
    }

    package func deleteFile(named name: String) async throws -> Bool {
        let removed = try await storage.rows(
            """
            WITH gone AS (DELETE FROM files WHERE name = \(name) RETURNING blob),
            chunks AS (DELETE FROM file_chunks WHERE blob IN (SELECT blob FROM gone))
            SELECT count(*) AS removed FROM gone
            """
        ).first?.int64("removed")
        return (removed ?? 0) > 0
    }

    package func usage(owner: String) async throws -> FileUsage {
        guard
            let row = try await storage.rows(
                """
                SELECT f.count AS files, f.bytes AS file_bytes, u.count AS uploads, u.bytes AS upload_bytes
                FROM (SELECT count(*) AS count, COALESCE(sum(size), 0)::BIGINT AS bytes FROM files WHERE owner = \(owner)) f,
                     (SELECT count(*) AS count, COALESCE(sum(size), 0)::BIGINT AS bytes FROM file_uploads
                      WHERE owner = \(owner)) u
                """
            ).first
        else { return FileUsage() }
        return FileUsage(
            fileBytes: try row.int64("file_bytes"), files: Int(try row.int64("files")),
            pendingUploads: Int(try row.int64("uploads")), pendingBytes: try row.int64("upload_bytes"))
    }

    /// A read found fewer bytes than the file promises: it was replaced or deleted meanwhile.
    static var bytesGone: ServerError {
        ServerError(
            .internalServerError, code: "file_changed",
            message: "The file was replaced or deleted while it was read; read it again")
    }
}
