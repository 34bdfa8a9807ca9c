/// The prepared statements one ``SQLiteHandle`` keeps, keyed by their SQL text, at most `capacity`
/// of them (the least recently used one is finalized to make room).
///
/// A query takes its statement out while it runs and puts it back afterwards, so two concurrent
/// queries never share one: the second prepares its own, and when both come back the second copy
/// is finalized. Eviction scans the entries (`capacity` is a few dozen, and eviction only happens
/// when a new SQL text arrives on a full cache).
struct StatementCache: Sendable {
    /// Counts since the connection opened.
    struct Statistics: Sendable, Equatable {
        /// Queries that found their statement prepared.
        var reused = 0
        /// Queries that had to prepare one.
        var prepared = 0
        /// Statements finalized to keep the cache within its capacity.
        var evicted = 0
        /// Statements kept right now.
        var kept = 0
    }

    private struct Entry {
        var statement: RawPointer?
        var lastUse: UInt64
    }

    let capacity: Int
    private var entries: [String: Entry] = [:]
    private var clock: UInt64 = 0
    private var closed = false
    private(set) var statistics = Statistics()

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// The kept statement for `sql`, removed from the cache until ``put(_:_:)`` returns it, or `nil`
    /// when the caller must prepare one.
    mutating func take(_ sql: String) -> RawPointer? {
        clock += 1
        if let statement = entries[sql]?.statement {
            entries[sql] = Entry(statement: nil, lastUse: clock)
            statistics.reused += 1
            statistics.kept -= 1
            return statement
        }
        statistics.prepared += 1
        return nil
    }

    /// Keeps `statement` for `sql`. Returns a statement the caller must finalize: this one when the
    /// cache is closed or already holds another for `sql`, or the least recently used one when the
    /// cache is over its capacity.
    mutating func put(_ sql: String, _ statement: RawPointer) -> RawPointer? {
        if closed || entries[sql]?.statement != nil { return statement }
        entries[sql] = Entry(statement: statement, lastUse: entries[sql]?.lastUse ?? clock)
        statistics.kept += 1
        // Over capacity: drop the least recently used other entry. An entry whose statement is in
        // use goes too (its query puts the statement back later as a new entry).
        guard entries.count > capacity,
            let oldest = entries.lazy.filter({ $0.key != sql }).min(by: { $0.value.lastUse < $1.value.lastUse })?.key
        else { return nil }
        let evicted = entries.removeValue(forKey: oldest)?.statement
        if evicted != nil {
            statistics.kept -= 1
            statistics.evicted += 1
        }
        return evicted
    }

    /// Empties the cache for good and returns the statements to finalize.
    mutating func close() -> [RawPointer] {
        closed = true
        let statements = entries.values.compactMap(\.statement)
        entries = [:]
        statistics.kept = 0
        return statements
    }
}
