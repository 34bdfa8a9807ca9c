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

    static func run(_ options: BenchOptions) -> [BenchResult] {
        let iterations = options.quick ? 20_000 : 200_000
        let rounds = options.quick ? 3 : 5
        let url = typicalURL
        let sink = Sink()

        let router = CallbackRouter(opener: RecordingURLOpener())
        router.register(scheme: "notes", action: "create-note") { callback in
            sink.add(callback.parameters.count + (callback.successURL?.utf8.count ?? 0))
        }
        let routed = Stopwatch.best(rounds: rounds) {
            Stopwatch.opsPerSecond(iterations: iterations) {
                _ = try? router.route(url)
            }
        }

        let baseline = Stopwatch.best(rounds: rounds) {
            Stopwatch.opsPerSecond(iterations: iterations) {
                guard let components = URLComponents(string: url), let items = components.queryItems else { return }
                sink.add(items.count + (items.first { $0.name == "x-success" }?.value?.utf8.count ?? 0))
            }
        }

        return [
            BenchResult(
                name: "callbacks: route typical URL", value: routed, unit: "ops/s",
                baseline: "URLComponents + queryItems", baselineValue: baseline)
        ]
    }
}
