public import CoreMetrics
public import Prometheus
public import Tracing

/// Where the server's metrics and spans go, and the Prometheus listener that serves the metrics.
///
/// The server never bootstraps the process-wide `MetricsSystem` or `InstrumentationSystem`: it
/// records into ``metricsFactory`` and ``tracer`` when they are set, else into what the process
/// bootstrapped (nothing, by default: no-op handlers). `outpost serve` bootstraps a Prometheus
/// factory once; tests that run several servers in one process give each its own registry.
public struct ObservabilityConfiguration: Sendable {
    /// The factory of the server's counters, timers and gauges. Default `nil`: `MetricsSystem.factory`.
    public var metricsFactory: (any MetricsFactory)?
    /// The tracer of the server's spans (one per request, one per storage operation). Default `nil`:
    /// `InstrumentationSystem.tracer`; with the no-op tracer the server makes no span at all.
    public var tracer: (any Tracer)?
    /// The registry whose text `GET /metrics` on ``metricsPort`` serves. Default `nil`: no listener.
    public var prometheus: PrometheusCollectorRegistry?
    /// The address of the metrics listener. Default `nil`: ``ServerConfiguration/host``.
    public var metricsHost: String?
    /// The port of the metrics listener (`0` picks a free one, see ``RunningServer/metricsPort``);
    /// it serves `GET /metrics` only, with no sign-in. Needs `prometheus`. Default `nil`: no listener.
    public var metricsPort: Int?

    public init(
        metricsFactory: (any MetricsFactory)? = nil, tracer: (any Tracer)? = nil,
        prometheus: PrometheusCollectorRegistry? = nil, metricsHost: String? = nil, metricsPort: Int? = nil
    ) {
        self.metricsFactory = metricsFactory
        self.tracer = tracer
        self.prometheus = prometheus
        self.metricsHost = metricsHost
        self.metricsPort = metricsPort
    }

    /// Metrics into `registry` (and no other), served on `port` when given.
    public static func prometheus(
        _ registry: PrometheusCollectorRegistry, port: Int? = nil, tracer: (any Tracer)? = nil
    ) -> ObservabilityConfiguration {
        ObservabilityConfiguration(
            metricsFactory: PrometheusMetricsFactory(registry: registry), tracer: tracer, prometheus: registry,
            metricsPort: port)
    }
}
