import Foundation
import HTTPTypes
@_spi(OutpostInternal) import OutpostCore

/// Decoding: one list page of 10,000 entities, through the SDK's list path
/// (`EntityStore.page(_:)`, which sends the request through the client and decodes the page) and
/// through plain `JSONDecoder` into an equivalent envelope struct, on the same bytes.
///
/// The SDK side gets its bytes from an in-memory transport, so that the figure is the SDK's own
/// work (building the request, the middleware chain, the status and service-error checks, decoding
/// the items and the pagination keys) and no network time. Each side runs several times,
/// alternating; the fastest run of each counts, being the least disturbed by the rest of the machine.
enum EntityDecodingBench {
    static let count = 10_000

    /// A typical entity: strings, numbers, a flag, an array and a nested object.
    struct Person: Entity, Equatable {
        static let resourcePath = "records/people"
        var id: String?
        var name: String
        var email: String
        var age: Int
        var active: Bool
        var score: Double
        var tags: [String]
        var address: Address
        var createdAt: String

        struct Address: Codable, Sendable, Equatable {
            var street: String
            var city: String
            var postcode: String
        }
    }

    /// The same page as a plain `Decodable`, as one would write it without the SDK.
    struct PlainPage: Decodable {
        var results: [Person]
        var next_cursor: String?
        var prev_cursor: String?
        var next: String?
        var previous: String?
    }

    /// Answers every request with the same 200 JSON body.
    final class FixedResponseTransport: ClientTransport {
        let body: Data
        init(body: Data) { self.body = body }

        func send(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> (HTTPResponse, Data) {
            (HTTPResponse(status: .ok, headerFields: [.contentType: "application/json"]), self.body)
        }
    }

    /// `{"results": [10,000 people], "next_cursor": null, ...}` as the Outpost server writes a last page.
    static func makePage() throws -> Data {
        let people = (0..<count).map(person)
        var data = Data(#"{"results":"#.utf8)
        data.append(try JSONEncoder().encode(people))
        data.append(contentsOf: #","next_cursor":null,"prev_cursor":null,"next":null,"previous":null}"#.utf8)
        return data
    }

    static func person(_ index: Int) -> Person {
        let address = Person.Address(street: "\(index) Main Street", city: "Springfield", postcode: "\(10_000 + index % 90_000)")
        let tags = ["member", index % 2 == 0 ? "even" : "odd"]
        let score = Double(index % 1000) / 10
        return Person(
            id: "rec_\(index)", name: "Person \(index)", email: "person\(index)@example.com", age: 20 + index % 60,
            active: index % 3 != 0, score: score, tags: tags, address: address, createdAt: "2025-01-01T00:00:00Z")
    }

    static func run(_ options: BenchOptions) async throws -> [BenchResult] {
        let rounds = options.quick ? 3 : 15
        let body = try makePage()
        progress("entity decoding: \(count) entities (\(body.count / 1024) KiB), \(rounds) rounds per side")

        let client = OutpostClient(
            configuration: .init(baseURL: URL(string: "http://127.0.0.1:9")!),
            ownedTransport: FixedResponseTransport(body: body))
        let store = client.entities(.outpost)
        let request = ListRequest(Person.self, pageSize: count)
        let decoder = JSONDecoder()
        let clock = ContinuousClock()

        // Same result both ways, and one warm-up run of each.
        let viaSDK = try await store.page(request).items
        let viaPlain = try decoder.decode(PlainPage.self, from: body).results
        guard viaSDK.count == count, viaSDK == viaPlain else {
            throw BenchError("the SDK and JSONDecoder decoded different lists (\(viaSDK.count) vs \(viaPlain.count) items)")
        }

        var sdkBest = Duration.seconds(1_000)
        var plainBest = Duration.seconds(1_000)
        for _ in 0..<rounds {
            var start = clock.now
            let page = try await store.page(request)
            sdkBest = min(sdkBest, clock.now - start)
            guard page.items.count == count else { throw BenchError("the SDK decoded \(page.items.count) items") }

            start = clock.now
            let plain = try decoder.decode(PlainPage.self, from: body)
            plainBest = min(plainBest, clock.now - start)
            guard plain.results.count == count else { throw BenchError("JSONDecoder decoded \(plain.results.count) items") }
        }
        try await client.shutdown()

        return [
            BenchResult(
                name: "entities: decode a 10,000-entity page via EntityStore.page, time (lower is better)",
                value: sdkBest.microseconds / 1_000, unit: "ms",
                baseline: "JSONDecoder on the same bytes", baselineValue: plainBest.microseconds / 1_000),
            try await withErrorString(body, options: options, clean: sdkBest),
        ]
    }

    /// The same page where one item's tag is the string `"error"`. The client's check for service
    /// errors in 2xx bodies scans the bytes for `"error"` and, on a hit, parses the whole body as
    /// untyped JSON before decoding it: this row shows what that costs (ratio against the clean page).
    static func withErrorString(_ clean: Data, options: BenchOptions, clean cleanTime: Duration) async throws -> BenchResult {
        var text = String(decoding: clean, as: UTF8.self)
        guard let first = text.range(of: #""odd""#) else { throw BenchError("no tag to replace in the page") }
        text.replaceSubrange(first, with: #""error""#)
        let client = OutpostClient(
            configuration: .init(baseURL: URL(string: "http://127.0.0.1:9")!),
            ownedTransport: FixedResponseTransport(body: Data(text.utf8)))
        let store = client.entities(.outpost)
        let clock = ContinuousClock()
        var best = Duration.seconds(1_000)
        for _ in 0..<(options.quick ? 2 : 5) {
            let start = clock.now
            let page = try await store.page(ListRequest(Person.self, pageSize: count))
            best = min(best, clock.now - start)
            guard page.items.count == count else { throw BenchError("the SDK decoded \(page.items.count) items") }
        }
        try await client.shutdown()
        return BenchResult(
            name: #"entities: the same page with one tag "error", via EntityStore.page, time (lower is better)"#,
            value: best.microseconds / 1_000, unit: "ms", baseline: "the clean page via EntityStore.page",
            baselineValue: cleanTime.microseconds / 1_000)
    }
}
