public import InMemoryTracing
import Synchronization
public import Tracing

/// swift-distributed-tracing's `InMemoryTracer`, with W3C Trace Context propagation: `inject`
/// writes `traceparent` (`00-<trace id>-<span id>-01`) and `extract` reads it, as an OpenTelemetry
/// tracer's propagator does, so a test sees what crosses the wire. Trace ids are 32 lowercase hex
/// digits and span ids 16, counted up from random starts.
public struct W3CTestTracer: Tracer {
    public let recorder: InMemoryTracer

    public init() {
        let traces = IDCounter()
        let spans = IDCounter()
        recorder = InMemoryTracer(
            idGenerator: .init(
                nextTraceID: {
                    let value = traces.next()
                    return Self.hex(value >> 1, digits: 16) + Self.hex(value, digits: 16)
                },
                nextSpanID: { Self.hex(spans.next(), digits: 16) }))
    }

    public func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> InstrumentationContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> InMemorySpan {
        recorder.startSpan(
            operationName, context: context(), ofKind: kind, at: instant(), function: function, file: fileID, line: line)
    }

    public func forceFlush() { recorder.forceFlush() }

    public func activeSpan(identifiedBy context: InstrumentationContext) -> InMemorySpan? {
        recorder.activeSpan(identifiedBy: context)
    }

    public func inject<Carrier, Inject: Injector>(
        _ context: InstrumentationContext, into carrier: inout Carrier, using injector: Inject
    ) where Carrier == Inject.Carrier {
        guard let span = context.inMemorySpanContext else { return }
        injector.inject("00-\(span.traceID)-\(span.spanID)-01", forKey: "traceparent", into: &carrier)
    }

    public func extract<Carrier, Extract: Extractor>(
        _ carrier: Carrier, into context: inout InstrumentationContext, using extractor: Extract
    ) where Carrier == Extract.Carrier {
        guard let parent = extractor.extract(key: "traceparent", from: carrier).flatMap(Self.parse) else { return }
        context.inMemorySpanContext = InMemorySpanContext(traceID: parent.traceID, spanID: parent.spanID, parentSpanID: nil)
    }

    /// The trace id and parent span id of a version-00 `traceparent`; `nil` for anything else.
    public static func parse(_ value: String) -> (traceID: String, spanID: String)? {
        let parts = value.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "00", parts[1].count == 32, parts[2].count == 16, parts[3].count == 2,
            parts.dropFirst().allSatisfy({ $0.allSatisfy(\.isHexDigit) })
        else { return nil }
        return (String(parts[1]), String(parts[2]))
    }

    /// The spans that ended so far.
    public var finishedSpans: [FinishedInMemorySpan] { recorder.finishedSpans }

    static func hex(_ value: UInt64, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}

/// Ids counted up from a random start.
private final class IDCounter: Sendable {
    private let value = Atomic<UInt64>(UInt64.random(in: 1...(UInt64.max / 2)))

    func next() -> UInt64 { value.add(1, ordering: .relaxed).newValue }
}
