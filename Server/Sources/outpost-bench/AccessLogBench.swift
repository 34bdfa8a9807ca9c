import Foundation
import Logging
import OutpostServer

#if canImport(Glibc)
    import Glibc
#endif

/// What the access log costs: `GET /openapi.json` (c=32) on three servers in this process that
/// differ only in their logger. `warning` writes no line per request (the baseline); `info` with
/// swift-log's default `StreamLogHandler` on stderr; `info` with ``ServerLogHandler``, what
/// `outpost serve` runs. Lines go to /dev/null (stderr is pointed there while the
/// `StreamLogHandler` server is measured), so no terminal is measured. Interleaved rounds; medians.
enum AccessLogBench {
    struct Variant {
        var label: String
        var logger: Logger
        var silencesStderr: Bool
    }

    static func run(_ options: BenchOptions) async throws -> [BenchResult] {
        var quiet = ServerBench.servingLogger()
        quiet.logLevel = .warning
        var stream = Logger(label: "outpost.server") { StreamLogHandler.standardError(label: $0) }
        stream.logLevel = .info
        let variants = [
            Variant(label: "no access log (warning)", logger: quiet, silencesStderr: false),
            Variant(label: "info, StreamLogHandler on stderr (serve before)", logger: stream, silencesStderr: true),
            Variant(label: "info, ServerLogHandler (serve now)", logger: ServerBench.servingLogger(), silencesStderr: false),
        ]
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var servers: [RunningServer] = []
        do {
            for (index, variant) in variants.enumerated() {
                let configuration = ServerConfiguration(
                    host: "127.0.0.1", port: 0, databasePath: folder.appendingPathComponent("log\(index).sqlite").path,
                    logger: variant.logger)
                servers.append(try await OutpostServer(configuration: configuration, plugins: []).start())
            }
            let results = try await measure(options, variants: variants, servers: servers)
            for server in servers { await server.stop() }
            return results
        } catch {
            for server in servers { await server.stop() }
            throw error
        }
    }

    private static func measure(_ options: BenchOptions, variants: [Variant], servers: [RunningServer]) async throws
        -> [BenchResult]
    {
        let rounds = options.rounds ?? (options.quick ? 1 : 3)
        let duration: Duration = options.quick ? .seconds(1) : .seconds(3)
        let urls = servers.map { $0.baseURL.appendingPathComponent("openapi.json") }
        progress("access log: \(variants.count) servers, \(rounds) round(s) of \(duration) each")
        var perSecond = [[Double]](repeating: [], count: variants.count)
        for round in 0..<rounds {
            for offset in variants.indices {
                let index = (round + offset) % variants.count
                let saved = variants[index].silencesStderr ? silenceStderr() : nil
                let load: LoadGenerator.Result
                do {
                    load = try await LoadGenerator.run(url: urls[index], concurrency: ServerBench.concurrency, duration: duration)
                    if let saved { restoreStderr(saved) }
                } catch {
                    if let saved { restoreStderr(saved) }
                    throw error
                }
                guard load.errors == 0 else { throw BenchError("\(urls[index]): \(load.errors) errors under load") }
                perSecond[index].append(load.requestsPerSecond)
            }
        }
        let prefix = "access log c=\(ServerBench.concurrency) (\(LoadGenerator.defaultTool.rawValue)): GET /openapi.json"
        return variants.indices.dropFirst().map { index in
            BenchResult(
                name: "\(prefix), \(variants[index].label), req/s (higher is better)", value: median(perSecond[index]),
                unit: "req/s", baseline: variants[0].label, baselineValue: median(perSecond[0]))
        }
    }

    /// Points stderr at /dev/null and returns a descriptor of the old stderr.
    private static func silenceStderr() -> Int32 {
        fflush(nil)  // every stream, stderr included
        let saved = dup(2)
        let null = open("/dev/null", O_WRONLY)
        dup2(null, 2)
        close(null)
        return saved
    }

    private static func restoreStderr(_ saved: Int32) {
        fflush(nil)  // every stream, stderr included
        dup2(saved, 2)
        close(saved)
    }
}
