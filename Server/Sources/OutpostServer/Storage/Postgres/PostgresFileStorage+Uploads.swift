package import NIOCore
import PostgresNIO

extension PostgresFileStorage {
    package func uploadOffset(_ upload: UploadKey) async throws -> Int64? {
        try await storage.rows(
            "SELECT size FROM file_uploads WHERE digest = \(upload.digest) AND updated_at >= \(expiredBefore)"
        ).first?.int64("size")
    }

    package func readUpload(_ upload: UploadKey, to sink: (ByteBuffer) async throws -> Void) async throws {
        guard
            let row = try await storage.rows(
                "SELECT blob, size FROM file_uploads WHERE digest = \(upload.digest) AND updated_at >= \(expiredBefore)"
            ).first
        else { throw PendingUploadMoved() }
        try await read(blob: try row.int64("blob"), range: 0..<(try row.int64("size")), to: sink)
    }

    /// Stores the body chunk by chunk: bytes are gathered until they fill the upload's current
    /// chunk (so at most ``chunkLength`` bytes wait here), then written in one statement that also
    /// moves the upload's size on, on the condition that the upload is still the one this request
    /// began with and holds what this request wrote so far. Another request writing to the upload
    /// (through any instance), its deletion or its sweep make that condition fail, and this request
    /// stops with ``PendingUploadMoved``. When the body fails, the bytes gathered are stored first.
    package func appendUpload<Body: AsyncSequence>(
        _ upload: UploadKey, at offset: Int64, body: Body, observe: (ByteBuffer) throws -> Void
    ) async throws -> Int64 where Body.Element == ByteBuffer {
        let blob = offset == 0 ? try await startUpload(upload) : try await touchUpload(upload, size: offset)
        var appender = PostgresChunkAppender(storage: self, digest: upload.digest, blob: blob, size: offset)
        do {
            for try await piece in body {
                try observe(piece)
                try await appender.append(piece)
            }
        } catch {
            // The bytes that arrived before the failure stay (unless storing them is what failed).
            if !(error is PendingUploadMoved) { try? await appender.flush() }
            throw error
        }
        try await appender.flush()
        return appender.size
    }

    /// A new, empty upload (replacing an expired or empty one of the same key); returns its blob.
    func startUpload(_ upload: UploadKey) async throws -> Int64 {
        let now = nowMilliseconds
        // Two instances starting the same upload at once: the second insert finds the first's row
        // (a unique violation, once the first commits) and tries again, removing it.
        for attempt in 1...3 {
            do {
                return try await storage.withTransaction { connection in
                    try await PostgresStorage.execute(
                        """
                        WITH gone AS (DELETE FROM file_uploads WHERE digest = \(upload.digest) RETURNING blob)
                        DELETE FROM file_chunks WHERE blob IN (SELECT blob FROM gone)
                        """, on: connection)
                    let row = try await PostgresStorage.rows(
                        """
                        INSERT INTO file_uploads (digest, owner, blob, size, created_at, updated_at)
                        VALUES (\(upload.digest), \(upload.owner), nextval('file_blob_ids'), 0, \(now), \(now))
                        RETURNING blob
                        """, on: connection
                    ).first
                    guard let row else { throw PendingUploadMoved() }
                    return try row.int64("blob")
                }
            } catch  where attempt < 3 && PostgresStorage.isUniqueViolation(error, constraint: "file_uploads_pkey") {
                continue
            }
        }
        throw PendingUploadMoved()
    }

    /// Marks the upload written to now, when it is live and holds `size` bytes; returns its blob.
    func touchUpload(_ upload: UploadKey, size: Int64) async throws -> Int64 {
        guard
            let row = try await storage.rows(
                """
                UPDATE file_uploads SET updated_at = \(nowMilliseconds)
                WHERE digest = \(upload.digest) AND size = \(size) AND updated_at >= \(expiredBefore) RETURNING blob
                """
            ).first
        else { throw PendingUploadMoved() }
        return try row.int64("blob")
    }

    package func completeUpload(_ upload: UploadKey, as file: StoredFile) async throws {
        let updatedAt = Int64((file.updatedAt.timeIntervalSince1970 * 1000).rounded(.down))
        try await storage.withTransaction { connection in
            // Taken first: a request still appending to it (on any instance) now fails.
            guard
                let pending = try await PostgresStorage.rows(
                    "DELETE FROM file_uploads WHERE digest = \(upload.digest) RETURNING blob, size", on: connection
                ).first, try pending.int64("size") == file.size
            else { throw PendingUploadMoved() }
            let blob = try pending.int64("blob")
            // The previous file's row, locked; or a new row. When another completion inserts the
            // name meanwhile, the insert waits for it and does nothing, and the next round locks it.
            for _ in 0..<3 {
                if let previous = try await PostgresStorage.rows(
                    "SELECT blob FROM files WHERE name = \(file.name) FOR UPDATE", on: connection
                ).first {
                    try await PostgresStorage.execute(
                        """
                        UPDATE files SET owner = \(file.owner), size = \(file.size), content_type = \(file.contentType),
                            sha256 = \(file.sha256), updated_at = \(updatedAt), blob = \(blob)
                        WHERE name = \(file.name)
                        """, on: connection)
                    try await PostgresStorage.execute(
                        "DELETE FROM file_chunks WHERE blob = \(try previous.int64("blob"))", on: connection)
                    return
                }
                let inserted = try await PostgresStorage.rows(
                    """
                    INSERT INTO files (name, owner, size, content_type, sha256, updated_at, blob)
                    VALUES (\(file.name), \(file.owner), \(file.size), \(file.contentType), \(file.sha256), \(updatedAt), \(blob))
                    ON CONFLICT (name) DO NOTHING RETURNING name
                    """, on: connection)
                if !inserted.isEmpty { return }
            }
            throw PostgresStorage.busy
        }
    }

    package func deleteUpload(_ upload: UploadKey) async throws {
        try await storage.execute(
            """
            WITH gone AS (DELETE FROM file_uploads WHERE digest = \(upload.digest) RETURNING blob)
            DELETE FROM file_chunks WHERE blob IN (SELECT blob FROM gone)
            """)
    }

    /// Removes expired uploads 100 at a time, skipping any a request is writing to at that moment.
    package func sweepUploads() async throws -> Int {
        let limit = expiredBefore
        var total = 0
        while true {
            let removed =
                try await storage.rows(
                    """
                    WITH gone AS (
                        DELETE FROM file_uploads WHERE updated_at < \(limit) AND digest IN (
                            SELECT digest FROM file_uploads WHERE updated_at < \(limit) LIMIT 100 FOR UPDATE SKIP LOCKED)
                        RETURNING blob),
                    chunks AS (DELETE FROM file_chunks WHERE blob IN (SELECT blob FROM gone))
                    SELECT count(*) AS removed FROM gone
                    """
                ).first?.int64("removed") ?? 0
            total += Int(removed)
            if removed < 100 { return total }
        }
    }
}
