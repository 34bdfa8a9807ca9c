import CoreMetrics
import Synchronization
import Tracing

/// The names of the server's metrics (Prometheus names: `snake_case`, counters end in `_total`,
/// durations in `_seconds`). Every label value is drawn from a bounded set.
enum MetricName {
    /// Requests answered, by `route` (the route's pattern, `unmatched` for paths no route serves),
    /// `method` (`other` for methods the server serves none of) and `status`.
    static let requests = "outpost_http_requests_total"
    /// The time from a request's head to the last byte of its answer, with the labels of ``requests``.
    static let requestDuration = "outpost_http_request_duration_seconds"
    /// Requests being answered now.
    static let requestsInFlight = "outpost_http_requests_in_flight"
    /// Answers 429 (a rate limit or a per-caller bound), by `route`.
    static let rateLimited = "outpost_http_rate_limited_total"
    /// Connections refused at once because the server held ``ServerConfiguration/maxConnections``.
    static let connectionsRefused = "outpost_connections_refused_total"
    /// Token requests by `grant` (`other` for grants the server does not know) and `outcome`
    /// (`success`, `failure`).
    static let signIns = "outpost_sign_ins_total"
    /// Open change streams (`GET /records/{type}/changes`).
    static let liveSubscribers = "outpost_live_subscribers"
    /// File uploads (`PUT /files/{name}`, `PATCH` of a resumable upload) whose body is being read.
    static let uploadsInFlight = "outpost_uploads_in_flight"
    /// Storage operations by `backend` (`sqlite`, `postgres`) and `operation` (``StorageOperation``).
    static let storageDuration = "outpost_storage_operation_duration_seconds"
    /// Statements retried because another connection or process held a lock (SQLite), by `backend`.
    static let storageBusyRetries = "outpost_storage_busy_retries_total"
}

/// The server's metrics and tracer, made once per server from its ``ObservabilityConfiguration``.
final class ServerInstruments: Sendable {
    let factory: any MetricsFactory
    let tracer: any Tracer
    /// Whether spans are made at all (the tracer is not the no-op one).
    let traces: Bool
    /// Whether anything is recorded at all: `false` with the no-op factory and tracer, when the
    /// server adds no instruments middleware.
    let records: Bool
    let requestsInFlight: Meter
    let connectionsRefused: Counter
    let liveSubscribers: Meter
    let uploadsInFlight: Meter
    private let requestMetrics = Mutex<[RequestKey: RequestMetrics]>([:])
    private let rateLimited = Mutex<[String: Counter]>([:])
    private let signIns = Mutex<[SignInKey: Counter]>([:])
    let storage: StorageInstruments

    init(_ configuration: ObservabilityConfiguration) {
        let factory = configuration.metricsFactory ?? MetricsSystem.factory
        let tracer = configuration.tracer ?? InstrumentationSystem.tracer
        self.factory = factory
        self.tracer = tracer
        let traces = !(tracer is NoOpTracer)
        self.traces = traces
        self.records = traces || !(factory is NOOPMetricsHandler)
        requestsInFlight = Meter(label: MetricName.requestsInFlight, factory: factory)
        connectionsRefused = Counter(label: MetricName.connectionsRefused, factory: factory)
        liveSubscribers = Meter(label: MetricName.liveSubscribers, factory: factory)
        uploadsInFlight = Meter(label: MetricName.uploadsInFlight, factory: factory)
        storage = StorageInstruments(factory: factory, tracer: traces ? tracer : nil)
    }

    /// Instruments that record nothing (routers built without a server's configuration).
    static let none = ServerInstruments(
        ObservabilityConfiguration(metricsFactory: NOOPMetricsHandler.instance, tracer: NoOpTracer()))

    struct RequestKey: Hashable {
        let route: String
        let method: String
        let status: Int
    }

    struct RequestMetrics {
        let count: Counter
        let duration: Timer
    }

    private struct SignInKey: Hashable {
        let grant: String
        let success: Bool
    }

    /// The counter and timer of one route, method and status, made on first use.
    func request(_ key: RequestKey) -> RequestMetrics {
        requestMetrics.withLock { cache in
            if let metrics = cache[key] { return metrics }
            let dimensions = [("route", key.route), ("method", key.method), ("status", String(key.status))]
            let metrics = RequestMetrics(
                count: Counter(label: MetricName.requests, dimensions: dimensions, factory: factory),
                duration: Timer(label: MetricName.requestDuration, dimensions: dimensions, factory: factory))
            cache[key] = metrics
            return metrics
        }
    }

    func rateLimited(route: String) -> Counter {
        rateLimited.withLock { cache in
            if let counter = cache[route] { return counter }
            let counter = Counter(label: MetricName.rateLimited, dimensions: [("route", route)], factory: factory)
            cache[route] = counter
            return counter
        }
    }

    /// Counts one token request of `grant` (the form's `grant_type`, mapped to a bounded name).
    func signIn(grant: String?, success: Bool) {
        let key = SignInKey(grant: Self.grantLabel(grant), success: success)
        let counter = signIns.withLock { cache in
            if let counter = cache[key] { return counter }
            let counter = Counter(
                label: MetricName.signIns,
                dimensions: [("grant", key.grant), ("outcome", success ? "success" : "failure")], factory: factory)
            cache[key] = counter
            return counter
        }
        counter.increment()
    }

    /// The label of a `grant_type`: the grants the token endpoint knows, by short name; `other` for the rest.
    static func grantLabel(_ grant: String?) -> String {
        switch grant {
        case "authorization_code", "refresh_token", "password", "client_credentials": grant ?? "other"
        case "urn:ietf:params:oauth:grant-type:device_code": "device_code"
        case IDTokenExchange.grantType: "token_exchange"
        case nil: "missing"
        default: "other"
        }
    }

    /// The label of a method: the methods routes serve; `other` for the rest (a client may send any token).
    static func methodLabel(_ method: String) -> String {
        switch method {
        case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS": method
        default: "other"
        }
    }
}
