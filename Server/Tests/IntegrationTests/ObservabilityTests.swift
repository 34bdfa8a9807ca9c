import AsyncHTTPClient
import Foundation
import InMemoryTracing
import Outpost
import OutpostServer
import OutpostTestSupport
import Prometheus
import Testing
import Tracing

/// The server's metrics, read from its Prometheus registry as a scraper reads them, and its spans,
/// seen by an in-memory tracer that propagates `traceparent`; the client's spans and the header
/// they send.
// The time limit bounds a hang, not the speed: with every suite running at once on two cores, a
// test can wait over a minute for its turn.
@Suite("Metrics and traces", .closesWhatItOpens, .timeLimit(.minutes(3)))
struct ObservabilityTests {
    static let requests = "outpost_http_requests_total"

    @Test("requests are counted by route pattern, method and status on the metrics port; unknown paths share one label")
    func requestCounts() async throws {
        let registry = PrometheusCollectorRegistry()
        try await withLiveServer(configure: { $0.observability = .prometheus(registry, port: 0) }) { server, _ in
            let browser = TestBrowser()
            do {
                let base = server.baseURL.absoluteString
                for _ in 0..<2 { #expect(try await browser.get(base + "/health").status == 200) }
                #expect(try await browser.get(base + "/records/notes/no-such-note").status == 404)
                let strangers = (0..<3).map { _ in "/stranger-\(UUID().uuidString)" }
                for path in strangers { #expect(try await browser.get(base + path).status == 404) }
                #expect(try await browser.get(base + "/health", headers: ["X-Ignored": "1"]).status == 200)

                let metricsPort = try #require(server.running.metricsPort)
                #expect(metricsPort != server.running.port)
                let metricsURL = "http://127.0.0.1:\(metricsPort)/metrics"
                // Counted once the answer's last byte is written: the scrape may come just before that.
                let text = try #require(
                    try await eventually(within: .seconds(10)) { () -> PrometheusText? in
                        let page = try await browser.get(metricsURL)
                        let text = PrometheusText(page.body)
                        let health = text.value(Self.requests, ["route": "/health", "method": "GET", "status": "200"])
                        let unmatched = text.value(Self.requests, ["route": "unmatched", "method": "GET", "status": "404"])
                        return health == 3 && unmatched == 3 ? text : nil
                    })
                let records = text.matching(Self.requests, ["method": "GET", "status": "404"])
                    .filter { $0.labels["route"]?.hasPrefix("/records/") == true }
                #expect(records.count == 1)
                #expect(records.first?.labels["route"]?.contains("no-such-note") == false, "the pattern, not the path")
                #expect(records.first?.value == 1)
                let labels = text.samples.flatMap { $0.labels.values }
                #expect(!labels.contains { value in strangers.contains { value.contains($0) } })
                let timed = text.matching(
                    "outpost_http_request_duration_seconds_count", ["route": "/health", "status": "200"])
                #expect(timed.first?.value == 3)
                let storage = text.matching(
                    "outpost_storage_operation_duration_seconds_count", ["backend": LiveServer.backend.rawValue])
                #expect(storage.contains { $0.value > 0 }, "storage operations are timed")

                let page = try await browser.get(metricsURL)
                #expect(page.header("Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
                #expect(try await browser.get("http://127.0.0.1:\(metricsPort)/health").status == 404)
            } catch {
                Issue.record(error)
            }
            try await browser.shutdown()
        }
    }

    @Test("a failed and a successful sign-in are counted by grant and outcome")
    func signIns() async throws {
        let registry = PrometheusCollectorRegistry()
        try await withAuthFixture(configure: { $0.observability = .prometheus(registry) }) { fixture in
            let wrong = try await fixture.token([
                "grant_type": "password", "username": "ada", "password": "not the password",
                "client_id": fixture.publicClient.id,
            ])
            #expect(wrong.status == 400)
            _ = try await fixture.passwordTokens("ada")
            let unknown = try await fixture.token(["grant_type": "made-up", "client_id": fixture.publicClient.id])
            #expect(unknown.status == 400)
            let text = PrometheusText(registry.emitToString())
            let name = "outpost_sign_ins_total"
            #expect(text.value(name, ["grant": "password", "outcome": "failure"]) == 1)
            #expect(text.value(name, ["grant": "password", "outcome": "success"]) == 1)
            #expect(text.value(name, ["grant": "other", "outcome": "failure"]) == 1)
        }
    }

    @Test("the live-subscriber gauge follows change streams as they open and close")
    func liveSubscribers() async throws {
        let registry = PrometheusCollectorRegistry()
        try await withLiveServer(configure: {
            $0.observability = .prometheus(registry)
            // A stream learns that its client left when a heartbeat cannot be written.
            $0.changes.heartbeatInterval = .milliseconds(100)
        }) { server, _ in
            func subscribers() -> Double? {
                PrometheusText(registry.emitToString()).value("outpost_live_subscribers")
            }
            let http = ChangesIntegrationTests.rawClient()
            do {
                let url = server.baseURL.absoluteString + "/records/notes/changes"
                // Held until the gauge is read: a stream let go may close its connection.
                var open: [RawEventStream] = []
                for _ in 0..<2 {
                    let stream = try await RawEventStream.open(http, url)
                    #expect(stream.status == 200)
                    #expect(try await stream.next()?.event == "ready")
                    open.append(stream)
                }
                #expect(subscribers() == 2)
                #expect(open.count == 2)
            } catch {
                Issue.record(error)
            }
            try await http.shutdown()
            // The server learns of the closed connections from the network.
            #expect(try await eventually(within: .seconds(10)) { subscribers() == 0 })
        }
    }

    @Test("the server span continues the incoming traceparent and carries the request id; storage spans join it")
    func serverSpan() async throws {
        let tracer = W3CTestTracer()
        try await withLiveServer(configure: { $0.observability.tracer = tracer }) { server, _ in
            let browser = TestBrowser()
            do {
                let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
                let parentID = "00f067aa0ba902b7"
                let page = try await browser.get(
                    server.baseURL.absoluteString + "/records/notes",
                    headers: ["traceparent": "00-\(traceID)-\(parentID)-01"])
                #expect(page.status == 200)
                let span = try #require(
                    try await eventually(within: .seconds(10)) {
                        tracer.finishedSpans.first { $0.kind == .server && $0.traceID == traceID }
                    })
                #expect(span.parentSpanID == parentID)
                #expect(span.attributes["http.route"]?.toSpanAttribute() == .string("/records/{type}"))
                #expect(span.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(200))
                guard case .string(let requestID)? = span.attributes["outpost.request.id"]?.toSpanAttribute() else {
                    Issue.record("the server span carries no request id")
                    return
                }
                #expect(!requestID.isEmpty)
                let storage = tracer.finishedSpans.filter { $0.operationName.hasPrefix("storage ") && $0.traceID == traceID }
                #expect(!storage.isEmpty, "storage operations of the request are spans of its trace")
            } catch {
                Issue.record(error)
            }
            try await browser.shutdown()
        }
    }

    @Test("the client sends traceparent per attempt when it has a tracer and the server continues that trace")
    func clientTrace() async throws {
        let serverTracer = W3CTestTracer()
        let clientTracer = W3CTestTracer()
        try await withLiveServer(
            configure: { $0.observability.tracer = serverTracer },
            client: { url in
                var configuration = OutpostClient.Configuration(baseURL: url)
                configuration.tracer = clientTracer
                return OutpostClient(configuration: configuration)
            }
        ) { _, client in
            // One 503, then the answer: two attempts under one call.
            _ = try await client.send(
                Request.post("/handlers/flaky", json: ["failures": 1, "retry_after": "0"]).idempotencyKey())
            let clientSpans = clientTracer.finishedSpans
            let call = try #require(clientSpans.first { $0.operationName == "POST /handlers/flaky" })
            let attempts = clientSpans.filter { $0.parentSpanID == call.spanID }
            #expect(attempts.count == 2)
            #expect(attempts.allSatisfy { $0.traceID == call.traceID && $0.kind == .client })
            let serverSpans = try #require(
                try await eventually(within: .seconds(10)) { () -> [FinishedInMemorySpan]? in
                    let spans = serverTracer.finishedSpans.filter { $0.kind == .server && $0.traceID == call.traceID }
                    return spans.count == 2 ? spans : nil
                })
            #expect(Set(serverSpans.compactMap(\.parentSpanID)) == Set(attempts.map(\.spanID)))
        }
    }

    @Test("without a tracer the client sends no traceparent: the server's span starts a trace of its own")
    func noClientTracer() async throws {
        let serverTracer = W3CTestTracer()
        try await withLiveServer(configure: { $0.observability.tracer = serverTracer }) { _, client in
            #expect(InstrumentationSystem.tracer is NoOpTracer)
            _ = try await client.send(.get("/health"))
            let span = try #require(
                try await eventually(within: .seconds(10)) {
                    serverTracer.finishedSpans.first { $0.kind == .server }
                })
            #expect(span.parentSpanID == nil)
        }
    }
}
