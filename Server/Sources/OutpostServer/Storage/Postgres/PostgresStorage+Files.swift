extension PostgresStorage {
    /// Migration 9: `/files` in the database, read by every instance (``PostgresFileStorage``; SQLite
    /// keeps files in a folder, so it has no counterpart).
    ///
    /// A file's or a pending upload's bytes are a *blob*: rows of `file_chunks` of
    /// ``PostgresFileStorage/chunkLength`` bytes each (the last one shorter), numbered from 0, under
    /// a blob id drawn from `file_blob_ids`. A file row and an upload row each name one blob, and no
    /// two rows share one: completing an upload moves its blob to the file's row, and the file's
    /// previous blob is removed in the same transaction. Chunks are stored uncompressed and out of
    /// line (`STORAGE EXTERNAL`), so a range reads only the slices it asks for. Times are
    /// milliseconds since 1970.
    static let filesSchema: [String] = [
        "CREATE SEQUENCE file_blob_ids",
        """
        CREATE TABLE file_chunks (
            blob BIGINT NOT NULL, chunk INTEGER NOT NULL, data BYTEA NOT NULL, PRIMARY KEY (blob, chunk)
        )
        """,
        "ALTER TABLE file_chunks ALTER COLUMN data SET STORAGE EXTERNAL",
        """
        CREATE TABLE files (
            name TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            size BIGINT NOT NULL,
            content_type TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            updated_at BIGINT NOT NULL,
            blob BIGINT NOT NULL
        )
        """,
        // Per-owner usage from the index alone.
        "CREATE INDEX files_by_owner ON files (owner) INCLUDE (size)",
        """
        CREATE TABLE file_uploads (
            digest TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            blob BIGINT NOT NULL,
            size BIGINT NOT NULL,
            created_at BIGINT NOT NULL,
            updated_at BIGINT NOT NULL
        )
        """,
        "CREATE INDEX file_uploads_by_owner ON file_uploads (owner) INCLUDE (size)",
        "CREATE INDEX file_uploads_by_update ON file_uploads (updated_at)",
    ]
}
