import Foundation
@_spi(OutpostInternal) import OutpostSupport

/// One measured figure, printed as a Markdown table row or as one element of `--json` output.
///
/// `ratio` is `value / baseline_value`: for throughput figures above 1 means faster than the
/// baseline; for time or memory figures below 1 means cheaper. The benchmark that produces a
/// figure says which way is better in its name.
struct BenchResult: Codable, Sendable {
    var name: String
    var value: Double
    var unit: String
    var baseline: String?
    var baselineValue: Double?
    var ratio: Double?

    enum CodingKeys: String, CodingKey {
        case name, value, unit, baseline
        case baselineValue = "baseline_value"
        case ratio
    }

    /// - Parameter ratio: the ratio to report when it is not `value / baselineValue`, e.g. the median
    ///   of per-round ratios.
    init(
        name: String, value: Double, unit: String, baseline: String? = nil, baselineValue: Double? = nil, ratio: Double? = nil
    ) {
        self.name = name
        self.value = value
        self.unit = unit
        self.baseline = baseline
        self.baselineValue = baselineValue
        if let ratio {
            self.ratio = ratio
        } else if let baselineValue, baselineValue != 0 {
            self.ratio = value / baselineValue
        } else {
            self.ratio = nil
        }
    }
}

/// Options every benchmark receives.
struct BenchOptions: Sendable {
    /// `--quick`: small iteration counts, so that the whole run finishes in under a minute.
    var quick: Bool
    /// `--rounds N`: the interleaved rounds per figure of the groups that take it (client, callbacks, cache,
    /// outbox, server, storage, reads under writes), instead of each one's default.
    var rounds: Int? = nil
    /// `--read-concurrency N`: the connections of the storage group's read loads, instead of
    /// ``StorageBench/readConcurrency`` (the reads under writes keep theirs).
    var readConcurrency: Int? = nil
}

/// Wall-clock helpers for benchmarks (never used by tests).
enum Stopwatch {
    /// Runs `body` `iterations` times and returns the operations per second.
    static func opsPerSecond(iterations: Int, _ body: () throws -> Void) rethrows -> Double {
        let clock = ContinuousClock()
        let elapsed = try clock.measure {
            for _ in 0..<iterations { try body() }
        }
        return Double(iterations) / elapsed.inSeconds
    }

    /// Async form of ``opsPerSecond(iterations:_:)``.
    static func opsPerSecond(iterations: Int, _ body: () async throws -> Void) async rethrows -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        for _ in 0..<iterations { try await body() }
        return Double(iterations) / (clock.now - start).inSeconds
    }

    /// Takes the best of `rounds` measurements, which is the least disturbed by other work on the machine.
    static func best(rounds: Int, _ measure: () throws -> Double) rethrows -> Double {
        var best = 0.0
        for _ in 0..<rounds { best = max(best, try measure()) }
        return best
    }
}
