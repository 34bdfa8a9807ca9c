import Foundation
import HTTPTypes
import Logging
import Outpost
import OutpostServer
import OutpostTestSupport
import Testing

/// The server's access log, read back: how many requests for `path` reached it, and with which statuses.
extension LogRecorder {
    func requests(to path: String, method: String = "GET") -> [String] {
        all.filter { $0.contains(" request ") && $0.contains("method=\(method) ") && $0.contains("path=\(path) ") }
    }
}

@Suite("HTTP cache against the live server", .closesWhatItOpens)
struct HTTPCacheIntegrationTests {
    static func cachedClient(_ base: URL, auth: Authenticator? = nil, offline: Bool = false) -> (OutpostClient, HTTPCache) {
        let cache = HTTPCache(configuration: .init(serveStaleWhenOffline: offline))
        var configuration = OutpostClient.Configuration(baseURL: base)
        configuration.retry.maxAttempts = 1
        let middlewares: [any ClientMiddleware] = (auth.map { [AuthMiddleware(authenticator: $0)] } ?? []) + [cache]
        return (OutpostClient(configuration: configuration, middlewares: middlewares), cache)
    }

    @Test("a fresh response (max-age) answers the second GET without a request reaching the server")
    func freshHit() async throws {
        let log = LogRecorder()
        try await withLiveServer(configure: { $0.logger = log.logger(level: .info) }) { server, _ in
            let (client, _) = Self.cachedClient(server.baseURL)
            let first = try await client.send(.get("/openapi.json"))
            let second = try await client.send(.get("/openapi.json"))
            #expect(first.cacheStatus == .miss && second.cacheStatus == .hit)
            #expect(second.body == first.body)
            #expect(log.requests(to: "/openapi.json").count == 1, "\(log.requests(to: "/openapi.json"))")
            try await client.shutdown()
        }
    }

    @Test("a record read and a list page are revalidated with their ETag: the server answers 304, the caller sees 200")
    func revalidation() async throws {
        let log = LogRecorder()
        try await withLiveServer(configure: { $0.logger = log.logger(level: .info) }) { server, _ in
            let (client, _) = Self.cachedClient(server.baseURL)
            let created = try await client.send(.post("/records/memos", json: ["title": "first"])).json()
            let id = try #require(created["id"]?.stringValue)
            let path = "/records/memos/\(id)"
            let first = try await client.send(.get(path))
            #expect(first.headerFields[.cacheControl] == "private, max-age=0")
            #expect(first.headerFields[.lastModified] != nil)
            let second = try await client.send(.get(path))
            #expect(second.status == 200 && second.cacheStatus == .revalidated)
            #expect(try second.json()["title"] == "first")
            let statuses = log.requests(to: path).map { $0.contains("status=304") ? 304 : 200 }
            #expect(statuses == [200, 304])

            _ = try await client.send(.get("/records/memos"))
            let page = try await client.send(.get("/records/memos"))
            #expect(page.cacheStatus == .revalidated)
            #expect(log.requests(to: "/records/memos").last?.contains("status=304") == true)

            // A write through the same client invalidates the entry: the next read gets the new body.
            _ = try await client.send(Request(method: .put, path: path, body: .json(["title": "second"])))
            let changed = try await client.send(.get(path))
            #expect(try changed.cacheStatus == .miss && changed.json()["title"] == "second")
            try await client.shutdown()
        }
    }

    @Test("the server answers If-None-Match and If-Modified-Since with 304 on records, and If-None-Match on lists")
    func serverConditionals() async throws {
        try await withLiveServer { _, client in
            let created = try await client.send(.post("/records/memos", json: ["title": "x"]))
            let id = try #require(try created.json()["id"]?.stringValue)
            let read = try await client.send(.get("/records/memos/\(id)"))
            let etag = try #require(read.headerFields[.eTag])
            let modified = try #require(read.headerFields[.lastModified])
            func get(_ path: String, _ fields: HTTPFields) async throws -> ClientResponse {
                try await client.send(Request(method: .get, path: path, headers: fields))
            }
            #expect(try await get("/records/memos/\(id)", [.ifNoneMatch: etag]).status == 304)
            #expect(try await get("/records/memos/\(id)", [.ifModifiedSince: modified]).status == 304)
            #expect(try await get("/records/memos/\(id)", [.ifModifiedSince: "Sun, 06 Nov 1994 08:49:37 GMT"]).status == 200)
            #expect(try await get("/records/memos/\(id)", [.ifNoneMatch: "\"v999\""]).status == 200)
            let list = try await client.send(.get("/records/memos"))
            let listTag = try #require(list.headerFields[.eTag])
            #expect(listTag.hasPrefix("W/\""))
            let notModified = try await get("/records/memos", [.ifNoneMatch: listTag])
            #expect(notModified.status == 304 && notModified.headerFields[.eTag] == listTag)
            _ = try await client.send(.post("/records/memos", json: ["title": "y"]))
            #expect(try await get("/records/memos", [.ifNoneMatch: listTag]).status == 200, "a new record changes the page")
        }
    }

    @Test("two accounts on one cache never share an entry, online or offline; stale is served once the server stops")
    func accountsAndOffline() async throws {
        let log = LogRecorder()
        try await withAuthFixture(configure: { $0.logger = log.logger(level: .info) }) { fixture in
            let (ada, adaClient) = fixture.authenticator()
            let (bob, bobClient) = fixture.authenticator()
            _ = try await ada.signIn(username: "ada", password: AuthFixture.password)
            _ = try await bob.signIn(username: "bob", password: AuthFixture.password)
            let cache = HTTPCache(configuration: .init(serveStaleWhenOffline: true))
            var configuration = OutpostClient.Configuration(baseURL: fixture.server.baseURL)
            configuration.retry.maxAttempts = 1
            let asAda = OutpostClient(configuration: configuration, middlewares: [AuthMiddleware(authenticator: ada), cache])
            let asBob = OutpostClient(configuration: configuration, middlewares: [AuthMiddleware(authenticator: bob), cache])
            let created = try await asAda.send(
                Request(
                    method: .post, path: "/records/diary", query: [URLQueryItem(name: "visibility", value: "private")],
                    body: .json(["text": "ada's secret"])))
            let path = "/records/diary/\(try #require(try created.json()["id"]?.stringValue))"
            #expect(try await asAda.send(.get(path)).cacheStatus == .miss)
            let refused = await #expect(throws: OutpostError.self) { try await asBob.send(.get(path)) }
            #expect(refused?.status == 404, "bob's request reached the server and was refused, not answered from ada's entry")
            #expect(log.requests(to: path).count == 2)

            await fixture.server.running.stop()
            // Hold the port so that a server another test starts cannot take it and answer bob.
            let gone = try ClosedPort(port: fixture.server.baseURL.port ?? 0)
            defer { gone.release() }
            let stale = try await asAda.send(.get(path))
            #expect(try stale.cacheStatus == .stale && stale.json()["text"] == "ada's secret")
            let offline = await #expect(throws: OutpostError.self) { try await asBob.send(.get(path)) }
            #expect(offline?.code == .cannotConnect, "bob has no entry of his own to fall back on")
            for client in [asAda, asBob, adaClient, bobClient] { try await client.shutdown() }
        }
    }
}
