import Foundation
@_spi(OutpostInternal) import OutpostSupport
import Synchronization

/// Where a stored response lives: its key (a hash of the account, method and URI) and a hash of
/// the URI alone, which finds every account's entries for a URI when a write invalidates it.
struct CacheKey: Hashable, Sendable {
    var entry: String
    var uri: String

    /// The file name on disk: `<uri hash>-<entry hash>.entry`, so a folder listing rebuilds the index.
    var fileName: String { uri + "-" + entry + ".entry" }

    init(entry: String, uri: String) {
        self.entry = entry
        self.uri = uri
    }

    init?(fileName: String) {
        guard fileName.hasSuffix(".entry") else { return nil }
        let parts = fileName.dropLast(6).split(separator: "-")
        guard parts.count == 2, parts[0].count == 32, parts[1].count == 64,
            parts.allSatisfy({ $0.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) } })
        else { return nil }
        self.init(entry: String(parts[1]), uri: String(parts[0]))
    }
}

/// The in-memory tier: entries up to a byte limit, evicting the least recently used.
struct MemoryTier: Sendable {
    let limit: Int
    private var entries: [CacheKey: CacheEntry] = [:]
    private var order = LRUList<CacheKey>()
    private(set) var bytes = 0

    init(limit: Int) { self.limit = limit }

    var count: Int { entries.count }
    var keysLeastRecentFirst: [CacheKey] { order.ordered }

    mutating func get(_ key: CacheKey) -> CacheEntry? {
        guard let entry = entries[key] else { return nil }
        order.touch(key)
        return entry
    }

    mutating func put(_ entry: CacheEntry, for key: CacheKey) {
        remove(key)
        let cost = entry.cost
        guard cost <= limit else { return }
        entries[key] = entry
        bytes += cost
        order.touch(key)
        while bytes > limit, let oldest = order.oldest { remove(oldest) }
    }

    mutating func remove(_ key: CacheKey) {
        guard let old = entries.removeValue(forKey: key) else { return }
        bytes -= old.cost
        order.remove(key)
    }

    mutating func remove(uri: String) {
        for key in entries.keys where key.uri == uri { remove(key) }
    }

    mutating func removeAll() {
        entries = [:]
        order = LRUList()
        bytes = 0
    }
}

/// The disk tier: one file per entry in a folder of its own (mode 0700), each written atomically
/// (mode 0600) and checked when read; up to a byte limit, evicting the least recently used. All file
/// work runs in order on a `SerialBlockingQueue` (threads of the shared `BlockingPool`), never on
/// the cooperative pool; writes do not make the caller wait.
final class DiskTier: Sendable {
    let folder: URL
    let limit: Int
    private let io: SerialBlockingQueue
    private let state: Mutex<State>

    private struct State: Sendable {
        var loaded = false
        var sizes: [CacheKey: Int] = [:]
        var order = LRUList<CacheKey>()
        var bytes = 0
    }

    enum ReadResult: Sendable {
        case hit(CacheEntry)
        case miss
        /// The file was damaged (and has been deleted): why.
        case corrupt(String)
    }

    init(folder: URL, limit: Int) {
        self.folder = folder
        self.limit = limit
        self.io = SerialBlockingQueue()
        self.state = Mutex(State())
    }

    var bytes: Int { state.withLock { $0.bytes } }

    func read(_ key: CacheKey) async -> ReadResult {
        (try? await io.run { self.readNow(key) }) ?? .miss
    }

    func write(_ entry: CacheEntry, for key: CacheKey) {
        io.start { self.writeNow(entry, key) }
    }

    func remove(_ key: CacheKey) {
        io.start {
            self.loadIndex()
            self.delete(key)
        }
    }

    func remove(uri: String) {
        io.start {
            self.loadIndex()
            let keys = self.state.withLock { state in state.sizes.keys.filter { $0.uri == uri } }
            for key in keys { self.delete(key) }
        }
    }

    func removeAll() async {
        _ = try? await io.run {
            self.loadIndex()
            let keys = self.state.withLock { Array($0.sizes.keys) }
            for key in keys { self.delete(key) }
        }
    }

    /// Waits until every write queued so far is on disk.
    func flush() async { await io.drain() }

    /// Keys on disk from least to most recently used.
    func keysLeastRecentFirst() async -> [CacheKey] {
        (try? await io.run {
            self.loadIndex()
            return self.state.withLock { $0.order.ordered }
        }) ?? []
    }

    // MARK: On the I/O queue

    private func url(_ key: CacheKey) -> URL { folder.appending(path: key.fileName) }

    /// Reads the folder once: every entry file, oldest modification first. Unknown files are left alone.
    private func loadIndex() {
        guard !state.withLock({ $0.loaded }) else { return }
        try? AtomicFile.createFolder(folder)
        let manager = FileManager.default
        let names = (try? manager.contentsOfDirectory(atPath: folder.path)) ?? []
        var found: [(CacheKey, Int, Date)] = []
        for name in names {
            if name.hasPrefix("."), name.contains(".tmp-") {
                // A write cut short by a crash.
                try? manager.removeItem(at: folder.appending(path: name))
                continue
            }
            guard let key = CacheKey(fileName: name),
                let attributes = try? manager.attributesOfItem(atPath: folder.appending(path: name).path)
            else { continue }
            let size = (attributes[.size] as? NSNumber)?.intValue ?? 0
            found.append((key, size, attributes[.modificationDate] as? Date ?? .distantPast))
        }
        found.sort { $0.2 < $1.2 }
        state.withLock { state in
            state.loaded = true
            for (key, size, _) in found {
                state.sizes[key] = size
                state.order.touch(key)
                state.bytes += size
            }
        }
        evictOverLimit()
    }

    private func readNow(_ key: CacheKey) -> ReadResult {
        loadIndex()
        guard state.withLock({ $0.sizes[key] != nil }) else { return .miss }
        do {
            guard let data = try AtomicFile.read(url(key), maxBytes: limit) else {
                forget(key)
                return .miss
            }
            let entry = try CacheFileFormat.decode(data)
            state.withLock { $0.order.touch(key) }
            return .hit(entry)
        } catch {
            delete(key)
            return .corrupt("\(error)")
        }
    }

    private func writeNow(_ entry: CacheEntry, _ key: CacheKey) {
        loadIndex()
        guard let data = try? CacheFileFormat.encode(entry), data.count <= limit else {
            delete(key)
            return
        }
        do {
            try AtomicFile.createFolder(folder)
            try AtomicFile.write(data, to: url(key), sync: false)
        } catch {
            delete(key)
            return
        }
        state.withLock { state in
            state.bytes += data.count - (state.sizes[key] ?? 0)
            state.sizes[key] = data.count
            state.order.touch(key)
        }
        evictOverLimit()
    }

    private func evictOverLimit() {
        while let oldest = state.withLock({ $0.bytes > limit ? $0.order.oldest : nil }) { delete(oldest) }
    }

    private func delete(_ key: CacheKey) {
        try? FileManager.default.removeItem(at: url(key))
        forget(key)
    }

    private func forget(_ key: CacheKey) {
        state.withLock { state in
            guard let size = state.sizes.removeValue(forKey: key) else { return }
            state.bytes -= size
            state.order.remove(key)
        }
    }
}

/// An entry file: `OPCACHE1`, the metadata's length (4 bytes, big-endian), the metadata (JSON),
/// the body, and an FNV-1a 64-bit checksum of everything before it (8 bytes, big-endian), so a
/// damaged or truncated file is detected rather than served.
enum CacheFileFormat {
    static let magic = Data("OPCACHE1".utf8)
    static let maxMetadataBytes = 256 * 1024

    private struct Metadata: Codable {
        var status: Int
        var headers: [[String]]
        var requestTime: Double
        var responseTime: Double
        var varying: [String: String?]
        var variesOnEverything: Bool
    }

    struct Corrupt: Error, CustomStringConvertible {
        var description: String
    }

    static func encode(_ entry: CacheEntry) throws -> Data {
        let metadata = try JSONEncoder().encode(
            Metadata(
                status: entry.status, headers: entry.headers, requestTime: entry.requestTime.timeIntervalSince1970,
                responseTime: entry.responseTime.timeIntervalSince1970, varying: entry.varying,
                variesOnEverything: entry.variesOnEverything))
        var data = magic
        data.reserveCapacity(magic.count + 4 + metadata.count + entry.body.count + 8)
        appendBigEndian(UInt64(metadata.count), bytes: 4, to: &data)
        data.append(metadata)
        data.append(entry.body)
        appendBigEndian(checksum(data), bytes: 8, to: &data)
        return data
    }

    static func decode(_ data: Data) throws -> CacheEntry {
        let bytes = [UInt8](data)
        guard bytes.count >= magic.count + 4 + 8, bytes.starts(with: magic) else {
            throw Corrupt(description: "not a cache entry file (\(bytes.count) bytes)")
        }
        let end = bytes.count - 8
        guard readBigEndian(bytes, at: end, count: 8) == checksum(bytes[0..<end]) else {
            throw Corrupt(description: "checksum mismatch: the file is damaged or truncated")
        }
        let metadataLength = Int(readBigEndian(bytes, at: magic.count, count: 4))
        let metadataStart = magic.count + 4
        guard metadataLength <= maxMetadataBytes, metadataStart + metadataLength <= end else {
            throw Corrupt(description: "metadata length \(metadataLength) out of bounds")
        }
        let metadata: Metadata
        do {
            metadata = try JSONDecoder().decode(
                Metadata.self, from: Data(bytes[metadataStart..<metadataStart + metadataLength]))
        } catch {
            throw Corrupt(description: "unreadable metadata: \(error)")
        }
        var entry = CacheEntry(
            status: metadata.status, headers: metadata.headers,
            body: Data(bytes[(metadataStart + metadataLength)..<end]),
            requestTime: Date(timeIntervalSince1970: metadata.requestTime),
            responseTime: Date(timeIntervalSince1970: metadata.responseTime), varying: metadata.varying)
        entry.variesOnEverything = metadata.variesOnEverything
        return entry
    }

    static func checksum<Bytes: Sequence>(_ bytes: Bytes) -> UInt64 where Bytes.Element == UInt8 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }

    private static func appendBigEndian(_ value: UInt64, bytes: Int, to data: inout Data) {
        for index in stride(from: bytes - 1, through: 0, by: -1) {
            data.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index))))
        }
    }

    private static func readBigEndian(_ bytes: [UInt8], at offset: Int, count: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in offset..<offset + count { value = value << 8 | UInt64(bytes[index]) }
        return value
    }
}
