import NIOCore
import PostgresNIO

/// The bytes of an upload on their way to chunk rows: at most one chunk's worth waits here.
struct PostgresChunkAppender {
    let storage: PostgresFileStorage
    let digest: String
    let blob: Int64
    /// The bytes the upload holds in the database.
    private(set) var size: Int64
    /// Bytes not yet stored, all of one chunk.
    private var waiting = ByteBuffer()

    init(storage: PostgresFileStorage, digest: String, blob: Int64, size: Int64) {
        self.storage = storage
        self.digest = digest
        self.blob = blob
        self.size = size
    }

    /// What the chunk the next byte goes into still takes (all of it past a boundary).
    var room: Int { Int(PostgresFileStorage.chunkLength - size % PostgresFileStorage.chunkLength) - waiting.readableBytes }

    mutating func append(_ piece: ByteBuffer) async throws {
        var piece = piece
        while piece.readableBytes > 0 {
            let take = min(room, piece.readableBytes)
            if waiting.readableBytes == 0 && take == room {
                // A whole chunk's rest in this piece: stored from it, without a copy.
                try await store(piece.readSlice(length: take) ?? ByteBuffer())
                continue
            }
            var part = piece.readSlice(length: take) ?? ByteBuffer()
            waiting.writeBuffer(&part)
            if room == 0 { try await flush() }
        }
    }

    /// Stores the bytes waiting, if any.
    mutating func flush() async throws {
        guard waiting.readableBytes > 0 else { return }
        try await store(waiting)
        waiting.clear()
    }

    /// Appends `bytes` (which fit in the chunk at ``size``) to that chunk, when the upload still
    /// holds ``size`` bytes in ``blob``.
    private mutating func store(_ bytes: ByteBuffer) async throws {
        let chunk = Int32(size / PostgresFileStorage.chunkLength)
        let count = Int64(bytes.readableBytes)
        let stored = try await storage.storage.rows(
            """
            WITH moved AS (
                UPDATE file_uploads SET size = size + \(count), updated_at = \(storage.nowMilliseconds)
                WHERE digest = \(digest) AND blob = \(blob) AND size = \(size) RETURNING blob)
            INSERT INTO file_chunks (blob, chunk, data) SELECT blob, \(chunk), \(bytes) FROM moved
            ON CONFLICT (blob, chunk) DO UPDATE SET data = file_chunks.data || EXCLUDED.data
            RETURNING chunk
            """)
        guard !stored.isEmpty else { throw PendingUploadMoved() }
        size += count
    }
}
