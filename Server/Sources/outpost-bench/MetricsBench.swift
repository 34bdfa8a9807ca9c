import Foundation
import OutpostServer
import Prometheus

/// What the request metrics cost: `GET /openapi.json` (c=32) on two servers in this process that
/// differ only in where their metrics go: nowhere (no factory, no tracer: the server adds no
/// instruments middleware, the baseline), and a Prometheus registry, as `outpost serve
/// --metrics-port` runs (per request a counter, a histogram and the in-flight gauge, the route's
/// storage timers). Interleaved rounds; medians.
enum MetricsBench {
    static func run(_ options: BenchOptions) async throws -> [BenchResult] {
        var quiet = ServerBench.servingLogger()
        quiet.logLevel = .warning
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let labels = ["no metrics", "Prometheus registry"]
        var servers: [RunningServer] = []
        do {
            for index in labels.indices {
                var configuration = ServerConfiguration(
                    host: "127.0.0.1", port: 0, databasePath: folder.appendingPathComponent("metrics\(index).sqlite").path,
                    logger: quiet)
                if index == 1 { configuration.observability = .prometheus(PrometheusCollectorRegistry()) }
                servers.append(try await OutpostServer(configuration: configuration, plugins: []).start())
            }
            let results = try await measure(options, labels: labels, servers: servers)
            for server in servers { await server.stop() }
            return results
        } catch {
            for server in servers { await server.stop() }
            throw error
        }
    }

    private static func measure(_ options: BenchOptions, labels: [String], servers: [RunningServer]) async throws
        -> [BenchResult]
    {
        let rounds = options.rounds ?? (options.quick ? 1 : 3)
        let duration: Duration = options.quick ? .seconds(1) : .seconds(3)
        let urls = servers.map { $0.baseURL.appendingPathComponent("openapi.json") }
        progress("metrics: \(labels.count) servers, \(rounds) round(s) of \(duration) each")
        var perSecond = [[Double]](repeating: [], count: labels.count)
        for round in 0..<rounds {
            for offset in labels.indices {
                let index = (round + offset) % labels.count
                let load = try await LoadGenerator.run(
                    url: urls[index], concurrency: ServerBench.concurrency, duration: duration)
                guard load.errors == 0 else { throw BenchError("\(urls[index]): \(load.errors) errors under load") }
                perSecond[index].append(load.requestsPerSecond)
            }
        }
        let prefix = "request metrics c=\(ServerBench.concurrency) (\(LoadGenerator.defaultTool.rawValue)): GET /openapi.json"
        return [
            BenchResult(
                name: "\(prefix), \(labels[1]), req/s (higher is better)", value: median(perSecond[1]), unit: "req/s",
                baseline: labels[0], baselineValue: median(perSecond[0]))
        ]
    }
}
