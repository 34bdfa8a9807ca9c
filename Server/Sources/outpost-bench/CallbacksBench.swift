import Foundation
import OutpostCallbacks
import Synchronization

/// Routing throughput of `CallbackRouter` against Foundation's `URLComponents`.
enum CallbacksBench {
    /// A typical x-callback-url: a few parameters and encoded callback URLs.
    static let typicalURL =
        "notes://x-callback-url/create-note?x-source=Outpost%20Demo"
        + "&x-success=outpost%3A%2F%2Fx-callback-url%2Fdone%3FrequestID%3D42"
        + "&x-error=outpost%3A%2F%2Fx-callback-url%2Ffailed"
        + "&title=Shopping%20list&body=milk%2C%20eggs%20%26%20bread&tags=home&pinned=true"

    /// Keeps results observable so the optimiser cannot drop the work.
    private final class Sink: Sendable {
        let total = Atomic<Int>(0)
        func add(_ value: Int) { total.add(value, ordering: .relaxed) }
    }

    /// Interleaved rounds: each round measures the router and the baseline moments apart, in
    /// alternating order, so that a burst of other work on the machine touches both sides of its
    /// ratio. The figure is the median of the per-round ratios.
    static func run(_ options: BenchOptions) -> [BenchResult] {
        let iterations = options.quick ? 20_000 : 100_000
        let rounds = options.rounds ?? (options.quick ? 5 : 15)
        let url = typicalURL
        let sink = Sink()

        let router = CallbackRouter(opener: RecordingURLOpener())
        router.register(scheme: "notes", action: "create-note") { callback in
            sink.add(callback.parameters.count + (callback.successURL?.utf8.count ?? 0))
        }
        func routed() -> Double {
            Stopwatch.opsPerSecond(iterations: iterations) {
                _ = try? router.route(url)
            }
        }
        func baseline() -> Double {
            Stopwatch.opsPerSecond(iterations: iterations) {
                guard let components = URLComponents(string: url), let items = components.queryItems else { return }
                sink.add(items.count + (items.first { $0.name == "x-success" }?.value?.utf8.count ?? 0))
            }
        }
        _ = (routed(), baseline())  // warm-up
        var routedRounds: [Double] = []
        var baselineRounds: [Double] = []
        for round in 0..<rounds {
            if round.isMultiple(of: 2) {
                routedRounds.append(routed())
                baselineRounds.append(baseline())
            } else {
                baselineRounds.append(baseline())
                routedRounds.append(routed())
            }
        }
        return [
            BenchResult(
                name: "callbacks: route typical URL, median of \(rounds) interleaved rounds", value: median(routedRounds),
                unit: "ops/s", baseline: "URLComponents + queryItems", baselineValue: median(baselineRounds),
                ratio: ClientOverheadBench.medianRatio(routedRounds, baselineRounds))
        ]
    }
}
