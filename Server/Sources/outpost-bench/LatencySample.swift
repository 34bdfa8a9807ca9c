import Foundation
@_spi(OutpostInternal) import OutpostSupport

/// Request latencies of one measurement, in nanoseconds, with nearest-rank percentiles.
struct LatencySample: Sendable {
    private(set) var nanoseconds: [UInt64] = []
    private var sorted = true

    init(reservingCapacity capacity: Int = 0) {
        nanoseconds.reserveCapacity(capacity)
    }

    var count: Int { nanoseconds.count }

    mutating func record(_ duration: Duration) {
        nanoseconds.append(UInt64(max(0, duration.inNanoseconds)))
        sorted = false
    }

    mutating func append(contentsOf other: LatencySample) {
        nanoseconds.append(contentsOf: other.nanoseconds)
        sorted = false
    }

    /// The `p`-th percentile (`p` in 0...1), nearest rank; zero when empty.
    mutating func percentile(_ p: Double) -> Duration {
        guard !nanoseconds.isEmpty else { return .zero }
        if !sorted {
            nanoseconds.sort()
            sorted = true
        }
        let rank = Int((p * Double(nanoseconds.count)).rounded(.up))
        return .nanoseconds(Int64(nanoseconds[min(max(rank, 1), nanoseconds.count) - 1]))
    }
}

extension Duration {
    /// The duration in microseconds as a `Double`.
    var microseconds: Double { Double(inNanoseconds) / 1_000 }
}

/// The median of some measurements (the mean of the middle two for an even count); zero when empty.
func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return 0 }
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count.isMultiple(of: 2) ? (sorted[middle - 1] + sorted[middle]) / 2 : sorted[middle]
}

/// Progress for whoever watches the run; stderr, so that `--json` output stays clean.
func progress(_ message: String) {
    FileHandle.standardError.write(Data("outpost-bench: \(message)\n".utf8))
}
