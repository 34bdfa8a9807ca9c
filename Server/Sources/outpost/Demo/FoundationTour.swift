import Foundation
import HTTPTypes
import Outpost
import Synchronization

/// A custom operation: the server's `time` handler, as an app would wrap it.
struct TimeInZone: ClientOperation {
    struct Reply: Decodable, Sendable {
        var zone: String
        var time: String
        var utcOffsetSeconds: Int

        enum CodingKeys: String, CodingKey {
            case zone, time
            case utcOffsetSeconds = "utc_offset_seconds"
        }
    }

    var zone: String

    func makeRequest() throws -> Request {
        .post("/handlers/time", json: ["zone": .string(zone)])
    }

    func handleResponse(_ response: ClientResponse, client: OutpostClient) throws -> Reply {
        try client.decode(Reply.self, from: response, method: "POST", path: "/handlers/time")
    }
}

/// Lambdas, a custom operation, middleware, and how errors read.
enum FoundationTour {
    static func run(client: OutpostClient, baseURL: URL, log: TourLog) async throws {
        log.section("Lambdas")
        let positional = try await client.callLambda("hello:someone", arguments: .positional(["world"]))
        log.step("callLambda(\"hello:someone\", .positional([\"world\"]))")
        log.detail("→ \(positional)")
        let named = try await client.callLambda("hello:someone", arguments: .named(["name": "Outpost"]))
        log.step("callLambda(\"hello:someone\", .named([\"name\": \"Outpost\"]))")
        log.detail("→ \(named)")
        struct Greeting: Encodable, Sendable { var name: String }
        let typed = try await client.callLambda("hello:someone", arguments: Greeting(name: "typed caller"), as: String.self)
        log.step("callLambda(\"hello:someone\", arguments: Greeting(name:), as: String.self)")
        log.detail("→ \"\(typed)\" (a Swift String)")

        log.section("A custom operation")
        let tokyo = try await client.perform(TimeInZone(zone: "Asia/Tokyo"))
        log.step("perform(TimeInZone(zone: \"Asia/Tokyo\"))")
        log.detail("→ \(tokyo.time) (UTC offset \(tokyo.utcOffsetSeconds / 3600) h)")
        let zones = ["Europe/Paris", "America/New_York", "Australia/Sydney", "Not/AZone"]
        let results = await client.performAll(zones.map { TimeInZone(zone: $0) }, maxConcurrent: 2)
        log.step("performAll(4 operations, maxConcurrent: 2)")
        for (zone, result) in zip(zones, results) {
            switch result {
            case .success(let reply): log.detail("\(zone): \(reply.time)")
            case .failure(let error): log.detail("\(zone): failed with \(error.code) [\(error.serverCode ?? "-")]")
            }
        }

        log.section("Middleware")
        let seen = Mutex<[String]>([])
        let tagging = HeaderMiddleware([HTTPField.Name("X-Demo-Tag")!: "tour"])
        let observer = ClosureMiddleware { request, body, _, next in
            let response = try await next(request, body)
            let json = (try? response.json())?.jsonString() ?? "-"
            seen.withLock { $0.append("\(request.method) \(request.path ?? "") → \(response.status) \(json)") }
            return response
        }
        let watched = OutpostClient(
            configuration: client.configuration, transport: client.transport, middlewares: [tagging, observer])
        _ = try await watched.callLambda("hello:someone", "middleware")
        log.step("A header-adding middleware and one that reads every response's JSON:")
        for line in seen.withLock({ $0 }) { log.detail(line) }
        let prepared = try watched.prepare(.post("/lambdas/hello:someone", json: ["args": ["later"]]))
        log.step("prepare(...) builds the request without sending it: \(prepared.request.method) \(prepared.request.path ?? "")")
        let later = try await prepared.start()
        log.detail("start() later → \(try later.json())")

        log.section("Errors read as what to do")
        do {
            _ = try await client.perform(TimeInZone(zone: "Mars/Olympus_Mons"))
        } catch let error as OutpostError {
            log.step("perform(TimeInZone(zone: \"Mars/Olympus_Mons\")) threw code \(error.code), status \(error.status ?? 0):")
            log.detail(error.description)
        }
        do {
            _ = try await client.callLambda("no-such-lambda")
        } catch let error as OutpostError {
            log.step("callLambda(\"no-such-lambda\") threw \(error.code) [\(error.serverCode ?? "-")]:")
            log.detail(error.description)
        }
    }
}
