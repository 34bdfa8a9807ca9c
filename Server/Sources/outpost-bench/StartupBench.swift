import Foundation
import Logging
import OutpostServer

/// Time from `OutpostServer.start()` to listening, on an existing (already migrated) database and
/// the default password cost, against starting a bare Hummingbird app (``SmallJSONServer``) in the
/// same run. Median of interleaved rounds.
enum StartupBench {
    static func run(_ options: BenchOptions) async throws -> [BenchResult] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var quiet = Logger(label: "outpost.bench")
        quiet.logLevel = .critical
        let configuration = ServerConfiguration(
            host: "127.0.0.1", port: 0, databasePath: folder.appendingPathComponent("startup.sqlite").path, logger: quiet)
        // The first start creates and migrates the database; the measured ones reopen it.
        await (try await OutpostServer(configuration: configuration, plugins: []).start()).stop()

        let clock = ContinuousClock()
        var outpost: [Double] = []
        var bare: [Double] = []
        for _ in 0..<(options.rounds ?? (options.quick ? 3 : 9)) {
            var began = clock.now
            let running = try await OutpostServer(configuration: configuration, plugins: []).start()
            outpost.append((clock.now - began).microseconds / 1_000)
            await running.stop()
            began = clock.now
            let small = try await SmallJSONServer.start()
            bare.append((clock.now - began).microseconds / 1_000)
            await small.stop()
        }
        return [
            BenchResult(
                name: "server: start-up until listening (migrated database, default password cost)", value: median(outpost),
                unit: "ms", baseline: "a bare Hummingbird app", baselineValue: median(bare))
        ]
    }
}
