import Foundation
import HTTPTypes
@_spi(OutpostInternal) import OutpostSupport
import OutpostTesting
import Synchronization
import Testing

@_spi(OutpostInternal) @testable import OutpostCore

/// A clock the test moves by hand.
final class TestClock: Sendable {
    private let value = Mutex(Date(timeIntervalSince1970: 1_700_000_000))
    var now: Date { value.withLock { $0 } }
    func advance(_ seconds: TimeInterval) { value.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

/// A backend for cache tests: answers from a closure, counts what reaches it, can be switched off.
final class CacheBackend: Sendable {
    typealias Answer = @Sendable (HTTPRequest) -> (HTTPResponse, Data)
    private let state: Mutex<(answer: Answer, offline: Bool, requests: [HTTPRequest])>

    init(_ answer: @escaping Answer) { state = Mutex((answer, false, [])) }

    var requests: [HTTPRequest] { state.withLock { $0.requests } }
    func answer(_ answer: @escaping Answer) { state.withLock { $0.answer = answer } }
    func setOffline(_ offline: Bool) { state.withLock { $0.offline = offline } }

    func client(_ cache: HTTPCache, extra: [any ClientMiddleware] = []) -> OutpostClient {
        let transport = ScriptedTransport { [self] request, _ in
            let (answer, offline) = state.withLock { state in
                state.requests.append(request)
                return (state.answer, state.offline)
            }
            if offline { throw OutpostError(.cannotConnect, "Could not connect (test)") }
            return answer(request)
        }
        var configuration = OutpostClient.Configuration(baseURL: URL(string: "http://cache.test")!)
        configuration.retry.maxAttempts = 1
        return OutpostClient(configuration: configuration, transport: transport, middlewares: extra + [cache])
    }

    static func reply(_ status: Int = 200, _ body: String = "{}", _ fields: HTTPFields = [:]) -> (HTTPResponse, Data) {
        (HTTPResponse(status: .init(code: status), headerFields: fields), Data(body.utf8))
    }
}

@Suite("HTTP cache: parsing")
struct CacheParsingTests {
    @Test("SHA-256 matches the FIPS 180-4 examples")
    func sha256() {
        #expect(SHA256Digest.hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256Digest.hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            SHA256Digest.hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(
            SHA256Digest.hexString(SHA256Digest.hash(Array(repeating: UInt8(ascii: "a"), count: 1_000_000)))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("Cache-Control directives, several lines, quoted and invalid arguments")
    func directives() {
        let fields: HTTPFields = [
            .cacheControl: "private, max-age=\"60\", must-revalidate", .cacheControl: "S-MAXAGE=5, stale-if-error=30",
        ]
        let parsed = CacheDirectives(fields)
        #expect(parsed.isPrivate && parsed.mustRevalidate && !parsed.noStore)
        #expect(parsed.maxAge == 60, "s-maxage is ignored by a private cache")
        #expect(parsed.staleIfError == 30)
        #expect(CacheDirectives([.cacheControl: "max-age=soon"]).maxAge == 0, "an invalid max-age means stale")
        #expect(CacheDirectives([.cacheControl: "max-age=99999999999999"]).maxAge == 2_147_483_648)
        #expect(CacheDirectives([.cacheControl: "no-cache=\"Set-Cookie\""]).noCache)
    }

    @Test("an oversized or over-long Cache-Control is read as no-store")
    func boundedDirectives() {
        let many = Array(repeating: "max-age=1", count: CacheDirectives.maxDirectives + 1).joined(separator: ",")
        #expect(CacheDirectives([.cacheControl: many]).noStore)
        let long = "max-age=1, x=" + String(repeating: "a", count: CacheDirectives.maxBytes)
        #expect(CacheDirectives([.cacheControl: long]).noStore)
    }

    @Test("HTTP dates: IMF-fixdate both ways; other forms are invalid")
    func dates() {
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT")?.timeIntervalSince1970 == 784_111_777)
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 784_111_777)) == "Sun, 06 Nov 1994 08:49:37 GMT")
        let now = Date(timeIntervalSince1970: 1_700_000_123)
        #expect(HTTPDate.parse(HTTPDate.format(now)) == now)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == nil)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 UTC") == nil)
        #expect(HTTPDate.parse("0") == nil)
    }

    @Test("an entry file with a flipped byte, a cut tail or a bad length is rejected")
    func fileFormat() throws {
        let entry = CacheEntry(
            status: 200, headers: [["ETag", "\"v1\""]], body: Data("hello".utf8), requestTime: Date(),
            responseTime: Date(), varying: ["accept": nil])
        let data = try CacheFileFormat.encode(entry)
        let decoded = try CacheFileFormat.decode(data)
        #expect(decoded.body == entry.body && decoded.etag == "\"v1\"" && decoded.varying == entry.varying)
        var flipped = data
        flipped[flipped.count - 12] ^= 0x01
        #expect(throws: CacheFileFormat.Corrupt.self) { try CacheFileFormat.decode(flipped) }
        #expect(throws: CacheFileFormat.Corrupt.self) { try CacheFileFormat.decode(data.prefix(data.count - 3)) }
        #expect(throws: CacheFileFormat.Corrupt.self) { try CacheFileFormat.decode(Data("OPCACHE1".utf8)) }
    }

    @Test("LRU order: touch moves to the end, removal relinks")
    func lru() {
        var list = LRUList<Int>()
        for key in 1...4 { list.touch(key) }
        list.touch(2)
        list.remove(3)
        #expect(list.ordered == [1, 4, 2])
        #expect(list.oldest == 1)
    }
}

@Suite("HTTP cache: behaviour")
struct HTTPCacheTests {
    let clock = TestClock()

    func cache(_ configure: (inout HTTPCache.Configuration) -> Void = { _ in }) -> HTTPCache {
        var configuration = HTTPCache.Configuration(now: { [clock] in clock.now })
        configure(&configuration)
        return HTTPCache(configuration: configuration)
    }

    func date(_ offset: TimeInterval = 0) -> String { HTTPDate.format(clock.now.addingTimeInterval(offset)) }

    @Test("max-age: fresh answers come from the cache; once stale, the server is asked again")
    func maxAge() async throws {
        let backend = CacheBackend { _ in CacheBackend.reply(200, "{\"n\":1}", [.cacheControl: "max-age=60"]) }
        let client = backend.client(cache())
        #expect(try await client.send(.get("/a")).cacheStatus == .miss)
        clock.advance(59)
        let hit = try await client.send(.get("/a"))
        #expect(hit.cacheStatus == .hit && hit.body == Data("{\"n\":1}".utf8))
        #expect(hit.headerFields[.age] == "59")
        #expect(backend.requests.count == 1)
        clock.advance(2)
        #expect(try await client.send(.get("/a")).cacheStatus == .miss)
        #expect(backend.requests.count == 2)
    }

    @Test("Expires minus Date gives the lifetime; an Age field from upstream shortens it")
    func expiresAndAge() async throws {
        let date = self.date()
        let expires = self.date(100)
        let backend = CacheBackend { _ in CacheBackend.reply(200, "{}", [.date: date, .expires: expires, .age: "90"]) }
        let client = backend.client(cache())
        _ = try await client.send(.get("/e"))
        clock.advance(5)
        #expect(try await client.send(.get("/e")).cacheStatus == .hit)
        clock.advance(6)
        #expect(try await client.send(.get("/e")).cacheStatus == .miss, "90 s old on arrival + 11 s > 100 s")
    }

    @Test("heuristic freshness: a tenth of the time since Last-Modified")
    func heuristic() async throws {
        let date = self.date()
        let modified = self.date(-1000)
        let backend = CacheBackend { _ in CacheBackend.reply(200, "{}", [.date: date, .lastModified: modified]) }
        let client = backend.client(cache())
        _ = try await client.send(.get("/h"))
        clock.advance(99)
        #expect(try await client.send(.get("/h")).cacheStatus == .hit)
        clock.advance(2)
        #expect(try await client.send(.get("/h")).cacheStatus != .hit)
    }

    @Test("no-store is never kept; no-cache is kept but revalidated every time, and a 304 returns the body as a 200")
    func noStoreNoCache() async throws {
        let backend = CacheBackend { request in
            if request.path == "/secret" { return CacheBackend.reply(200, "{\"t\":1}", [.cacheControl: "no-store"]) }
            if request.headerFields[.ifNoneMatch] == "\"v1\"" {
                return CacheBackend.reply(
                    304, "", [.eTag: "\"v1\"", .cacheControl: "no-cache", HTTPField.Name("X-Fresh")!: "yes"])
            }
            return CacheBackend.reply(200, "{\"v\":1}", [.eTag: "\"v1\"", .cacheControl: "no-cache"])
        }
        let cache = cache()
        let client = backend.client(cache)
        _ = try await client.send(.get("/secret"))
        _ = try await client.send(.get("/secret"))
        #expect(backend.requests.count == 2)
        #expect(cache.memoryBytes == 0)
        _ = try await client.send(.get("/r"))
        let again = try await client.send(.get("/r"))
        #expect(again.status == 200 && again.cacheStatus == .revalidated)
        #expect(again.body == Data("{\"v\":1}".utf8))
        #expect(again.headerFields[HTTPField.Name("X-Fresh")!] == "yes", "the 304's fields refresh the entry")
        #expect(backend.requests.last?.headerFields[.ifNoneMatch] == "\"v1\"")
    }

    @Test("a 304 restarts the entry's freshness")
    func revalidationRefreshes() async throws {
        let backend = CacheBackend { request in
            if request.headerFields[.ifModifiedSince] != nil { return CacheBackend.reply(304, "", [.cacheControl: "max-age=10"]) }
            return CacheBackend.reply(
                200, "{}", [.cacheControl: "max-age=10", .lastModified: "Sun, 06 Nov 1994 08:49:37 GMT"])
        }
        let client = backend.client(cache())
        _ = try await client.send(.get("/m"))
        clock.advance(11)
        #expect(try await client.send(.get("/m")).cacheStatus == .revalidated)
        #expect(backend.requests.last?.headerFields[.ifModifiedSince] == "Sun, 06 Nov 1994 08:49:37 GMT")
        clock.advance(9)
        #expect(try await client.send(.get("/m")).cacheStatus == .hit)
        #expect(backend.requests.count == 2)
    }

    @Test("a fresh answer that says no-store replaces the stored one: it is forgotten, other accounts' entries stay")
    func noStoreForgets() async throws {
        let calls = Mutex(0)
        let backend = CacheBackend { _ in
            let call = calls.withLock { count in
                count += 1
                return count
            }
            // The second answer for ada says no-store; every other answer may be kept.
            let fields: HTTPFields =
                call == 3 ? [.cacheControl: "no-store"] : [.cacheControl: "private, max-age=0", .eTag: "\"v1\""]
            return CacheBackend.reply(200, "{}", fields)
        }
        let client = backend.client(cache())
        let ada = Request(method: .get, path: "/n", headers: [.authorization: "Bearer ada"])
        let bob = Request(method: .get, path: "/n", headers: [.authorization: "Bearer bob"])
        _ = try await client.send(ada)
        _ = try await client.send(bob)
        _ = try await client.send(ada)  // revalidation answered 200 no-store
        _ = try await client.send(ada)
        _ = try await client.send(bob)
        let conditional = backend.requests.map { $0.headerFields[.ifNoneMatch] != nil }
        #expect(conditional == [false, false, true, false, true])
    }

    @Test("Vary: another value of a selecting field is a miss; Vary: * is never stored")
    func vary() async throws {
        let backend = CacheBackend { request in
            if request.path == "/star" {
                return CacheBackend.reply(200, "{}", [.cacheControl: "max-age=60", HTTPField.Name("Vary")!: "*"])
            }
            let language = request.headerFields[.acceptLanguage] ?? "none"
            return CacheBackend.reply(
                200, "\"\(language)\"", [.cacheControl: "max-age=60", HTTPField.Name("Vary")!: "Accept-Language"])
        }
        let client = backend.client(cache())
        let english = Request(method: .get, path: "/v", headers: [.acceptLanguage: "en"])
        let french = Request(method: .get, path: "/v", headers: [.acceptLanguage: "fr"])
        _ = try await client.send(english)
        #expect(try await client.send(english).cacheStatus == .hit)
        let other = try await client.send(french)
        #expect(other.cacheStatus == .miss && other.body == Data("\"fr\"".utf8))
        _ = try await client.send(.get("/star"))
        #expect(try await client.send(.get("/star")).cacheStatus == .miss)
    }

    @Test("entries are kept per account: another Authorization never gets this one's response")
    func accounts() async throws {
        let backend = CacheBackend { request in
            CacheBackend.reply(
                200, "\"\(request.headerFields[.authorization] ?? "anonymous")\"", [.cacheControl: "private, max-age=60"])
        }
        let client = backend.client(cache())
        let ada = try await client.send(Request(method: .get, path: "/me", headers: [.authorization: "Bearer ada-token"]))
        let bob = try await client.send(Request(method: .get, path: "/me", headers: [.authorization: "Bearer bob-token"]))
        let anonymous = try await client.send(.get("/me"))
        #expect(ada.cacheStatus == .miss && bob.cacheStatus == .miss && anonymous.cacheStatus == .miss)
        let adaAgain = try await client.send(Request(method: .get, path: "/me", headers: [.authorization: "Bearer ada-token"]))
        #expect(adaAgain.cacheStatus == .hit && adaAgain.body == Data("\"Bearer ada-token\"".utf8))
        #expect(backend.requests.count == 3)
    }

    @Test("a successful unsafe request invalidates its URI and its Location, for every account")
    func invalidation() async throws {
        let backend = CacheBackend { request in
            if request.method == .post { return CacheBackend.reply(201, "{}", [.location: "/records/notes/n1"]) }
            return CacheBackend.reply(200, "{}", [.cacheControl: "max-age=600"])
        }
        let client = backend.client(cache())
        _ = try await client.send(.get("/records/notes"))
        _ = try await client.send(Request(method: .get, path: "/records/notes/n1", headers: [.authorization: "Bearer x"]))
        _ = try await client.send(.get("/records/other"))
        _ = try await client.send(.post("/records/notes", json: [:]))
        #expect(try await client.send(.get("/records/notes")).cacheStatus == .miss)
        #expect(
            try await client.send(Request(method: .get, path: "/records/notes/n1", headers: [.authorization: "Bearer x"]))
                .cacheStatus == .miss)
        #expect(try await client.send(.get("/records/other")).cacheStatus == .hit)
    }

    @Test("the memory tier evicts the least recently used entry past its byte limit")
    func memoryEviction() async throws {
        let body = String(repeating: "x", count: 1000)
        let backend = CacheBackend { _ in CacheBackend.reply(200, body, [.cacheControl: "max-age=600"]) }
        let cache = cache { $0.memoryLimit = 3500 }
        let client = backend.client(cache)
        for path in ["/1", "/2", "/3"] { _ = try await client.send(.get(path)) }
        _ = try await client.send(.get("/1"))  // now /2 is the least recently used
        _ = try await client.send(.get("/4"))
        #expect(cache.memoryBytes <= 3500)
        #expect(try await client.send(.get("/1")).cacheStatus == .hit)
        #expect(try await client.send(.get("/2")).cacheStatus == .miss)
    }

    @Test("disk tier: survives a new cache instance, evicts LRU past its limit, files 0600, folder 0700, no token in clear")
    func disk() async throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "outpost-cache-\(UUID().uuidString)/http")
        defer { try? FileManager.default.removeItem(at: folder.deletingLastPathComponent()) }
        let body = String(repeating: "y", count: 2000)
        let backend = CacheBackend { _ in CacheBackend.reply(200, body, [.cacheControl: "max-age=600"]) }
        let first = cache {
            $0.directory = folder
            $0.diskLimit = 7000
        }
        let client = backend.client(first)
        let token = "Bearer very-secret-token-123"
        for path in ["/1", "/2", "/3", "/4"] {
            _ = try await client.send(Request(method: .get, path: path, headers: [.authorization: token]))
        }
        await first.flush()
        #expect(await first.diskBytes() <= 7000)
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(files.count == 3, "the oldest of four ~2.3 kB entries was evicted: \(files)")
        for file in files {
            let path = folder.appending(path: file).path
            #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o600)
            let contents = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(contents.range(of: Data("very-secret-token".utf8)) == nil)
        }
        #expect(try FileManager.default.attributesOfItem(atPath: folder.path)[.posixPermissions] as? Int == 0o700)

        let second = cache {
            $0.directory = folder
            $0.diskLimit = 7000
        }
        let reopened = backend.client(second)
        let before = backend.requests.count
        #expect(try await reopened.send(Request(method: .get, path: "/4", headers: [.authorization: token])).cacheStatus == .hit)
        #expect(try await reopened.send(Request(method: .get, path: "/1", headers: [.authorization: token])).cacheStatus == .miss)
        #expect(backend.requests.count == before + 1)
        await second.flush()  // the refetched entry lands before the folder is removed
    }

    @Test("a damaged disk entry is deleted and fetched again, never served")
    func corruptDiskEntry() async throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "outpost-cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let backend = CacheBackend { _ in CacheBackend.reply(200, "{\"good\":true}", [.cacheControl: "max-age=600"]) }
        let first = cache { $0.directory = folder }
        _ = try await backend.client(first).send(.get("/c"))
        await first.flush()
        let file = try #require(try FileManager.default.contentsOfDirectory(atPath: folder.path).first)
        let url = folder.appending(path: file)
        var data = try Data(contentsOf: url)
        data[data.count / 2] ^= 0xFF
        try data.write(to: url)
        let second = cache { $0.directory = folder }
        let answer = try await backend.client(second).send(.get("/c"))
        #expect(answer.cacheStatus == .miss && answer.body == Data("{\"good\":true}".utf8))
        #expect(backend.requests.count == 2)
        await second.flush()  // the refetched entry lands before the folder is removed
    }

    @Test("offline: a stale entry is served marked stale when allowed; must-revalidate and the default refuse")
    func staleWhenOffline() async throws {
        let backend = CacheBackend { request in
            let fields: HTTPFields =
                request.path == "/strict"
                ? [.cacheControl: "max-age=1, must-revalidate"] : [.cacheControl: "private, max-age=0", .eTag: "\"v1\""]
            return CacheBackend.reply(200, "{\"cached\":true}", fields)
        }
        let lenient = backend.client(cache { $0.serveStaleWhenOffline = true })
        let strict = backend.client(cache())
        _ = try await lenient.send(.get("/r"))
        _ = try await lenient.send(.get("/strict"))
        _ = try await strict.send(.get("/r"))
        clock.advance(30)
        backend.setOffline(true)
        let stale = try await lenient.send(.get("/r"))
        #expect(stale.cacheStatus == .stale && stale.body == Data("{\"cached\":true}".utf8))
        #expect(stale.headerFields[.age] == "30")
        await #expect(throws: OutpostError.self) { try await lenient.send(.get("/strict")) }
        await #expect(throws: OutpostError.self) { try await strict.send(.get("/r")) }
    }

    @Test("a caller's own conditional request passes through untouched, and only-if-cached never reaches the server")
    func passThrough() async throws {
        let backend = CacheBackend { request in
            if request.headerFields[.ifNoneMatch] != nil { return CacheBackend.reply(304, "", [.eTag: "\"v1\""]) }
            return CacheBackend.reply(200, "{}", [.cacheControl: "max-age=60", .eTag: "\"v1\""])
        }
        let client = backend.client(cache())
        _ = try await client.send(.get("/p"))
        let own = try await client.send(Request(method: .get, path: "/p", headers: [.ifNoneMatch: "\"v1\""]))
        #expect(own.status == 304 && own.cacheStatus == nil)
        let error = await #expect(throws: OutpostError.self) {
            try await client.send(Request(method: .get, path: "/q", headers: [.cacheControl: "only-if-cached"]))
        }
        #expect(error?.status == 504, "only-if-cached without a stored response is 504 (RFC 9111 §5.2.1.7)")
        #expect(backend.requests.count == 2)
    }
}
