import Foundation
import Logging
import Outpost
import OutpostServer
@_spi(OutpostInternal) import OutpostSupport

/// Streaming: every record of a type through `items(...)` from the live server,
/// with records per second and the process's peak resident memory while streaming.
///
/// The server runs in this process on 127.0.0.1 port 0 with a temporary SQLite file seeded directly
/// through the storage layer. The peak is read from `VmHWM` after resetting it through
/// `/proc/self/clear_refs`, so it covers the streaming alone (server and client together).
enum RecordsStreamBench {
    struct Row: Decodable, Sendable {
        var id: String
        var n: Int
        var name: String
        var tags: [String]
    }

    static func run(_ options: BenchOptions) async throws -> [BenchResult] {
        let count = options.quick ? 5_000 : 100_000
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("bench.sqlite").path
        var quiet = Logger(label: "outpost.bench")
        quiet.logLevel = .critical

        let seeding = try await seeded(path: path, type: "rows", count: count, logger: quiet) { n in
            ["n": .int(n), "name": .string("row \(n)"), "tags": ["a", "b"]]
        }
        try await seeding.close()

        let server = try OutpostServer.bench(configuration: ServerConfiguration(port: 0, databasePath: path, logger: quiet))
        let running = try await server.start()
        let client = OutpostClient(configuration: .init(baseURL: running.baseURL))
        let store = client.entities(.outpost)
        let request = ListRequest(resourcePath: "records/rows", of: Row.self, pageSize: 100)

        let rssBefore = Memory.residentBytes()
        Memory.resetPeak()
        let clock = ContinuousClock()
        var began = clock.now
        var seen = 0
        var checksum = 0
        for try await row in store.items(request) {
            seen += 1
            checksum &+= row.n
        }
        let elapsed = clock.now - began
        let peak = Memory.peakResidentBytes()
        guard seen == count, checksum == (0..<count).reduce(0, &+) else {
            throw BenchFailure("streamed \(seen) of \(count) records (checksum \(checksum))")
        }

        // The same records as untyped JSON values (what a POST body or an untyped list decodes to).
        began = clock.now
        var untypedSeen = 0
        for try await value in store.items(ListRequest(resourcePath: "records/rows", of: JSONValue.self, pageSize: 100)) {
            if value["n"]?.intValue != nil { untypedSeen += 1 }
        }
        let untypedElapsed = clock.now - began
        try await client.shutdown()
        await running.stop()
        guard untypedSeen == count else { throw BenchFailure("streamed \(untypedSeen) of \(count) records as JSONValue") }
        let typedRate = Double(count) / elapsed.inSeconds
        return [
            BenchResult(name: "records: stream \(count) through items() (page 100)", value: typedRate, unit: "records/s"),
            BenchResult(
                name: "records: stream \(count) as JSONValue through items() (page 100)",
                value: Double(count) / untypedElapsed.inSeconds, unit: "records/s", baseline: "the typed stream",
                baselineValue: typedRate),
            BenchResult(
                name: "records: peak resident memory while streaming \(count)", value: Double(peak) / 1_048_576, unit: "MB",
                baseline: "resident before streaming", baselineValue: Double(rssBefore) / 1_048_576),
        ]
    }
}

/// A migrated SQLite storage at `path` holding `count` records of `type`, `fields(n)` for n in
/// 0..<count, created in transactions of 10,000 through the storage layer.
func seeded(
    path: String, type: String, count: Int, logger: Logger, fields: (Int) -> [String: JSONValue]
) async throws -> SQLiteStorage {
    let storage = try await SQLiteStorage.open(path: path, logger: logger)
    try await storage.migrate()
    var start = 0
    while start < count {
        let end = min(count, start + 10_000)
        try await storage.createRecords(type: type, bodies: (start..<end).map(fields))
        start = end
    }
    return storage
}

struct BenchFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Resident memory of this process, from /proc (Linux).
enum Memory {
    static func residentBytes() -> Int { field("VmRSS") }

    static func peakResidentBytes() -> Int { field("VmHWM") }

    /// Resets the peak (VmHWM) to the current resident size (Linux 4.0+).
    static func resetPeak() {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    }

    private static func field(_ name: String) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix(name + ":") {
            let digits = line.split(separator: " ").dropFirst().first { Int($0) != nil }
            return (digits.flatMap { Int($0) } ?? 0) * 1024
        }
        return 0
    }
}
