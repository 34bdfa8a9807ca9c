/// How many records a ``SyncedStore`` keeps per type.
///
/// When a pull or a live change leaves more confirmed records of a type than its limit, the store
/// evicts the confirmed records updated longest ago (by their `updated_at`, then id) down to the
/// limit. Records with local writes are never evicted. An evicted record is simply no longer
/// local: queries do not find it, and it comes back when the server changes it (and stays if it is
/// then among the newest) or when the type is loaded again.
public struct SyncLimits: Sendable, Hashable {
    /// The most confirmed records kept of a type without a limit of its own.
    public var recordsPerType: Int
    /// Limits of single types, replacing ``recordsPerType`` for them.
    public var types: [String: Int]

    /// Limits for a store.
    ///
    /// - Parameters:
    ///   - recordsPerType: the most confirmed records kept per type (default 200,000).
    ///   - types: limits of single types.
    public init(recordsPerType: Int = 200_000, types: [String: Int] = [:]) {
        self.recordsPerType = max(0, recordsPerType)
        self.types = types.mapValues { max(0, $0) }
    }

    /// The limit of `type`.
    public func limit(of type: String) -> Int { types[type] ?? recordsPerType }
}
