/// The prepared statements one ``SQLiteHandle`` keeps, keyed by their SQL text: at most `capacity`
/// in all (the least recently used SQL text gives up one to make room), and at most
/// `copiesPerStatement` of one text.
///
/// A query takes its statement out while it runs and puts it back afterwards, so two concurrent
/// queries never share one: when the same SQL runs on several pool threads at once, each takes or
/// prepares its own copy, and up to `copiesPerStatement` copies are kept for the next time.
/// Eviction scans the entries (`capacity` is a few dozen, and eviction only happens on a full cache).
struct StatementCache: Sendable {
    /// Counts since the connection opened.
    struct Statistics: Sendable, Equatable {
        /// Queries that found their statement prepared.
        var reused = 0
        /// Queries that had to prepare one.
        var prepared = 0
        /// Statements finalized to keep the cache within its bounds.
        var evicted = 0
        /// Statements kept right now.
        var kept = 0
        /// Runs in which SQLite prepared a kept statement again by itself (it does when a statement's
        /// plan depends on a bound value, e.g. a bound `LIMIT`): reuse that saved nothing.
        var reprepared = 0
    }

    private struct Entry {
        var idle: [RawPointer] = []
        var lastUse: UInt64
    }

    let capacity: Int
    let copiesPerStatement: Int
    private var entries: [String: Entry] = [:]
    private var clock: UInt64 = 0
    private var closed = false
    private(set) var statistics = Statistics()

    init(capacity: Int, copiesPerStatement: Int = 4) {
        self.capacity = max(1, capacity)
        self.copiesPerStatement = max(1, copiesPerStatement)
    }

    /// A kept statement for `sql`, removed from the cache until ``put(_:_:)`` returns it, or `nil`
    /// when the caller must prepare one.
    mutating func take(_ sql: String) -> RawPointer? {
        clock += 1
        guard var entry = entries[sql] else {
            statistics.prepared += 1
            return nil
        }
        entry.lastUse = clock
        let statement = entry.idle.popLast()
        entries[sql] = entry
        if statement != nil {
            statistics.reused += 1
            statistics.kept -= 1
        } else {
            statistics.prepared += 1
        }
        return statement
    }

    /// Keeps `statement` for `sql`. Returns a statement the caller must finalize: this one when the
    /// cache is closed or already keeps `copiesPerStatement` of `sql`, or the one given up by the
    /// least recently used SQL text when the cache is over its capacity.
    mutating func put(_ sql: String, _ statement: RawPointer) -> RawPointer? {
        if closed { return statement }
        var entry = entries[sql] ?? Entry(lastUse: clock)
        if entry.idle.count >= copiesPerStatement {
            statistics.evicted += 1
            return statement
        }
        entry.idle.append(statement)
        entries[sql] = entry
        statistics.kept += 1
        guard statistics.kept > capacity else { return nil }
        // Over capacity: the least recently used other SQL text gives up a statement (this one's
        // own, when it alone keeps statements).
        let victim =
            entries.lazy.filter { $0.key != sql && !$0.value.idle.isEmpty }.min { $0.value.lastUse < $1.value.lastUse }?.key
            ?? sql
        guard var losing = entries[victim], let evicted = losing.idle.popLast() else { return nil }
        if losing.idle.isEmpty && victim != sql {
            entries[victim] = nil
        } else {
            entries[victim] = losing
        }
        statistics.kept -= 1
        statistics.evicted += 1
        return evicted
    }

    /// Counts `count` runs whose statement SQLite prepared again.
    mutating func noteReprepared(_ count: Int) {
        statistics.reprepared += count
    }

    /// Empties the cache for good and returns the statements to finalize.
    mutating func close() -> [RawPointer] {
        closed = true
        let statements = entries.values.flatMap(\.idle)
        entries = [:]
        statistics.kept = 0
        return statements
    }
}
