import HTTPTypes
import Tracing

/// Spans of client requests, made only when the application bootstrapped a tracer
/// (`InstrumentationSystem.bootstrap`) or configured one (``OutpostClient/Configuration/tracer``): a span per call of ``PreparedRequest/start()``, and a child
/// span per attempt (the first and each retry) whose context the tracer writes into that attempt's
/// headers (`traceparent` with a W3C propagator), so the server's span continues the trace. With
/// the default no-op tracer nothing is made and no header is added; the cost is one check.
enum RequestTracing {
    /// The configured tracer, else the process's; `nil` when that is the no-op one.
    static func tracer(_ configured: (any Tracer)?) -> (any Tracer)? {
        let tracer = configured ?? InstrumentationSystem.tracer
        return tracer is NoOpTracer ? nil : tracer
    }

    /// Runs `body` inside the span of one call (`METHOD path`, without the query).
    static func call<T>(
        _ tracer: any Tracer, method: String, path: String, operationName: String?, _ body: () async throws -> T
    ) async throws -> T {
        let span = tracer.startSpan("\(method) \(path)", context: InstrumentationContext.current ?? .topLevel, ofKind: .client)
        span.attributes["http.request.method"] = method
        span.attributes["url.path"] = path
        if let operationName { span.attributes["outpost.operation"] = operationName }
        defer { span.end() }
        do {
            return try await InstrumentationContext.$current.withValue(span.context) { try await body() }
        } catch {
            span.recordError(error)
            throw error
        }
    }

    /// The span of attempt `attempt` (1 for the first), a child of the current call's span, and
    /// `request` with its context injected into the headers.
    static func attempt(_ tracer: any Tracer, _ request: HTTPRequest, attempt: Int) -> (any Span, HTTPRequest) {
        let span = tracer.startSpan(
            request.method.rawValue, context: InstrumentationContext.current ?? .topLevel, ofKind: .client)
        span.attributes["http.request.method"] = request.method.rawValue
        if attempt > 1 { span.attributes["http.request.resend_count"] = attempt - 1 }
        var request = request
        tracer.inject(span.context, into: &request.headerFields, using: HTTPFieldsInjector())
        return (span, request)
    }

    /// Ends an attempt's span with its answer's status, or the error that ended it.
    static func end(_ span: any Span, status: Int? = nil, error: (any Error)? = nil) {
        if let status {
            span.attributes["http.response.status_code"] = status
            if status >= 500 { span.setStatus(SpanStatus(code: .error)) }
        }
        if let error { span.recordError(error) }
        span.end()
    }
}

/// Writes propagation fields (`traceparent`, `tracestate`, `baggage`) into request headers.
struct HTTPFieldsInjector: Injector {
    func inject(_ value: String, forKey key: String, into fields: inout HTTPFields) {
        guard let name = HTTPField.Name(key) else { return }
        fields[name] = value
    }
}
