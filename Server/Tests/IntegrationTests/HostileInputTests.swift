import Foundation
import HTTPTypes
import Outpost
import OutpostServer
import OutpostTestSupport
import Testing

/// What a hostile caller sends: bodies that could be stored broken or cost too much, refusals that
/// tell more than they should, filters a body could fool, look-alike usernames (docs/SECURITY.md,
/// "Hostile input"). Runs on the backend `OUTPOST_TEST_LIVE_BACKEND` names.
@Suite("Hostile input", .closesWhatItOpens, .timeLimit(.minutes(3)))
struct HostileInputTests {
    static func send(
        _ base: URL, _ method: HTTPRequest.Method, _ path: String, token: String? = nil, text: String? = nil,
        headers: HTTPFields = [:]
    ) async throws -> ClientResponse {
        var fields = headers
        fields[.contentType] = method == .patch ? "application/merge-patch+json" : "application/json"
        if let token { fields[.authorization] = "Bearer \(token)" }
        let request = HTTPRequest(
            method: method, scheme: "http", authority: "\(base.host ?? "127.0.0.1"):\(base.port ?? 80)", path: path,
            headerFields: fields)
        let transport = AsyncHTTPClientTransport()
        do {
            let (head, data) = try await transport.send(request, body: text.map { Data($0.utf8) }, options: TransportOptions())
            try await transport.shutdown()
            return ClientResponse(response: head, body: data)
        } catch {
            try? await transport.shutdown()
            throw error
        }
    }

    static let uploadComplete = HTTPField.Name("Upload-Complete")!

    static func code(_ response: ClientResponse) -> String? {
        (try? response.json()["error"]?["code"])??.stringValue
    }

    static func details(_ response: ClientResponse) -> JSONValue? {
        (try? response.json()["error"]?["details"]) ?? nil
    }

    static func token(_ fixture: AuthFixture, _ user: String) async throws -> String {
        try #require(try await fixture.passwordTokens(user)["access_token"] as? String)
    }

    // MARK: Numbers

    @Test("an integer of hundreds of digits is stored exactly through every write; one past a float's range is 400")
    func hugeIntegers() async throws {
        try await withAuthFixture { fixture in
            let base = fixture.server.baseURL
            let ada = try await Self.token(fixture, "ada")
            let huge = "-" + String(repeating: "1234567890", count: 20)  // 200 digits
            let created = try await Self.send(base, .post, "/records/big", token: ada, text: #"{"n": \#(huge), "k": 1}"#)
            #expect(created.status == 201)
            let id = try #require(try created.json()["id"]?.stringValue)
            #expect(try created.json()["n"] == .largeInteger(huge))
            #expect(try await Self.send(base, .get, "/records/big/\(id)").json()["n"] == .largeInteger(huge))
            // Every list of the type, sorted by the number too, stays JSON.
            for query in ["", "?page=1", "?sort=n", "?sort=-n,k"] {
                let page = try await Self.send(base, .get, "/records/big\(query)")
                #expect(page.status == 200, "\(query): \(String(decoding: page.body, as: UTF8.self))")
                #expect(try page.json()["results"]?[0]?["n"] == .largeInteger(huge), "\(query)")
            }
            // The owner's merge patch keeps it; a replacement writes another.
            let patched = try await Self.send(base, .patch, "/records/big/\(id)", token: ada, text: #"{"k": 2}"#)
            #expect(patched.status == 200)
            #expect(try patched.json()["n"] == .largeInteger(huge))
            let other = String(repeating: "9", count: 300)
            let replaced = try await Self.send(base, .put, "/records/big/\(id)", token: ada, text: #"{"n": \#(other)}"#)
            #expect(replaced.status == 200)
            #expect(try await Self.send(base, .get, "/records/big/\(id)").json()["n"] == .largeInteger(other))
            // A batch and an idempotent create (and its replay) answer and store the same digits.
            let batch = try await Self.send(
                base, .post, "/records/batch", token: ada,
                text: #"{"operations": [{"method": "POST", "type": "big", "body": {"n": \#(huge)}}]}"#)
            #expect(batch.status == 200, "\(String(decoding: batch.body, as: UTF8.self))")
            let key: HTTPFields = [HTTPField.Name("Idempotency-Key")!: "huge-1"]
            let first = try await Self.send(base, .post, "/records/big", token: ada, text: #"{"n": \#(huge)}"#, headers: key)
            let again = try await Self.send(base, .post, "/records/big", token: ada, text: #"{"n": \#(huge)}"#, headers: key)
            #expect(first.status == 201 && again.status == 201)
            #expect(first.body == again.body)
            #expect(try again.json()["n"] == .largeInteger(huge))

            // Beyond a 64-bit float's range: refused, naming the field, on every write.
            let tooBig = "1" + String(repeating: "0", count: 309)
            let refusals = [
                try await Self.send(base, .post, "/records/big", token: ada, text: #"{"a": {"b": [0, \#(tooBig)]}}"#),
                try await Self.send(base, .put, "/records/big/\(id)", token: ada, text: #"{"a": {"b": [0, \#(tooBig)]}}"#),
                try await Self.send(base, .patch, "/records/big/\(id)", token: ada, text: #"{"a": {"b": [0, \#(tooBig)]}}"#),
            ]
            for refusal in refusals {
                #expect(refusal.status == 400)
                #expect(Self.code(refusal) == "invalid_number")
                #expect(Self.details(refusal)?["field"] == "/a/b/1")
            }
            let inBatch = try await Self.send(
                base, .post, "/records/batch", token: ada,
                text: #"{"operations": [{"method": "POST", "type": "big", "body": {"x": 0.12345678901234567890123}}]}"#)
            #expect(inBatch.status == 400)
            #expect(Self.code(inBatch) == "invalid_number")
            #expect(Self.details(inBatch)?["field"] == "/operations/0/body/x")
            let message = try #require(try inBatch.json()["error"]?["message"]?.stringValue)
            #expect(message.contains("string"))
            let page = try await Self.send(base, .get, "/records/big?page=1")
            #expect(try page.json()["total"] == 3)
        }
    }

    @Test("any body the server accepts reads back equal: numbers of every shape, strings of every plane, nesting at the limit")
    func acceptedBodiesReadBackEqual() async throws {
        try await withAuthFixture { fixture in
            let base = fixture.server.baseURL
            var generator = SeededGenerator(state: 0x5EED_0B0D)
            var accepted = 0
            var refused = 0
            for round in 0..<120 {
                let text = BodyGenerator.object(&generator, depth: 1)
                let created = try await Self.send(base, .post, "/records/prop", text: text)
                if created.status == 400 {
                    #expect(Self.code(created) == "invalid_number", "round \(round): \(text)")
                    refused += 1
                    continue
                }
                #expect(created.status == 201, "round \(round): \(text)")
                accepted += 1
                let id = try #require(try created.json()["id"]?.stringValue)
                let sent = try JSONValue(parsing: Data(text.utf8))
                var read = try await Self.send(base, .get, "/records/prop/\(id)").json()
                for key in ["id", "created_at", "updated_at"] { read = BodyGenerator.removing(key, from: read) }
                #expect(BodyGenerator.same(sent, read), "round \(round): sent \(text), read \(read)")
            }
            // Deepest nesting the server takes (64 levels) reads back as sent.
            let deep = String(repeating: #"{"d":"#, count: 63) + #"["\ud83d\ude00"]"# + String(repeating: "}", count: 63)
            let created = try await Self.send(base, .post, "/records/prop", text: deep)
            #expect(created.status == 201)
            let id = try #require(try created.json()["id"]?.stringValue)
            let read = try await Self.send(base, .get, "/records/prop/\(id)").json()
            #expect(
                BodyGenerator.same(try JSONValue(parsing: Data(deep.utf8)), BodyGenerator.removing("id", from: read), loose: true)
            )
            // Every list page of the type is JSON.
            let page = try await Self.send(base, .get, "/records/prop?limit=100")
            #expect(try page.json()["results"]?.arrayValue?.count == min(100, accepted + 1))
            #expect(accepted > 60 && refused > 5, "accepted \(accepted), refused \(refused)")
        }
    }

    // MARK: Keys per object

    @Test("an object of more keys than the bound is 400 too_many_keys, naming the bound; one at the bound is stored")
    func keysPerObject() async throws {
        try await withAuthFixture(configure: { $0.maxJSONKeys = 300 }) { fixture in
            let base = fixture.server.baseURL
            func object(_ count: Int) -> String {
                "{" + (0..<count).map { #""k\#($0)": \#($0)"# }.joined(separator: ",") + "}"
            }
            let atBound = try await Self.send(base, .post, "/records/wide", text: object(300))
            #expect(atBound.status == 201)
            #expect(try atBound.json().objectValue?.count == 303)
            let over = try await Self.send(base, .post, "/records/wide", text: #"{"inner": \#(object(301))}"#)
            #expect(over.status == 400)
            #expect(Self.code(over) == "too_many_keys")
            #expect(Self.details(over)?["field"] == "/inner")
            #expect(Self.details(over)?["max_keys"] == 300)
            #expect(try over.json()["error"]?["message"]?.stringValue?.contains("300") == true)
            // Repeated keys count each time; lambdas' bodies are bounded too.
            let repeated = "{" + Array(repeating: #""same": 1"#, count: 301).joined(separator: ",") + "}"
            #expect(Self.code(try await Self.send(base, .post, "/records/wide", text: repeated)) == "too_many_keys")
            let lambda = try await Self.send(base, .post, "/lambdas/echo", text: #"{"args": \#(object(301))}"#)
            #expect(Self.code(lambda) == "too_many_keys")
        }
    }

    // MARK: Refusals

    @Test("a write a rule refuses is 401 with WWW-Authenticate to a caller without a token, 403 signed in; hidden stays 404")
    func anonymousRefusals() async throws {
        try await withAuthFixture(configure: AccessRulesIntegrationTests.defaults) { fixture in
            let base = fixture.server.baseURL
            let ada = try await Self.token(fixture, "ada")
            let bob = try await Self.token(fixture, "bob")
            let note = try await Self.send(base, .post, "/records/memos", token: ada, text: #"{"t": "a"}"#)
            let id = try #require(try note.json()["id"]?.stringValue, "\(String(decoding: note.body, as: UTF8.self))")
            let secret = try await Self.send(base, .post, "/records/memos?visibility=private", token: ada, text: "{}")
            let hidden = try #require(try secret.json()["id"]?.stringValue)
            for method in [HTTPRequest.Method.put, .patch, .delete] {
                let body = method == .delete ? nil : #"{"t": "b"}"#
                let anonymous = try await Self.send(base, method, "/records/memos/\(id)", text: body)
                #expect(anonymous.status == 401, "\(method)")
                #expect(anonymous.headerFields[.wwwAuthenticate] == "Bearer")
                #expect(Self.code(anonymous) == "sign_in_required")
                #expect(AccessRulesIntegrationTests.rule(anonymous) == "memos.\(method == .delete ? "delete" : "update")")
                let signedIn = try await Self.send(base, method, "/records/memos/\(id)", token: bob, text: body)
                #expect(signedIn.status == 403, "\(method)")
                #expect(Self.code(signedIn) == "forbidden_by_rule")
                #expect(try await Self.send(base, method, "/records/memos/\(hidden)", text: body).status == 404)
            }
            let batch = try await Self.send(
                base, .post, "/records/batch", text: #"{"operations": [{"method": "DELETE", "type": "memos", "id": "\#(id)"}]}"#)
            #expect(batch.status == 401)
            #expect(batch.headerFields[.wwwAuthenticate] == "Bearer")
            // Files: replacing or deleting ada's file.
            #expect(try await AccessRulesIntegrationTests.file(base, .put, "a.txt", token: ada, bytes: "a").status == 201)
            for method in [HTTPRequest.Method.put, .delete] {
                let anonymous = try await AccessRulesIntegrationTests.file(base, method, "a.txt", bytes: "x")
                #expect(anonymous.status == 401, "\(method)")
                #expect(anonymous.headerFields[.wwwAuthenticate] == "Bearer")
                #expect(Self.code(anonymous) == "sign_in_required")
                #expect(try await AccessRulesIntegrationTests.file(base, method, "a.txt", token: bob, bytes: "x").status == 403)
            }
        }
    }

    @Test("a PUT to a hidden file's name is answered as one to a visible file of someone else's, never 404")
    func hiddenFileNames() async throws {
        let rules = try AccessRuleSet(
            json: Data(#"{"files": {"read": "file.name != \"hidden.txt\" || file.owner == caller.user"}}"#.utf8))
        try await withAuthFixture(configure: { $0.accessRules = rules }) { fixture in
            let base = fixture.server.baseURL
            let ada = try await Self.token(fixture, "ada")
            let bob = try await Self.token(fixture, "bob")
            for name in ["hidden.txt", "shown.txt"] {
                #expect(try await AccessRulesIntegrationTests.file(base, .put, name, token: ada, bytes: "ada's").status == 201)
            }
            #expect(try await AccessRulesIntegrationTests.file(base, .get, "hidden.txt", token: bob).status == 404)
            for token in [bob, nil] {
                let hidden = try await AccessRulesIntegrationTests.file(base, .put, "hidden.txt", token: token, bytes: "x")
                let shown = try await AccessRulesIntegrationTests.file(base, .put, "shown.txt", token: token, bytes: "x")
                #expect(hidden.status == (token == nil ? 401 : 403))
                #expect(hidden.status == shown.status)
                #expect(hidden.body == shown.body)
                #expect(hidden.headerFields[.wwwAuthenticate] == shown.headerFields[.wwwAuthenticate])
            }
            #expect(try await AccessRulesIntegrationTests.file(base, .get, "hidden.txt", token: ada).body == Data("ada's".utf8))
        }
    }

    // MARK: Reserved names

    @Test("?owner= and ?private= filter by the record's owner and visibility, never by body fields of those names")
    func ownerFilters() async throws {
        try await withAuthFixture { fixture in
            let base = fixture.server.baseURL
            let ada = try await Self.token(fixture, "ada")
            let bob = try await Self.token(fixture, "bob")
            let (adaID, bobID) = try await fixture.withStorage { storage in
                (try await storage.user(username: "ada")?.id ?? "", try await storage.user(username: "bob")?.id ?? "")
            }
            // ada's records, one posing as bob's and as private.
            let posing = try await Self.send(
                base, .post, "/records/posts", token: ada, text: #"{"owner": "\#(bobID)", "private": true, "t": "pose"}"#)
            #expect(posing.status == 201)
            #expect(try await Self.send(base, .post, "/records/posts", token: bob, text: #"{"t": "bob's"}"#).status == 201)
            #expect(try await Self.send(base, .post, "/records/posts", text: #"{"t": "nobody's"}"#).status == 201)
            func texts(_ query: String, token: String? = nil) async throws -> [String] {
                let page = try await Self.send(base, .get, "/records/posts?\(query)", token: token)
                #expect(page.status == 200, "\(query)")
                return (try page.json()["results"]?.arrayValue ?? []).compactMap { $0["t"]?.stringValue }.sorted()
            }
            #expect(try await texts("owner=\(bobID)") == ["bob's"])
            #expect(try await texts("owner=\(adaID)") == ["pose"])
            #expect(try await texts("owner=null") == ["nobody's"])
            #expect(try await texts("private=true", token: ada) == [])
            #expect(try await texts("private=false") == ["bob's", "nobody's", "pose"])
            #expect(try await texts("owner=\(bobID)&private=false&page=1") == ["bob's"])
        }
    }

    @Test("index_required flips at the records the caller may list: adding own records reveals no hidden count")
    func indexRequiredCountsOnlyVisible() async throws {
        let bound = 5
        try await withAuthFixture(configure: { $0.unindexedListLimit = bound }) { fixture in
            let base = fixture.server.baseURL
            let ada = try await Self.token(fixture, "ada")
            let bob = try await Self.token(fixture, "bob")
            // ada's hidden records: nobody else may list them.
            for index in 0..<4 {
                let hidden = try await Self.send(
                    base, .post, "/records/counted?visibility=private", token: ada, text: #"{"views": \#(index)}"#)
                #expect(hidden.status == 201)
            }
            func sortedList(_ token: String?) async throws -> ClientResponse {
                try await Self.send(base, .get, "/records/counted?sort=-views", token: token)
            }
            // bob adds visible records one at a time; the list flips only past the bound of what he may list.
            for count in 1...bound {
                #expect(try await Self.send(base, .post, "/records/counted", token: bob, text: #"{"views": 1}"#).status == 201)
                let page = try await sortedList(bob)
                #expect(page.status == 200, "bob sees \(count) records: \(String(decoding: page.body, as: UTF8.self))")
                #expect(try await sortedList(nil).status == 200, "anonymous, \(count) visible")
            }
            #expect(try await Self.send(base, .post, "/records/counted", token: bob, text: #"{"views": 1}"#).status == 201)
            #expect(Self.code(try await sortedList(bob)) == "index_required")
            #expect(Self.code(try await sortedList(nil)) == "index_required")
            // ada may list 10: past the bound for her as well.
            #expect(Self.code(try await sortedList(ada)) == "index_required")
        }
    }

    @Test(
        "a page ends at its byte bound and its cursor continues there: every record once, both ways, any order; a page by number past it is 400"
    )
    func pageBytes() async throws {
        let maxBytes = 10_000
        try await withAuthFixture(configure: { $0.maxPageBytes = maxBytes }) { fixture in
            let base = fixture.server.baseURL
            let ada = try await Self.token(fixture, "ada")
            let filler = String(repeating: "x", count: 3_000)
            for index in 0..<11 {
                let text = #"{"n": \#(index), "filler": "\#(filler)"}"#
                #expect(try await Self.send(base, .post, "/records/heavy", token: ada, text: text).status == 201)
            }
            // One record larger than the bound on its own still makes a page.
            let big = String(repeating: "y", count: maxBytes + 1)
            #expect(
                try await Self.send(base, .post, "/records/heavy", token: ada, text: #"{"n": 11, "filler": "\#(big)"}"#).status
                    == 201)
            for order in ["", "&sort=-n"] {
                var seen: [Int] = []
                var cursor: String?
                var pages: [[Int]] = []
                var last: JSONValue = .null
                repeat {
                    let path = "/records/heavy?limit=100" + order + (cursor.map { "&cursor=\($0)" } ?? "")
                    let page = try await Self.send(base, .get, path)
                    #expect(page.status == 200)
                    let results = try page.json()["results"]?.arrayValue ?? []
                    #expect(!results.isEmpty)
                    // The page (its records, and cursors and links under 1 KB) stays within the bound unless one record alone passes it.
                    #expect(results.count == 1 || page.body.count < maxBytes + 1_000, "\(order): \(page.body.count) bytes")
                    pages.append(results.compactMap { $0["n"]?.intValue })
                    seen += pages.last ?? []
                    last = try page.json()
                    cursor = last["next_cursor"]?.stringValue
                } while cursor != nil && pages.count < 20
                let expected = order.isEmpty ? Array(0...11) : Array((0...11).reversed())
                #expect(seen == expected, "\(order): \(pages)")
                #expect(pages.count > 3, "\(order): \(pages)")
                // Back from the last page: the same records, in the same pages' order.
                var back: [Int] = []
                var previous = last["prev_cursor"]?.stringValue
                back = (pages.last ?? []) + back
                var steps = 0
                while let cursorBack = previous, steps < 20 {
                    steps += 1
                    let page = try await Self.send(base, .get, "/records/heavy?limit=100" + order + "&cursor=\(cursorBack)")
                    back = (try page.json()["results"]?.arrayValue ?? []).compactMap { $0["n"]?.intValue } + back
                    previous = try page.json()["prev_cursor"]?.stringValue
                }
                #expect(back == expected, "\(order) backwards")
            }
            let numbered = try await Self.send(base, .get, "/records/heavy?page=1&per_page=12")
            #expect(numbered.status == 400)
            #expect(Self.code(numbered) == "page_too_large")
            #expect(Self.details(numbered)?["max_bytes"]?.intValue == maxBytes)
            #expect(try await Self.send(base, .get, "/records/heavy?page=2&per_page=2").status == 200)
        }
    }

    @Test(
        "a burst of lists no index serves from one address: each is answered 200 or 503 server_busy with Retry-After; reads and /health/ready answer"
    )
    func expensiveListBurst() async throws {
        try await withAuthFixture(configure: {
            $0.listScans = 1
            $0.listScansWaiting = 2
        }) { fixture in
            let base = fixture.server.baseURL
            let ada = try await Self.token(fixture, "ada")
            let ids = try await fixture.withStorage { storage in
                var ids: [String] = []
                for index in 0..<400 {
                    ids.append(
                        try await storage.createRecord(
                            type: "scanned", fields: ["views": .int(index * 7 % 400), "tag": .string("t\(index % 5)")],
                            owner: nil
                        ).id)
                }
                return ids
            }
            let ready = try await Self.send(base, .get, "/health/ready")
            #expect(ready.status == 200)
            #expect(try ready.json()["status"]?.stringValue == "ready")
            #expect(try ready.json()["saturated"] == .array([]))
            #expect(try await Self.send(base, .get, "/health").json()["saturated"] == .array([]))
            let statuses = try await withThrowingTaskGroup(of: (Int, String?, String?).self) { group in
                for index in 0..<12 {
                    group.addTask {
                        let reply = try await Self.send(
                            base, .get, "/records/scanned?filter=record.views%20%3E%20\(index)&sort=-views&limit=50", token: ada)
                        return (reply.status, Self.code(reply), reply.headerFields[.retryAfter])
                    }
                }
                group.addTask {
                    let reply = try await Self.send(base, .get, "/records/scanned/\(ids[7])")
                    return (reply.status, "read", nil)
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            for (status, code, retryAfter) in statuses where code != "read" {
                #expect(status == 200 || (status == 503 && code == "server_busy" && retryAfter == "1"), "\(status) \(code ?? "")")
            }
            #expect(statuses.contains { $0.0 == 200 && $0.1 == "read" })
            #expect(statuses.contains { $0.0 == 200 && $0.1 == nil })
        }
    }

    @Test("a user's records past their quota are 507 quota_exceeded on every write route; others and deletions are unaffected")
    func recordQuotas() async throws {
        try await withAuthFixture(configure: { $0.quotas = Quotas(records: 3, recordBytes: 2_000) }) { fixture in
            let base = fixture.server.baseURL
            let ada = try await Self.token(fixture, "ada")
            let bob = try await Self.token(fixture, "bob")
            var ids: [String] = []
            for index in 0..<2 {
                let created = try await Self.send(base, .post, "/records/q", token: ada, text: #"{"n": \#(index)}"#)
                #expect(created.status == 201)
                ids.append(try created.json()["id"]?.stringValue ?? "")
            }
            let batch =
                #"{"operations": [{"method": "POST", "type": "q", "body": {"n": 2}}, {"method": "POST", "type": "q", "body": {"n": 3}}]}"#
            let refusedBatch = try await Self.send(base, .post, "/records/batch", token: ada, text: batch)
            #expect(refusedBatch.status == 507, "\(String(decoding: refusedBatch.body, as: UTF8.self))")
            #expect(Self.code(refusedBatch) == "quota_exceeded")
            #expect(Self.details(refusedBatch)?["quota"]?.stringValue == "records")
            // Nothing of the refused batch was stored: one more still fits.
            #expect(try await Self.send(base, .post, "/records/q", token: ada, text: #"{"n": 2}"#).status == 201)
            let fourth = try await Self.send(base, .post, "/records/q", token: ada, text: #"{"n": 4}"#)
            #expect(fourth.status == 507)
            #expect(Self.code(fourth) == "quota_exceeded")
            #expect(try await Self.send(base, .post, "/records/q", token: bob, text: #"{"n": 4}"#).status == 201)
            // Growing a record past the bytes bound, by PUT or PATCH, is refused; the record is unchanged.
            let large = #"{"s": "\#(String(repeating: "z", count: 2_100))"}"#
            #expect(
                Self.code(try await Self.send(base, .put, "/records/q/\(ids[0])", token: ada, text: large)) == "quota_exceeded")
            #expect(
                Self.code(try await Self.send(base, .patch, "/records/q/\(ids[0])", token: ada, text: large)) == "quota_exceeded")
            #expect(try await Self.send(base, .get, "/records/q/\(ids[0])").json()["n"]?.intValue == 0)
            // A deletion gives the place back.
            #expect(try await Self.send(base, .delete, "/records/q/\(ids[1])", token: ada).status == 204)
            #expect(try await Self.send(base, .post, "/records/q", token: ada, text: #"{"n": 5}"#).status == 201)
        }
    }

    @Test(
        "a user's files past their quota of bytes or unfinished uploads are 507 quota_exceeded; a replacement counts the old bytes as freed"
    )
    func fileQuotas() async throws {
        try await withAuthFixture(configure: { $0.quotas = Quotas(fileBytes: 10_000, pendingUploads: 1) }) { fixture in
            let base = fixture.server.baseURL
            let ada = try await Self.token(fixture, "ada")
            let bob = try await Self.token(fixture, "bob")
            func put(_ name: String, _ count: Int, token: String) async throws -> ClientResponse {
                try await AccessRulesIntegrationTests.file(
                    base, .put, name, token: token, bytes: String(repeating: "f", count: count))
            }
            #expect(try await put("a.bin", 6_000, token: ada).status == 201)
            let over = try await put("b.bin", 5_000, token: ada)
            #expect(over.status == 507)
            #expect(Self.code(over) == "quota_exceeded")
            #expect(Self.details(over)?["quota"]?.stringValue == "file_bytes")
            #expect(Self.details(over)?["limit"]?.intValue == 10_000)
            #expect(try await AccessRulesIntegrationTests.file(base, .get, "b.bin").status == 404)
            // Replacing a.bin frees its 6,000 bytes; bob's quota is his own.
            #expect(try await put("a.bin", 9_000, token: ada).status == 200)
            #expect(try await put("b.bin", 9_000, token: bob).status == 201)
            // Unfinished uploads: one may be open at once.
            let open = try await Self.send(
                base, .put, "/files/c.bin?upload=upload-one-0000001", token: ada, text: "cc", headers: [Self.uploadComplete: "?0"]
            )
            #expect(open.status == 204, "\(String(decoding: open.body, as: UTF8.self))")
            let second = try await Self.send(
                base, .put, "/files/d.bin?upload=upload-two-0000002", token: ada, text: "dd", headers: [Self.uploadComplete: "?0"]
            )
            #expect(second.status == 507)
            #expect(Self.details(second)?["quota"]?.stringValue == "pending_uploads")
            // The open upload goes on, within the bytes left (10,000 - 9,000 - 2).
            let more = try await Self.send(
                base, .put, "/files/c.bin?upload=upload-one-0000001", token: ada, text: String(repeating: "c", count: 1_000),
                headers: [Self.uploadComplete: "?1", HTTPField.Name("Upload-Offset")!: "2"])
            #expect(more.status == 507)
            let fits = try await Self.send(
                base, .put, "/files/c.bin?upload=upload-one-0000001", token: ada, text: String(repeating: "c", count: 998),
                headers: [Self.uploadComplete: "?1", HTTPField.Name("Upload-Offset")!: "2"])
            #expect(fits.status == 201, "\(String(decoding: fits.body, as: UTF8.self))")
        }
    }

    // MARK: Plugin names

    @Test("an unknown lambda, handler or provider lists the server's names only with --demo or to an admin")
    func unknownNames() async throws {
        for lists in [false, true] {
            try await withAuthFixture(configure: { $0.listsPluginNames = lists }) { fixture in
                let base = fixture.server.baseURL
                let ada = try await Self.token(fixture, "ada")
                func message(_ path: String, token: String? = nil, text: String = "{}") async throws -> String {
                    let reply = try await Self.send(base, .post, path, token: token, text: text)
                    #expect(reply.status == 404)
                    return try #require(try reply.json()["error"]?["message"]?.stringValue)
                }
                let login = #"{"provider": "nope", "auth_data": {}, "client_id": "\#(fixture.publicClient.id)"}"#
                #expect(try await message("/lambdas/nope").contains("hello") == lists)
                #expect(try await message("/handlers/nope").contains("time") == lists)
                #expect(try await message("/lambdas/nope", token: ada).contains("hello") == lists)
                #expect(try await message("/auth/login", text: login).contains("outpost.test") == lists)
                try await fixture.withStorage { storage in
                    let user = try #require(try await storage.user(username: "ada"))
                    try await storage.addRole("admin", userID: user.id)
                }
                let admin = try await Self.token(fixture, "ada")
                #expect(try await message("/lambdas/nope", token: admin).contains("hello"))
                #expect(try await message("/handlers/nope", token: admin).contains("time"))
            }
        }
    }

    // MARK: Usernames

    @Test("usernames are NFKC-normalised and lowercased: look-alikes of alice are refused or are alice")
    func confusableUsernames() async throws {
        try await withAuthFixture { fixture in
            func signUp(_ name: String) async throws -> ClientResponse {
                try await SignUpModeTests.signUp(fixture, name)
            }
            #expect(try await signUp("alice").status == 201)
            let cyrillic = try await signUp("\u{430}lice")  // Cyrillic а
            #expect(cyrillic.status == 400)
            #expect(Self.code(cyrillic) == "invalid_username")
            let fullwidth = try await signUp("ａｌｉｃｅ")
            #expect(fullwidth.status == 409)
            #expect(Self.code(fullwidth) == "username_taken")
            #expect(try await signUp("ALICE").status == 409)
            let mixed = try await signUp("Grace.Hopper")
            #expect(mixed.status == 201)
            #expect(try mixed.json()["username"] == "grace.hopper")
            for refused in ["ｇｒａｃｅ\u{0301}x", "名前です", "a b c", "x\u{200B}y"] {
                #expect(Self.code(try await signUp(refused)) == "invalid_username", "\(refused)")
            }
            // Sign-in: the fullwidth form is alice; the Cyrillic one is nobody; case does not matter.
            func signIn(_ name: String) async throws -> TestBrowser.Page {
                try await fixture.token([
                    "grant_type": "password", "username": name, "password": "long enough password",
                    "client_id": fixture.publicClient.id,
                ])
            }
            #expect(try await signIn("ａｌｉｃｅ").status == 200)
            #expect(try await signIn("Alice").status == 200)
            #expect(try await signIn("GRACE.hopper").status == 200)
            #expect(try await signIn("\u{430}lice").status == 400)
            // A user added before names were normalised (mixed case, another script) still signs in.
            try await fixture.withStorage { storage in
                _ = try await storage.addUser(username: "Zoë", password: "long enough password", cost: 4)
            }
            #expect(try await signIn("Zoë").status == 200)
        }
    }
}

/// Random JSON text for the read-back property: numbers of every shape, strings of every plane
/// with escapes, nested objects and arrays.
enum BodyGenerator {
    static func object(_ generator: inout SeededGenerator, depth: Int) -> String {
        let count = Int(generator.next(below: depth == 1 ? 8 : 4)) + (depth == 1 ? 1 : 0)
        let members = (0..<count).map { _ in
            string(&generator) + ":" + value(&generator, depth: depth)
        }
        return "{" + members.joined(separator: ",") + "}"
    }

    static func value(_ generator: inout SeededGenerator, depth: Int) -> String {
        switch generator.next(below: depth >= 4 ? 6 : 8) {
        case 0, 1, 2: return number(&generator)
        case 3, 4: return string(&generator)
        case 5: return ["true", "false", "null"][Int(generator.next(below: 3))]
        case 6: return object(&generator, depth: depth + 1)
        default:
            let items = (0..<generator.next(below: 4)).map { _ in value(&generator, depth: depth + 1) }
            return "[" + items.joined(separator: ", ") + "]"
        }
    }

    static func digits(_ generator: inout SeededGenerator, _ count: Int) -> String {
        String(
            (0..<count).map { index in
                Character(String(index == 0 ? 1 + generator.next(below: 9) : generator.next(below: 10)))
            })
    }

    static func number(_ generator: inout SeededGenerator) -> String {
        let sign = generator.next(below: 3) == 0 ? "-" : ""
        switch generator.next(below: 12) {
        case 0: return sign + String(generator.next(below: 1000))
        case 1: return ["-0", "0", "-0.0", "0.0", "0e0", "-0E-5"][Int(generator.next(below: 6))]
        case 2: return sign + digits(&generator, 19 + Int(generator.next(below: 300)))  // big integers, some too big
        case 3:
            return sign + digits(&generator, 1 + Int(generator.next(below: 17))) + "."
                + digits(&generator, 1 + Int(generator.next(below: 3)))
        case 4:  // long decimals: refused unless they happen to be a double's shortest form
            return sign + "0." + digits(&generator, 18 + Int(generator.next(below: 20)))
        case 5:
            let exponent = Int(generator.next(below: 700)) - 350
            return sign + digits(&generator, 1) + "." + digits(&generator, Int(generator.next(below: 16)) + 1) + "e"
                + String(exponent)
        case 6: return sign + digits(&generator, 1) + "E+" + String(generator.next(below: 300))
        case 7:
            return ["5e-324", "1.7976931348623157e308", "2.2250738585072014E-308", "1e-400", "1e400"][
                Int(generator.next(below: 5))]
        case 8: return sign + "1.50"
        case 9: return sign + String(generator.next(below: UInt64(Int.max)))
        case 10: return sign + "0.1"
        default: return sign + digits(&generator, 1 + Int(generator.next(below: 8))) + "e-" + String(generator.next(below: 20))
        }
    }

    static func string(_ generator: inout SeededGenerator) -> String {
        var text = "\""
        for _ in 0..<generator.next(below: 12) {
            switch generator.next(below: 9) {
            case 0:
                text +=
                    ["\\n", "\\t", "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\r", "\\u0000", "\\u001f"][
                        Int(generator.next(below: 10))]
            case 1: text += "\\ud83d\\ude00"  // an astral scalar as a surrogate pair
            case 2: text += String(format: "\\u%04x", 0x20 + Int(generator.next(below: 0xD800 - 0x20)))
            case 3:  // the BMP beyond ASCII, surrogates left out
                let value = 0x80 + UInt32(generator.next(below: 0xFFFE - 0x80))
                text.unicodeScalars.append(Unicode.Scalar(value) ?? "é")
            case 4, 5:  // every astral plane, 1 to 16
                let value = 0x10000 + UInt32(generator.next(below: 0x10FFFF - 0x10000))
                text.unicodeScalars.append(Unicode.Scalar(value) ?? "😀")
            default:  // printable ASCII, but for the two characters that need an escape
                let scalar = Unicode.Scalar(0x20 + UInt8(generator.next(below: 0x5F)))
                text.unicodeScalars.append(scalar == "\"" || scalar == "\\" ? "x" : scalar)
            }
        }
        return text + "\""
    }

    static func removing(_ key: String, from value: JSONValue) -> JSONValue {
        guard case .object(var object) = value else { return value }
        object[key] = nil
        return .object(object)
    }

    /// Equal JSON, numbers compared by their decimal value (`100` and `1e2`, `-0` and `0`).
    /// `loose` leaves out the server's keys at every level of objects.
    static func same(_ a: JSONValue, _ b: JSONValue, loose: Bool = false) -> Bool {
        if let x = numberText(a), let y = numberText(b) { return x == y }
        switch (a, b) {
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { same($0, $1, loose: loose) }
        case (.object(var x), .object(var y)):
            if loose { for key in ["id", "created_at", "updated_at"] { (x[key], y[key]) = (nil, nil) } }
            return x.keys.sorted() == y.keys.sorted() && x.allSatisfy { key, value in same(value, y[key] ?? .null, loose: loose) }
        default: return a == b
        }
    }

    /// A number's decimal value as `sign digits e scale`, digits without leading or trailing zeros.
    static func numberText(_ value: JSONValue) -> String? {
        let text: String
        switch value {
        case .int(let number): text = String(number)
        case .largeInteger(let digits): text = digits
        case .double(let number): text = number.description
        default: return nil
        }
        var negative = text.hasPrefix("-")
        var mantissa = Substring(negative ? text.dropFirst() : Substring(text))
        var exponent = 0
        if let e = mantissa.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            exponent = Int(mantissa[mantissa.index(after: e)...].replacingOccurrences(of: "+", with: "")) ?? 0
            mantissa = mantissa[..<e]
        }
        if let point = mantissa.firstIndex(of: ".") {
            exponent -= mantissa.distance(from: point, to: mantissa.endIndex) - 1
            mantissa.remove(at: point)
        }
        var digits = String(mantissa.drop { $0 == "0" })
        while digits.hasSuffix("0") {
            digits.removeLast()
            exponent += 1
        }
        if digits.isEmpty { (negative, exponent) = (false, 0) }
        return (negative ? "-" : "") + digits + "e" + String(exponent)
    }
}
