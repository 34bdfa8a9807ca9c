package import Foundation
package import NIOCore
@_spi(OutpostInternal) package import OutpostCore
@_spi(OutpostInternal) import OutpostSupport

/// Where `/files` keeps its bytes: a small boundary of its own, apart from ``Storage``. Two stores
/// implement it: a folder (``FolderFileStorage``, on SQLite or wherever the operator names one) and
/// the PostgreSQL database (``PostgresFileStorage``, which every instance on it reads).
///
/// Uploads arrive in pieces: ``appendUpload(_:at:body:observe:)`` adds the bytes of one request to
/// a pending upload, and ``completeUpload(_:as:)`` turns it into the file of a name, replacing the
/// previous one at once (readers see the old bytes or the new ones, never a mix). Bytes stored
/// before a request broke stay, so the upload can go on from ``uploadOffset(_:)``. A pending upload
/// untouched for the store's upload lifetime (``ServerConfiguration/uploadLifetime``) counts as gone
/// at once, and ``sweepUploads()`` removes its bytes.
package protocol FileStorage: Sendable {
    /// The stored file of `name`, or `nil`.
    func file(named name: String) async throws -> StoredFile?
    /// Passes the bytes of `range` of `file` to `sink`, in order, in chunks of bounded size.
    func read(_ file: StoredFile, range: Range<Int64>, to sink: (ByteBuffer) async throws -> Void) async throws
    /// Removes the file of `name`; `false` when there was none.
    func deleteFile(named name: String) async throws -> Bool

    /// How many bytes the pending upload holds, or `nil` when there is no such upload (or it expired).
    func uploadOffset(_ upload: UploadKey) async throws -> Int64?
    /// Passes the bytes the pending upload holds so far to `sink` (to resume a checksum).
    func readUpload(_ upload: UploadKey, to sink: (ByteBuffer) async throws -> Void) async throws
    /// Appends every chunk of `body` to the pending upload (created when `offset` is 0), after
    /// `observe` has seen it (and may refuse it by throwing). `offset` must be the upload's current
    /// size. Returns the new size. Whatever was stored before a failure stays stored.
    ///
    /// - Throws: ``PendingUploadMoved`` when, with `offset` above 0, the upload is gone, expired or
    ///   no longer `offset` bytes long (another request changed it), before or while appending.
    func appendUpload<Body: AsyncSequence>(
        _ upload: UploadKey, at offset: Int64, body: Body, observe: (ByteBuffer) throws -> Void
    ) async throws -> Int64 where Body.Element == ByteBuffer
    /// Makes the pending upload the file of `file.name`, with `file`'s metadata, replacing any
    /// previous file of that name; the pending upload is gone afterwards.
    ///
    /// - Throws: ``PendingUploadMoved`` when the upload is gone or no longer `file.size` bytes long.
    func completeUpload(_ upload: UploadKey, as file: StoredFile) async throws
    /// Forgets a pending upload and its bytes (nothing happens when there is none).
    func deleteUpload(_ upload: UploadKey) async throws

    /// Removes every pending upload untouched for the upload lifetime, with its bytes; returns how
    /// many. The server calls it periodically (``UploadSweeper``).
    func sweepUploads() async throws -> Int
    /// What `owner` keeps: their files (by ``StoredFile/owner``) and pending uploads, expired ones
    /// included until the sweep removes them.
    func usage(owner: String) async throws -> FileUsage
    /// Removes every file of `owner` (a deleted user), or with `recipient` makes them `recipient`'s,
    /// and removes `owner`'s pending uploads either way; returns how many files were removed or given.
    func removeFiles(owner: String, transferringTo recipient: String?) async throws -> Int
}

/// What one owner keeps in a ``FileStorage``, for quotas.
package struct FileUsage: Sendable, Equatable {
    /// The bytes of the owner's files.
    package var fileBytes: Int64
    package var files: Int
    package var pendingUploads: Int
    /// The bytes the owner's pending uploads hold so far.
    package var pendingBytes: Int64

    package init(fileBytes: Int64 = 0, files: Int = 0, pendingUploads: Int = 0, pendingBytes: Int64 = 0) {
        self.fileBytes = fileBytes
        self.files = files
        self.pendingUploads = pendingUploads
        self.pendingBytes = pendingBytes
    }
}

/// A pending upload changed under a request: it is gone (deleted, expired, swept) or holds another
/// number of bytes than the request expects (another request, perhaps on another instance, wrote
/// to it). The routes answer as for an unknown upload or a wrong offset.
package struct PendingUploadMoved: Error {
    package init() {}
}

/// One stored file's metadata.
package struct StoredFile: Codable, Sendable, Equatable {
    /// The file's name in `/files/{name}`.
    package var name: String
    package var size: Int64
    /// The media type the upload declared (`application/octet-stream` when it declared none).
    package var contentType: String
    /// The SHA-256 of the bytes, lowercase hex.
    package var sha256: String
    /// The user who uploaded it; only they may replace or delete it.
    package var owner: String
    package var updatedAt: Date
    /// Where the store keeps the bytes (its own business; a folder store names a file here).
    package var location: String

    /// A strong validator derived from the content: the same bytes always have the same tag.
    package var etag: String { "\"" + sha256.prefix(32) + "\"" }

    /// `sha-256=:base64:` (RFC 9530), the value of `Repr-Digest`.
    package var reprDigest: String {
        "sha-256=:" + Data(Hex.bytes(sha256) ?? []).base64EncodedString() + ":"
    }

    /// The metadata as the routes answer it.
    package var json: JSONValue {
        [
            "name": .string(name), "size": .int(Int(size)), "content_type": .string(contentType),
            "sha256": .string(sha256), "etag": .string(etag), "owner": owner.isEmpty ? .null : .string(owner),
            "updated_at": .string(ISO8601DateFormatter().string(from: updatedAt)),
        ]
    }
}

/// A pending upload: the uploader, the file's name and the upload id the client chose. Another
/// user's request names another upload, so nobody can add to an upload that is not theirs.
package struct UploadKey: Sendable, Hashable {
    package var owner: String
    package var name: String
    package var id: String

    /// A name safe for any store: the SHA-256 of the three parts, hex.
    package var digest: String { FileNames.digest("\(owner)\u{0}\(name)\u{0}\(id)") }
}

/// The file's bytes would pass the per-file limit.
struct FileTooLarge: Error {}
