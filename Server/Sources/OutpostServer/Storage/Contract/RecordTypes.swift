/// The record types that hold records, for a person to browse (the admin console).
public protocol RecordTypeStorage: Sendable {
    /// Up to `limit` record types that hold at least one record, in the database's order of text,
    /// each after `after` (`nil`: from the first). Each type costs one index seek on
    /// `(type, id)`, whatever the number of records.
    func recordTypes(after: String?, limit: Int) async throws -> [String]
}

/// The statement both backends run for ``RecordTypeStorage/recordTypes(after:limit:)``: one seek
/// per type on the `(type, id)` index, the next type after the one before, up to the limit.
enum RecordTypeQuery {
    /// `?` (or `$1`) is the type to start after (`''` from the first), then the limit.
    static func sql(after: String, limit: String) -> String {
        """
        WITH RECURSIVE found(type, n) AS (
            SELECT (SELECT type FROM records WHERE type > \(after) ORDER BY type LIMIT 1), 1
            UNION ALL
            SELECT (SELECT r.type FROM records r WHERE r.type > found.type ORDER BY r.type LIMIT 1), found.n + 1
            FROM found WHERE found.type IS NOT NULL AND found.n < \(limit)
        )
        SELECT type FROM found WHERE type IS NOT NULL
        """
    }
}
