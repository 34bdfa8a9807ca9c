import Foundation
import OutpostServer
import OutpostServerTesting
@_spi(OutpostInternal) import OutpostSupport

// outpost-bench: side-by-side measurements in one run, printed as a Markdown table or, with
// --json, as one JSON array of {"name", "value", "unit", "baseline", "baseline_value", "ratio"}.
// Run it in a release build (bash bench.sh builds and runs it): outpost-bench [--quick] [--json] [--rounds N] [--read-concurrency N] [--only GROUP,...]

let groups = [
    "callbacks", "streaming", "client", "entities", "server", "auth", "scale", "outbox", "cache", "files", "changes", "storage",
    "storage-reads", "reads-under-writes", "sync",
]
var arguments = Array(CommandLine.arguments.dropFirst())
var only = Set(groups)
if let index = arguments.firstIndex(of: "--only"), index + 1 < arguments.count {
    only = Set(arguments[index + 1].split(separator: ",").map(String.init))
    arguments.removeSubrange(index...(index + 1))
}
var rounds: Int?
if let index = arguments.firstIndex(of: "--rounds"), index + 1 < arguments.count, let count = Int(arguments[index + 1]), count > 0
{
    rounds = count
    arguments.removeSubrange(index...(index + 1))
}
var readConcurrency: Int?
if let index = arguments.firstIndex(of: "--read-concurrency"), index + 1 < arguments.count,
    let count = Int(arguments[index + 1]), count > 0
{
    readConcurrency = count
    arguments.removeSubrange(index...(index + 1))
}
// `--postgres URL`: also measure the storage group on that PostgreSQL server (as OUTPOST_TEST_POSTGRES_URL does).
if let index = arguments.firstIndex(of: "--postgres"), index + 1 < arguments.count {
    setenv(ScratchDatabase.postgresURLVariable, arguments[index + 1], 1)
    arguments.removeSubrange(index...(index + 1))
}
let flags = Set(arguments)
let known: Set<String> = ["--quick", "--json", "--help"]
if flags.contains("--help") || !flags.isSubset(of: known) || !only.isSubset(of: Set(groups)) {
    let unknown = flags.subtracting(known).union(only.subtracting(groups)).sorted().joined(separator: " ")
    if !unknown.isEmpty { FileHandle.standardError.write(Data("unknown option(s) or group(s): \(unknown)\n".utf8)) }
    print(
        "usage: outpost-bench [--quick] [--json] [--rounds N] [--read-concurrency N] [--postgres URL] [--only \(groups.joined(separator: ","))]"
    )
    print("  --rounds N: interleaved rounds per figure in the client, callbacks, cache, outbox, server and storage groups")
    print("    and reads under writes (their defaults: 12, 15, 12, 7, 3, 3 and 5; fewer with --quick); the other groups")
    print("    keep their own counts")
    print("  --read-concurrency N: connections of the storage group's read loads (default \(StorageBench.readConcurrency))")
    exit(flags.contains("--help") ? 0 : 64)
}
let options = BenchOptions(quick: flags.contains("--quick"), rounds: rounds, readConcurrency: readConcurrency)
let started = ContinuousClock.now
#if DEBUG
    FileHandle.standardError.write(Data("warning: this is a debug build; measure with -c release\n".utf8))
#endif

var results: [BenchResult] = []
if only.contains("callbacks") { results += CallbacksBench.run(options) }
if only.contains("streaming") { results += try await RecordsStreamBench.run(options) }
if only.contains("client") { results += try await ClientOverheadBench.run(options) }
if only.contains("entities") { results += try await EntityDecodingBench.run(options) }
if only.contains("server") {
    results += try await ServerBench.run(options, seed: ServerBench.seedRecords)
    results += try await StartupBench.run(options)
    results += try await AccessLogBench.run(options)
    results += try await MetricsBench.run(options)
}
if only.contains("auth") { results += try await AuthBench.run(options) }
if only.contains("scale") {
    results += try await RecordsScaleBench.run(options)
    results += try await RecordIndexBench.run(options)
}
if only.contains("outbox") { results += try await OutboxBench.run(options) }
if only.contains("cache") { results += try await CacheBench.run(options) }
if only.contains("files") { results += try await FilesBench.run(options) }
if only.contains("changes") { results += try await ChangesBench.run(options) }
if only.contains("storage") {
    results += try await StorageBench.run(options)
    results += try await QuotaCostBench.run(options)
}
if only.contains("storage-reads") && !only.contains("storage") { results += try await StorageBench.run(options, readsOnly: true) }
if only.contains("reads-under-writes") { results += try await ReadsUnderWritesBench.run(options) }
if only.contains("sync") { results += try await SyncBench.run(options) }

let elapsed = ContinuousClock.now - started

/// Whole numbers from 100 up; one or two decimals below, so that small figures keep their precision.
func formatted(_ value: Double) -> String {
    String(format: abs(value) >= 100 ? "%.0f" : abs(value) >= 10 ? "%.1f" : "%.2f", value)
}
if flags.contains("--json") {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    print(String(decoding: try encoder.encode(results), as: UTF8.self))
} else {
    print("| benchmark | value | unit | baseline | baseline value | ratio |")
    print("|---|---:|---|---|---:|---:|")
    for result in results {
        let baselineValue = result.baselineValue.map(formatted) ?? "–"
        let ratio = result.ratio.map { String(format: "%.2f", $0) } ?? "–"
        let value = formatted(result.value)
        print("| \(result.name) | \(value) | \(result.unit) | \(result.baseline ?? "–") | \(baselineValue) | \(ratio) |")
    }
    print(
        "\n\(options.quick ? "quick" : "full") run took \(String(format: "%.1f", elapsed.inSeconds)) s on \(ProcessInfo.processInfo.activeProcessorCount) cores"
    )
}
