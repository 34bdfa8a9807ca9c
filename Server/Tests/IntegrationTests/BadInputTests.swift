import Foundation
import Logging
import NIOPosix
import OutpostServer
import OutpostTestSupport
import SQLiteNIO
import Testing

/// Input that must not hurt the server: deep JSON, broken framing, stalls, odd methods, a locked
/// database, sign-up floods. Each answer, or the closing of the connection, is awaited with a
/// deadline; none of these tests sleeps.
@Suite("Bad input does not hurt the server", .closesWhatItOpens)
struct BadInputTests {
    /// One request as text; `Connection: close` so that the reply ends with the connection.
    static func request(
        _ method: String, _ path: String, body: String? = nil, contentType: String = "application/json",
        headers: [String] = []
    ) -> String {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        if let body { text += "Content-Type: \(contentType)\r\nContent-Length: \(body.utf8.count)\r\n" }
        for header in headers { text += header + "\r\n" }
        text += "Connection: close\r\n\r\n"
        return text + (body ?? "")
    }

    /// Arrays nested `depth` deep: `[[...]]`.
    static func arrays(_ depth: Int) -> String {
        String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
    }

    /// A record body nested exactly `depth` deep (the object counts as one).
    static func record(depth: Int) -> String {
        "{\"a\":\(arrays(depth - 1))}"
    }

    /// `{"args": [tree, tree, ...]}` of about `bytes` bytes, each tree `treeDepth` deep.
    static func lambdaBody(treeDepth: Int, bytes: Int) -> String {
        let tree = arrays(treeDepth)
        var trees: [String] = []
        var size = 12
        while size + tree.utf8.count + 1 < bytes {
            trees.append(tree)
            size += tree.utf8.count + 1
        }
        return "{\"args\":[\(trees.joined(separator: ","))]}"
    }

    @Test("deeply nested bodies in parallel are refused or parsed at once, and /health keeps answering")
    func nestedBodiesInParallel() async throws {
        try await withLiveServer { server, _ in
            let raw = RawHTTP(port: server.running.port)
            // 32 KB each: four of 510-deep trees (refused: deeper than 64), four of 62-deep trees
            // inside {"args": [...]} (64 deep: accepted and parsed).
            let tooDeep = Self.request("POST", "/lambdas/echo", body: Self.lambdaBody(treeDepth: 510, bytes: 32 * 1024))
            let deepest = Self.request("POST", "/lambdas/echo", body: Self.lambdaBody(treeDepth: 62, bytes: 32 * 1024))
            try await withThrowingTaskGroup(of: (Bool, RawHTTP.Reply).self) { group in
                for index in 0..<8 {
                    group.addTask {
                        let refused = index % 2 == 0
                        return (refused, try await raw.exchange(refused ? tooDeep : deepest, timeout: .seconds(20)))
                    }
                }
                let health = try await raw.exchange(Self.request("GET", "/health"), timeout: .seconds(3))
                #expect(health.status == 200, "/health did not answer within 3 s while nested bodies were in flight")
                for try await (refused, reply) in group {
                    #expect(!reply.timedOut)
                    if refused {
                        #expect(reply.status == 400)
                        #expect(reply.body.contains("json_too_deep"))
                    } else {
                        #expect(reply.status == 200)
                        #expect(reply.body.hasPrefix("{\"result\":[[[["))
                    }
                }
            }
        }
    }

    /// Posts a record nested `limit` deep, which must be created, and one a level deeper, which
    /// must be refused with json_too_deep; returns both replies.
    static func postAround(depthLimit limit: Int, _ raw: RawHTTP) async throws -> (
        accepted: RawHTTP.Reply, refused: RawHTTP.Reply
    ) {
        let accepted = try await raw.exchange(
            request("POST", "/records/things", body: record(depth: limit)), timeout: .seconds(10))
        #expect(accepted.status == 201)
        let refused = try await raw.exchange(
            request("POST", "/records/things", body: record(depth: limit + 1)), timeout: .seconds(10))
        #expect(refused.status == 400)
        #expect(refused.body.contains("\"code\":\"json_too_deep\""))
        return (accepted, refused)
    }

    @Test("nesting 64 deep is accepted, 65 is refused with json_too_deep, in records, patches and sign-up")
    func depthLimit() async throws {
        try await withLiveServer { server, _ in
            let raw = RawHTTP(port: server.running.port)
            let (accepted, refused) = try await Self.postAround(depthLimit: 64, raw)
            #expect(refused.body.contains("64"))

            let id = try #require(accepted.headers["location"]).split(separator: "/").last.map(String.init) ?? ""
            let patch = try await raw.exchange(
                Self.request(
                    "PATCH", "/records/things/\(id)", body: Self.record(depth: 65), contentType: "application/merge-patch+json"),
                timeout: .seconds(10))
            #expect(patch.status == 400)
            #expect(patch.body.contains("json_too_deep"))
            let signUp = try await raw.exchange(
                Self.request("POST", "/users", body: "{\"username\":\"deep\",\"password\":\(Self.arrays(70))}"),
                timeout: .seconds(10))
            #expect(signUp.status == 400)
            #expect(signUp.body.contains("json_too_deep"))
        }
    }

    @Test("the depth limit is configurable")
    func configurableDepth() async throws {
        try await withLiveServer(configure: { $0.maxJSONDepth = 3 }) { server, _ in
            _ = try await Self.postAround(depthLimit: 3, RawHTTP(port: server.running.port))
        }
    }

    @Test("an invalid chunk size is 400, not 500")
    func invalidChunkSize() async throws {
        try await withLiveServer { server, _ in
            let raw = RawHTTP(port: server.running.port)
            let request =
                "POST /lambdas/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{\"args\":[]}\r\n0\r\n\r\n"
            let reply = try await raw.exchange(request, timeout: .seconds(10))
            #expect(reply.status == 400)
            #expect(reply.body.contains("\"code\":\"malformed_request\""))
            #expect(reply.responseCount == 1, "exactly one response: \(reply.text)")
            #expect(reply.closed)
        }
    }

    @Test("a body shorter than its Content-Length is answered 408 and closed within the body timeout")
    func shortBody() async throws {
        try await withLiveServer(configure: {
            $0.bodyReadTimeout = .seconds(1)
            $0.idleTimeout = .seconds(5)
        }) { server, _ in
            let raw = RawHTTP(port: server.running.port)
            let request =
                "POST /records/things HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + "Content-Length: 100\r\n\r\n{\"a\":"
            let reply = try await raw.exchange(request, timeout: .seconds(20))
            #expect(reply.closed, "the connection stayed open past the body timeout")
            #expect(reply.status == 408)
            #expect(reply.body.contains("request_timeout"))
            #expect(reply.responseCount == 1, "exactly one response: \(reply.text)")
        }
    }

    @Test("a Content-Length of 2^63 - 1 is answered or closed, never held")
    func hugeContentLength() async throws {
        try await withLiveServer(configure: {
            $0.bodyReadTimeout = .seconds(1)
            $0.idleTimeout = .seconds(2)
        }) { server, _ in
            let raw = RawHTTP(port: server.running.port)
            let request =
                "POST /records/things HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + "Content-Length: 9223372036854775807\r\n\r\n{\"a\":1}"
            let reply = try await raw.exchange(request, timeout: .seconds(20))
            #expect(reply.closed)
            #expect((400..<500).contains(reply.status ?? 0))
        }
    }

    @Test("slowloris: connections that never finish their head are answered 408 and closed")
    func slowloris() async throws {
        try await withLiveServer(configure: {
            $0.headerReadTimeout = .seconds(1)
            $0.idleTimeout = .seconds(2)
        }) { server, _ in
            let raw = RawHTTP(port: server.running.port)
            let answered = try await withThrowingTaskGroup(of: RawHTTP.Reply.self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        try await raw.exchange("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a", timeout: .seconds(5))
                    }
                }
                var answered = 0
                for try await reply in group {
                    #expect(reply.closed, "a half-sent head held its connection for 5 s")
                    // A 408, or (on a machine so loaded that the server saw no byte before the idle
                    // timeout) a plain close: never any other answer.
                    #expect(reply.status == 408 || reply.bytes.isEmpty, "answered \(reply.status ?? 0)")
                    if reply.status == 408 { answered += 1 }
                }
                return answered
            }
            #expect(answered >= 10, "only \(answered) of 20 half-sent heads were answered 408")
        }
    }

    @Test("a later request on a kept-alive connection is timed too: a stalled head, then a stalled body")
    func timeoutsAfterEarlierRequests() async throws {
        // The head and body limits differ by far, so a timer left armed for the other part by an
        // earlier request would fire long after the exchange's deadline.
        let health = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        try await withLiveServer(configure: {
            $0.headerReadTimeout = .seconds(1)
            $0.bodyReadTimeout = .seconds(120)
            $0.idleTimeout = .seconds(120)
        }) { server, _ in
            let reply = try await RawHTTP(port: server.running.port).conversation(
                [health, health, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a"], timeout: .seconds(20))
            #expect(reply.closed, "the stalled head of the third request held its connection: \(reply.text)")
            #expect(reply.responseCount == 3)
            #expect(reply.text.hasPrefix("HTTP/1.1 200 "))
            #expect(reply.text.contains("HTTP/1.1 408 "))
        }
        try await withLiveServer(configure: {
            $0.headerReadTimeout = .seconds(120)
            $0.bodyReadTimeout = .seconds(1)
            $0.idleTimeout = .seconds(120)
        }) { server, _ in
            let stalled =
                "POST /records/things HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + "Content-Length: 100\r\n\r\n{\"a\":"
            let reply = try await RawHTTP(port: server.running.port).conversation(
                [health, health, stalled], timeout: .seconds(20))
            #expect(reply.closed, "the stalled body of the third request held its connection: \(reply.text)")
            #expect(reply.responseCount == 3)
            #expect(reply.text.contains("HTTP/1.1 408 "))
            #expect(reply.text.contains("request_timeout"))
        }
    }

    @Test("an empty request line or no bytes at all: the connection is closed at the idle timeout")
    func idleConnections() async throws {
        try await withLiveServer(configure: { $0.idleTimeout = .seconds(1) }) { server, _ in
            let raw = RawHTTP(port: server.running.port)
            let emptyLine = try await raw.exchange("\r\n", timeout: .seconds(20))
            #expect(emptyLine.closed)
            let silent = try await raw.exchange([], timeout: .seconds(20))
            #expect(silent.closed)
        }
    }

    @Test("HEAD answers like GET without the body: same status, Content-Length and ETag")
    func head() async throws {
        try await withLiveServer { server, _ in
            let raw = RawHTTP(port: server.running.port)
            let created = try await raw.exchange(
                Self.request("POST", "/records/things", body: "{\"name\":\"Ada\"}"), timeout: .seconds(10))
            let location = try #require(created.headers["location"])
            let get = try await raw.exchange(Self.request("GET", location), timeout: .seconds(10))
            let head = try await raw.exchange(Self.request("HEAD", location), timeout: .seconds(10))
            #expect(get.status == 200)
            #expect(head.status == 200)
            #expect(head.headers["content-length"] == get.headers["content-length"])
            #expect(head.headers["content-length"] == "\(get.body.utf8.count)")
            #expect(head.headers["etag"] == get.headers["etag"])
            #expect(head.headers["etag"] != nil)
            #expect(head.body.isEmpty)
            #expect(head.closed)

            let health = try await raw.exchange(Self.request("HEAD", "/health"), timeout: .seconds(10))
            #expect(health.status == 200)
            #expect(health.body.isEmpty)
        }
    }

    @Test("a wrong method is 405 with Allow listing the methods the path takes")
    func wrongMethod() async throws {
        try await withLiveServer { server, _ in
            let raw = RawHTTP(port: server.running.port)
            let health = try await raw.exchange(Self.request("DELETE", "/health"), timeout: .seconds(10))
            #expect(health.status == 405)
            #expect(health.headers["allow"] == "GET, HEAD")
            #expect(health.body.contains("\"code\":\"method_not_allowed\""))

            let records = try await raw.exchange(Self.request("PUT", "/records/things"), timeout: .seconds(10))
            #expect(records.status == 405)
            #expect(records.headers["allow"] == "GET, HEAD, POST")

            let lambda = try await raw.exchange(Self.request("GET", "/lambdas/echo"), timeout: .seconds(10))
            #expect(lambda.status == 405)
            #expect(lambda.headers["allow"] == "POST")
            let headLambda = try await raw.exchange(Self.request("HEAD", "/lambdas/echo"), timeout: .seconds(10))
            #expect(headLambda.status == 405)
            #expect(headLambda.headers["allow"] == "POST")
            #expect(headLambda.body.isEmpty)

            let unknown = try await raw.exchange(Self.request("GET", "/nothing/here"), timeout: .seconds(10))
            #expect(unknown.status == 404)
            #expect(unknown.body.contains("route_not_found"))
        }
    }

    @Test("another process holding the write lock: writes are 503 storage_busy with Retry-After, /health stays 200")
    func lockedDatabase() async throws {
        try await withLiveServer(configure: { $0.storageBusyTimeout = .milliseconds(500) }) { server, _ in
            let raw = RawHTTP(port: server.running.port)
            // The other process: its own connection on its own thread, holding the write lock.
            let pool = NIOThreadPool(numberOfThreads: 1)
            pool.start()
            let other = try await SQLiteConnection.open(
                storage: .file(path: server.folder.appendingPathComponent("test.sqlite").path), threadPool: pool,
                logger: Logger(label: "other-process"), on: MultiThreadedEventLoopGroup.singleton.any())
            do {
                _ = try await other.query("BEGIN IMMEDIATE")
                let write = try await raw.exchange(
                    Self.request("POST", "/records/things", body: "{\"a\":1}"), timeout: .seconds(5))
                #expect(write.status == 503)
                #expect(write.headers["retry-after"] != nil)
                #expect(write.body.contains("\"code\":\"storage_busy\""))
                #expect(write.elapsed < .seconds(4))

                let signUp = try await raw.exchange(
                    Self.request("POST", "/users", body: "{\"username\":\"locked\",\"password\":\"long enough\"}"),
                    timeout: .seconds(5))
                #expect(signUp.status == 503, "a busy database is not 'username_taken'")
                #expect(signUp.body.contains("storage_busy"))

                let health = try await raw.exchange(Self.request("GET", "/health"), timeout: .seconds(3))
                #expect(health.status == 200)

                _ = try await other.query("ROLLBACK")
                let after = try await raw.exchange(
                    Self.request("POST", "/records/things", body: "{\"a\":1}"), timeout: .seconds(5))
                #expect(after.status == 201)
            } catch {
                _ = try? await other.query("ROLLBACK")
                try? await other.close()
                try? await pool.shutdownGracefully()
                throw error
            }
            try await other.close()
            try await pool.shutdownGracefully()
        }
    }

    @Test("sign-ups are limited per client address: 429 with Retry-After; a taken name is 409")
    func signUpLimit() async throws {
        try await withLiveServer(configure: { $0.signUpsPerAddress = 3 }) { server, _ in
            let raw = RawHTTP(port: server.running.port)
            func signUp(_ name: String) async throws -> RawHTTP.Reply {
                try await raw.exchange(
                    Self.request("POST", "/users", body: "{\"username\":\"\(name)\",\"password\":\"long enough\"}"),
                    timeout: .seconds(10))
            }
            #expect(try await signUp("ada").status == 201)
            let taken = try await signUp("ada")
            #expect(taken.status == 409)
            #expect(taken.body.contains("username_taken"))
            #expect(try await signUp("bob").status == 201)
            let limited = try await signUp("cy")
            #expect(limited.status == 429)
            #expect(Int(limited.headers["retry-after"] ?? "") ?? 0 >= 1)
        }
    }

    @Test("2,000 query parameters are refused with a 4xx envelope, not 500")
    func manyQueryParameters() async throws {
        try await withLiveServer { server, _ in
            let raw = RawHTTP(port: server.running.port)
            let query = (0..<2000).map { "f\($0)=1" }.joined(separator: "&")
            let reply = try await raw.exchange(Self.request("GET", "/records/things?\(query)"), timeout: .seconds(10))
            #expect(reply.status == 400)
            #expect(reply.body.contains("\"too_many_parameters\""))
        }
    }

    /// A request head that declares `length` bytes and sends none of them, on a connection left open.
    static func declaring(_ method: String, _ path: String, length: String) -> String {
        "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: \(length)\r\n\r\n"
    }

    @Test("a declared Content-Length over the route's limit is 413 at once, before any of the body")
    func declaredLengthOverLimit() async throws {
        // The body read timeout is far above the exchange's deadline: an answer that waited for the
        // body, or for the timer, would time the exchange out.
        try await withLiveServer(configure: { $0.bodyReadTimeout = .seconds(120) }) { server, _ in
            let raw = RawHTTP(port: server.running.port)
            for path in ["/records/notes", "/lambdas/echo", "/users"] {
                let reply = try await raw.exchange(
                    Self.declaring("POST", path, length: "\(2 << 20)"), timeout: .seconds(20))
                #expect(reply.status == 413, "\(path): \(reply.text)")
                #expect(reply.body.contains("\"payload_too_large\""))
                #expect(reply.closed, "the connection whose body was never read is closed")
            }
            // A file may be larger than a JSON body: the same length is let through to the route,
            // which then waits for the body (cut short here by the exchange's deadline).
            let file = try await raw.exchange(Self.declaring("PUT", "/files/big.bin", length: "\(2 << 20)"), timeout: .seconds(1))
            #expect(file.status != 413)
            let tooBigFile = try await raw.exchange(
                Self.declaring("PUT", "/files/big.bin", length: "\(Int64(1) << 40)"), timeout: .seconds(20))
            #expect(tooBigFile.status == 413)
        }
    }

    @Test(
        "an invalid or overflowing Content-Length is 400 at once",
        arguments: ["9223372036854775808", "99999999999999999999", "-1", "12a", "+5"])
    func invalidDeclaredLength(_ length: String) async throws {
        try await withLiveServer(configure: { $0.bodyReadTimeout = .seconds(120) }) { server, _ in
            let reply = try await RawHTTP(port: server.running.port).exchange(
                Self.declaring("POST", "/records/notes", length: length), timeout: .seconds(20))
            #expect(reply.status == 400, "Content-Length: \(length) answered \(reply.text)")
            #expect(reply.closed)
        }
    }
}
