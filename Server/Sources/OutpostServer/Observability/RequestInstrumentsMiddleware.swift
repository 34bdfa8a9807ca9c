import HTTPTypes
import Hummingbird
import Instrumentation
import Tracing

/// Counts and times every request by route, method and status, and, when a tracer is in use, makes
/// a server span per request that continues the caller's trace (the tracer reads `traceparent`).
///
/// Hummingbird's own `MetricsMiddleware` and `TracingMiddleware` record into the process-wide
/// systems only, label by any method a client sends, and put the query (which may hold a
/// secret) on the span; this one takes the server's own factory and tracer, keeps every label in a
/// bounded set, and records the path without the query plus the request id.
///
/// The router's outermost middleware but the client-address one: it sees the final status of every
/// answer, the JSON error envelope's included. Durations run to the last byte of the answer's body.
struct RequestInstrumentsMiddleware<Context: RequestContext>: RouterMiddleware {
    let instruments: ServerInstruments

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let started = ContinuousClock.now
        let instruments = self.instruments
        instruments.requestsInFlight.increment()
        let span = instruments.traces ? Self.startSpan(request, context: context, tracer: instruments.tracer) : nil
        let method = ServerInstruments.methodLabel(request.method.rawValue)
        do {
            var response: Response
            if let span {
                response = try await InstrumentationContext.$current.withValue(span.context) {
                    try await next(request, context)
                }
            } else {
                response = try await next(request, context)
            }
            let route = Self.routeLabel(context.endpointPath)
            let status = Int(response.status.code)
            if let span {
                span.operationName = "\(request.method.rawValue) \(route)"
                span.attributes["http.route"] = route
                span.attributes["http.response.status_code"] = status
                if status >= 500 { span.setStatus(SpanStatus(code: .error)) }
            }
            if status == 429 { instruments.rateLimited(route: route).increment() }
            let metrics = instruments.request(.init(route: route, method: method, status: status))
            let body = response.body
            response.body = ResponseBody(contentLength: body.contentLength) { writer in
                defer {
                    metrics.count.increment()
                    metrics.duration.recordInterval(since: started)
                    instruments.requestsInFlight.decrement()
                    span?.end()
                }
                try await body.write(writer)
            }
            return response
        } catch {
            // Only what the envelope middleware did not answer comes here (a failure writing it).
            let route = Self.routeLabel(context.endpointPath)
            let status = Int((error as? any HTTPResponseError)?.status.code ?? 500)
            let metrics = instruments.request(.init(route: route, method: method, status: status))
            metrics.count.increment()
            metrics.duration.recordInterval(since: started)
            instruments.requestsInFlight.decrement()
            if let span {
                span.attributes["http.response.status_code"] = status
                span.recordError(error)
                span.end()
            }
            throw error
        }
    }

    /// The server span of `request`, a child of the caller's span when the request carries one.
    static func startSpan(_ request: Request, context: Context, tracer: any Tracer) -> any Span {
        var parent = InstrumentationContext.current ?? .topLevel
        tracer.extract(request.headers, into: &parent, using: HTTPFieldsExtractor())
        let span = tracer.startSpan("\(request.method.rawValue)", context: parent, ofKind: .server)
        span.attributes["http.request.method"] = request.method.rawValue
        span.attributes["url.path"] = request.uri.path
        span.attributes["outpost.request.id"] = context.id
        if let agent = request.headers[.userAgent] { span.attributes["user_agent.original"] = agent }
        return span
    }

    /// The route label: the matched route's pattern, or `unmatched` for a path no route serves.
    static func routeLabel(_ endpoint: String?) -> String {
        guard let endpoint, endpoint != "NotFound" else { return "unmatched" }
        return endpoint
    }
}

/// Reads propagation fields (`traceparent`, `tracestate`, `baggage`) from request headers.
struct HTTPFieldsExtractor: Extractor {
    func extract(key: String, from fields: HTTPFields) -> String? {
        guard let name = HTTPField.Name(key) else { return nil }
        return fields[name]
    }
}
