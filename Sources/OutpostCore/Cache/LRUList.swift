/// Keys ordered from least to most recently used, with constant-time touch, removal and eviction:
/// a doubly linked list threaded through a dictionary.
struct LRUList<Key: Hashable & Sendable>: Sendable {
    private struct Links: Sendable {
        var older: Key?
        var newer: Key?
    }

    private var links: [Key: Links] = [:]
    private(set) var oldest: Key?
    private var newest: Key?

    var count: Int { links.count }

    func contains(_ key: Key) -> Bool { links[key] != nil }

    /// Makes `key` the most recently used, adding it when absent.
    mutating func touch(_ key: Key) {
        if links[key] != nil {
            guard newest != key else { return }
            remove(key)
        }
        links[key] = Links(older: newest, newer: nil)
        if let newest { links[newest]?.newer = key }
        newest = key
        if oldest == nil { oldest = key }
    }

    mutating func remove(_ key: Key) {
        guard let link = links.removeValue(forKey: key) else { return }
        if let older = link.older { links[older]?.newer = link.newer } else { oldest = link.newer }
        if let newer = link.newer { links[newer]?.older = link.older } else { newest = link.older }
    }

    /// Keys from least to most recently used (for tests and diagnostics).
    var ordered: [Key] {
        var keys: [Key] = []
        var current = oldest
        while let key = current {
            keys.append(key)
            current = links[key]?.newer
        }
        return keys
    }
}
