import Foundation
import Outpost
import OutpostServer
import OutpostTestSupport
import Testing

/// Clients percent-encode path parameters (`hello:someone` goes out as `hello%3Asomeone`): every
/// route decodes each of its parameters once, and refuses invalid percent-encoding with a 400
/// envelope. Sent by hand, byte for byte, so that no client re-encodes or normalises the path.
@Suite("Path parameters are percent-decoded once", .closesWhatItOpens)
struct PathParameterDecodingTests {
    struct Exchange {
        let raw: RawHTTP
        let token: String?

        func send(
            _ method: String, _ path: String, body: String? = nil, contentType: String? = nil
        ) async throws -> (Int, JSONValue?) {
            let reply = try await exchange(method, path, body: body, contentType: contentType)
            let json = reply.body.isEmpty ? nil : try? JSONValue(parsing: Data(reply.body.utf8))
            return (reply.status ?? 0, json)
        }

        func exchange(_ method: String, _ path: String, body: String? = nil, contentType: String? = nil) async throws
            -> RawHTTP.Reply
        {
            var fields: [String] = []
            if let token { fields.append("Authorization: Bearer \(token)") }
            let contentType = contentType ?? (method == "PATCH" ? "application/merge-patch+json" : "application/json")
            let reply = try await raw.exchange(
                BadInputTests.request(method, path, body: body, contentType: contentType, headers: fields), timeout: .seconds(10))
            #expect(!reply.timedOut, "\(method) \(path) did not answer")
            return reply
        }

        /// Expects 400 `invalid_path_encoding` in the error envelope.
        func expectInvalidEncoding(_ method: String, _ path: String, body: String? = nil, contentType: String? = nil)
            async throws
        {
            let (status, json) = try await send(method, path, body: body, contentType: contentType)
            #expect(status == 400, "\(method) \(path)")
            #expect(json?["error"]?["code"] == "invalid_path_encoding", "\(method) \(path): \(String(describing: json))")
            #expect(json?["error"]?["message"]?.stringValue?.isEmpty == false)
        }
    }

    static func withExchange(_ body: (Exchange, AuthFixture) async throws -> Void) async throws {
        try await withAuthFixture { fixture in
            let token = try #require(try await fixture.passwordTokens()["access_token"] as? String)
            try await body(Exchange(raw: RawHTTP(port: fixture.server.running.port), token: token), fixture)
        }
    }

    @Test("lambdas: an encoded name reaches the lambda; %2F stays inside the name; bad encoding is 400")
    func lambdas() async throws {
        try await Self.withExchange { exchange, _ in
            let (status, json) = try await exchange.send("POST", "/lambdas/hello%3Asomeone", body: #"{"args": ["world"]}"#)
            #expect(status == 200)
            #expect(json?["result"] == "Hello, world!")
            let (lower, lowerJSON) = try await exchange.send("POST", "/lambdas/hello%3asomeon%65", body: #"{"args": ["you"]}"#)
            #expect(lower == 200)
            #expect(lowerJSON?["result"] == "Hello, you!")
            let (slash, slashJSON) = try await exchange.send("POST", "/lambdas/hello%2Fsomeone", body: "{}")
            #expect(slash == 404)
            #expect(slashJSON?["error"]?["code"] == "unknown_lambda")
            #expect(slashJSON?["error"]?["message"]?.stringValue?.contains("'hello/someone'") == true)
            // Decoded once: %253A is the text "%3A", not ":".
            let (twice, twiceJSON) = try await exchange.send("POST", "/lambdas/hello%253Asomeone", body: "{}")
            #expect(twice == 404)
            #expect(twiceJSON?["error"]?["message"]?.stringValue?.contains("'hello%3Asomeone'") == true)
            try await exchange.expectInvalidEncoding("POST", "/lambdas/hello%3", body: "{}")
            try await exchange.expectInvalidEncoding("POST", "/lambdas/hello%zzsomeone", body: "{}")
            try await exchange.expectInvalidEncoding("POST", "/lambdas/%FF", body: "{}")
        }
    }

    @Test("handlers: an encoded name reaches the handler; bad encoding is 400")
    func handlers() async throws {
        try await Self.withExchange { exchange, fixture in
            let (status, json) = try await exchange.send("POST", "/handlers/who%61mi", body: "{}")
            #expect(status == 200)
            #expect(json?["client_id"] == .string(fixture.publicClient.id))
            let (unknown, unknownJSON) = try await exchange.send("POST", "/handlers/who%2Fami", body: "{}")
            #expect(unknown == 404)
            #expect(unknownJSON?["error"]?["code"] == "unknown_handler")
            try await exchange.expectInvalidEncoding("POST", "/handlers/who%G1ami", body: "{}")
        }
    }

    @Test("records: type and id decode on create, read, list, replace, patch and delete")
    func records() async throws {
        try await Self.withExchange { exchange, _ in
            let (created, record) = try await exchange.send("POST", "/records/n%6Fte%5Fs", body: #"{"n": 1}"#)
            #expect(created == 201)
            let id = try #require(record?["id"]?.stringValue)
            let encodedID = id.utf8.map { String(format: "%%%02X", $0) }.joined()
            let (read, readJSON) = try await exchange.send("GET", "/records/note_s/\(encodedID)")
            #expect(read == 200)
            #expect(readJSON?["id"]?.stringValue == id)
            let (replaced, replacedJSON) = try await exchange.send("PUT", "/records/%6Eote_s/\(encodedID)", body: #"{"n": 2}"#)
            #expect(replaced == 200)
            #expect(replacedJSON?["n"] == 2)
            let (patched, patchedJSON) = try await exchange.send("PATCH", "/records/note%5fs/\(encodedID)", body: #"{"m": 3}"#)
            #expect(patched == 200)
            #expect(patchedJSON?["m"] == 3)
            _ = try await exchange.send("POST", "/records/note_s", body: #"{"n": 4}"#)
            // The page's links name the list's own path, with its type decoded, not re-encoded.
            let (listed, page) = try await exchange.send("GET", "/records/not%65_s?limit=1")
            #expect(listed == 200)
            #expect(page?["results"]?[0]?["id"]?.stringValue == id)
            let next = try #require(page?["next"]?.stringValue)
            #expect(next.contains("/records/note_s?limit=1&cursor="), "\(next)")
            let link = try #require(URLComponents(string: next))
            let nextPath = link.percentEncodedPath + "?" + (link.percentEncodedQuery ?? "")
            let (second, secondPage) = try await exchange.send("GET", nextPath)
            #expect(second == 200)
            #expect(secondPage?["results"]?[0]?["n"] == 4)
            let (numbered, numberedPage) = try await exchange.send("GET", "/records/note%5Fs?page=1&per_page=5")
            #expect(numbered == 200)
            #expect(numberedPage?["total"] == 2)
            let (badType, badTypeJSON) = try await exchange.send("GET", "/records/note%2Fs")
            #expect(badType == 400)
            #expect(badTypeJSON?["error"]?["code"] == "invalid_type")
            let (badID, badIDJSON) = try await exchange.send("GET", "/records/note_s/a%2Fb")
            #expect(badID == 400)
            #expect(badIDJSON?["error"]?["code"] == "invalid_id")
            try await exchange.expectInvalidEncoding("POST", "/records/note%", body: "{}")
            try await exchange.expectInvalidEncoding("GET", "/records/note%zz")
            try await exchange.expectInvalidEncoding("GET", "/records/note_s/%E9")
            try await exchange.expectInvalidEncoding("PUT", "/records/note_s/%G0", body: "{}")
            try await exchange.expectInvalidEncoding("PATCH", "/records/note_s/ab%", body: "{}")
            try await exchange.expectInvalidEncoding("DELETE", "/records/note_s/%")
            let (deleted, _) = try await exchange.send("DELETE", "/records/%6E%6F%74%65%5F%73/\(encodedID)")
            #expect(deleted == 204)
            let (gone, _) = try await exchange.send("GET", "/records/note_s/\(id)")
            #expect(gone == 404)
        }
    }

    @Test("changes: the type decodes; bad encoding is 400")
    func changes() async throws {
        try await Self.withExchange { exchange, _ in
            // HEAD answers the stream's head without joining it.
            let (status, _) = try await exchange.send("HEAD", "/records/n%6Fte/changes")
            #expect(status == 200)
            let (badType, badTypeJSON) = try await exchange.send("GET", "/records/a%20b/changes")
            #expect(badType == 400)
            #expect(badTypeJSON?["error"]?["code"] == "invalid_type")
            try await exchange.expectInvalidEncoding("GET", "/records/no%zzte/changes")
        }
    }

    @Test("files: the name decodes on upload, download and delete; %2F is a bad name, not a path")
    func files() async throws {
        try await Self.withExchange { exchange, _ in
            let (created, file) = try await exchange.send(
                "PUT", "/files/n%6Fte%2Etxt", body: "hello", contentType: "text/plain")
            #expect(created == 201)
            #expect(file?["name"] == "note.txt")
            let reply = try await exchange.exchange("GET", "/files/note%2etxt")
            #expect(reply.status == 200)
            #expect(reply.body == "hello")
            let (slash, slashJSON) = try await exchange.send("GET", "/files/note%2Ftxt")
            #expect(slash == 400)
            #expect(slashJSON?["error"]?["code"] == "invalid_file_name")
            try await exchange.expectInvalidEncoding("GET", "/files/note%")
            try await exchange.expectInvalidEncoding("PUT", "/files/%zz", body: "x", contentType: "text/plain")
            try await exchange.expectInvalidEncoding("DELETE", "/files/%C3")
            let (deleted, _) = try await exchange.send("DELETE", "/files/%6Eote.txt")
            #expect(deleted == 204)
            let (gone, _) = try await exchange.send("GET", "/files/note.txt")
            #expect(gone == 404)
        }
    }
}
