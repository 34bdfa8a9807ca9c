import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
@_spi(OutpostInternal) import OutpostCore
import OutpostExpressions
import OutpostServerTesting
import OutpostTestSupport
import Testing

@testable import OutpostServer

/// Access rules per record type: storage, the list compiler against the evaluator, and the record
/// routes for every kind of caller, on every backend.
@Suite("Access rules", .closesWhatItOpens)
struct AccessRulesTests {
    static let backends = ScratchDatabase.backends

    func withStorage(_ backend: ScratchDatabase.Backend, _ body: (any Storage, ScratchDatabase) async throws -> Void)
        async throws
    {
        try await StorageConformanceTests().withStorage(backend, body)
    }

    // MARK: Storage

    @Test("rules and roles live in storage: set, replace, remove, and seen by a second instance", arguments: backends)
    func storage(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, database in
            #expect(try await storage.rules().isEmpty)
            try await storage.setRules(type: "posts", ["read": "true", "create": "caller.signed_in"])
            try await storage.setRule(type: "*", operation: "delete", expression: "false")
            try await storage.setRule(type: "posts", operation: "read", expression: "record.owner == caller.user")
            let other = try await database.open()
            let seen = try await other.rules().map { "\($0.type).\($0.operation)=\($0.expression)" }
            try await other.close()
            #expect(seen == ["*.delete=false", "posts.create=caller.signed_in", "posts.read=record.owner == caller.user"])
            try await storage.setRules(type: "posts", ["list": "true"])
            #expect(try await storage.rules().map { "\($0.type).\($0.operation)" } == ["*.delete", "posts.list"])
            #expect(try await storage.removeRule(type: "*", operation: "delete"))
            #expect(try await !storage.removeRule(type: "*", operation: "delete"))

            try await storage.addRole("editor", userID: "u1")
            try await storage.addRole("editor", userID: "u1")
            try await storage.addRole("admin", userID: "u1")
            #expect(try await storage.roles(userID: "u1") == ["admin", "editor"])
            #expect(try await storage.removeRole("admin", userID: "u1"))
            #expect(try await !storage.removeRole("admin", userID: "u1"))
            #expect(try await storage.roles(userID: "u1") == ["editor"])
            #expect(try await storage.roles(userID: "u2") == [])
        }
    }

    @Test("a rules file is checked whole: the error names the file, type, operation and column")
    func rulesFile() throws {
        let good = try AccessRuleSet(
            json: Data(#"{"types": {"posts": {"read": "record.status == \"published\""}, "*": {"create": "true"}}}"#.utf8))
        #expect(good.types["posts"]?[.read] == #"record.status == "published""#)
        let bad = #"{"types": {"posts": {"update": "record.owner == "}}}"#
        let error = try #require(throws: AccessRuleError.self) { try AccessRuleSet(json: Data(bad.utf8), file: "rules.json") }
        #expect(
            error.message.hasPrefix("rules.json: types.posts.update: expected a value after '==' at column 17"),
            "\(error.message)")
        #expect(error.message.hasSuffix("(unexpected_token)"))
        #expect(error.expressionError?.position?.column == 17)
        #expect(throws: AccessRuleError.self) { try AccessRuleSet(json: Data(#"{"types": {"posts": {"write": "true"}}}"#.utf8)) }
        #expect(throws: AccessRuleError.self) { try AccessRuleSet(json: Data(#"{"types": {"a b": {"read": "true"}}}"#.utf8)) }
        #expect(throws: AccessRuleError.self) { try AccessRuleSet(json: Data(#"{"rules": {}}"#.utf8)) }
        // A list rule must select records in SQL.
        let unlistable = try #require(throws: AccessRuleError.self) {
            try AccessRuleSet(["posts": ["list": "record.a == record.b"]])
        }
        #expect(unlistable.message.contains("cannot be used to select records"))
        _ = try AccessRuleSet(["posts": ["update": "record.a == record.b"]])
    }

    @Test("a rules file's files object holds the rules of files, with their own roots and operations")
    func rulesFileForFiles() throws {
        let set = try AccessRuleSet(
            json: Data(#"{"types": {"posts": {"create": "true"}}, "files": {"read": "caller.signed_in"}}"#.utf8))
        #expect(set.types[AccessRules.filesType]?[.read] == "caller.signed_in")
        #expect(try AccessRuleSet(json: Data(#"{"files": {"delete": "false"}}"#.utf8)).types.keys.sorted() == ["@files"])
        let list = try #require(throws: AccessRuleError.self) {
            try AccessRuleSet(json: Data(#"{"files": {"list": "true"}}"#.utf8), file: "rules.json")
        }
        #expect(list.message.hasPrefix("rules.json: files.list: 'list' is not an operation a rule decides on files"))
        // Files read `file`, not `record`; records read `record`, not `file`.
        #expect(throws: AccessRuleError.self) { try AccessRuleSet(json: Data(#"{"files": {"read": "record.owner"}}"#.utf8)) }
        #expect(throws: AccessRuleError.self) { try AccessRuleSet(["posts": ["read": "file.owner == caller.user"]]) }
        #expect(throws: AccessRuleError.self) { try AccessRuleSet(json: Data(#"{"files": "true"}"#.utf8)) }
        #expect(throws: AccessRuleError.self) { try AccessRuleSet(json: Data(#"{"types": {}, "extra": {}}"#.utf8)) }
        // `*` applies to record types only; files fall back to their own defaults.
        let rules = AccessRules([StoredRule(type: "*", operation: "create", expression: "true", updatedAt: 0)])
        #expect(rules.rule(for: AccessRules.filesType, .create).source == AccessRules.fileDefaults[.create])
        #expect(rules.rule(for: AccessRules.filesType, .list).source == "false")
        // A stored file rule for an operation files do not have is left out and reported.
        var invalid: [(rule: StoredRule, error: any Error)] = []
        _ = AccessRules([StoredRule(type: "@files", operation: "subscribe", expression: "true", updatedAt: 0)], invalid: &invalid)
        #expect(invalid.count == 1)
    }

    @Test("a rule reading only the keys the server owns is decided without parsing the record's fields")
    func readsFields() throws {
        for operation in RuleOperation.allCases {
            #expect(!AccessRules().rule(for: "t", operation).readsFields, "\(operation)")
        }
        let rules = AccessRules([
            StoredRule(type: "t", operation: "read", expression: #"record.status == "x""#, updatedAt: 0),
            StoredRule(type: "t", operation: "list", expression: "record == null", updatedAt: 0),
            StoredRule(type: "t", operation: "update", expression: "request.body.a == record.created_at", updatedAt: 0),
        ])
        #expect(rules.rule(for: "t", .read).readsFields)
        #expect(rules.rule(for: "t", .list).readsFields)
        #expect(!rules.rule(for: "t", .update).readsFields)
        let record = StoredRecord(
            type: "t", id: "a", owner: "u1", body: #"{"status":"x","owner":"someone"}"#, version: 1, createdAt: 0,
            updatedAt: 0, seq: 1, isPrivate: true)
        let lean = try record.ruleValue(for: rules.rule(for: "t", .update))
        #expect(
            lean == [
                "id": "a", "owner": "u1", "private": true, "created_at": "1970-01-01T00:00:00Z",
                "updated_at": "1970-01-01T00:00:00Z",
            ])
        #expect(try record.ruleValue(for: rules.rule(for: "t", .read)) == (try record.ruleValue))
        guard case .object(let full) = try record.ruleValue(for: rules.rule(for: "t", .read)) else {
            Issue.record("not an object")
            return
        }
        #expect(full["status"] == "x" && full["owner"] == "u1")
    }

    // MARK: Lists against the evaluator

    static let listRules = [
        AccessRules.defaults[.list]!, "true", "false", #""editor" in caller.roles"#, #"record.status == "published""#,
        #"record.status != "published""#, "record.owner == caller.user", "record.owner != null", "!record.flag",
        "record.flag", "!!record.flag", "(!record.flag) == null", "record.n > 2", "2 < record.n", "record.n <= 3.5",
        #"record.title >= "b""#, #"record.title ^= "Intro""#, #"record.owner ^= "u""#,
        #"record.status in ["draft", 1, true, null]"#, #"record.status in caller.roles"#, "record.a.b == 3",
        "record.a.b == null", "record.nope == null", "record.private == false && record.id != \"x\"",
        #"!(record.status == "draft") || caller.signed_in"#, #"caller.user == "u1" && record.private"#,
        #"record.flag == false || record.n == 1"#, #"(record.status == "draft") == caller.signed_in"#,
        #""u" ^= "u" && record.title != "Intro""#, "record.title < 5", "record.flag > 1",
    ]

    static let callers: [RuleCaller] = [
        .anonymous,
        RuleCaller(signedIn: true, user: "u1", client: "app", scopes: ["records"], roles: ["editor", "draft"]),
        RuleCaller(signedIn: true, user: "u2", client: "app", scopes: ["records"]),
        RuleCaller(signedIn: true, user: nil, client: "machine", scopes: ["records"]),
    ]

    static func randomFields(_ random: inout SeededGenerator) -> [String: JSONValue] {
        let pool: [String: [JSONValue?]] = [
            "status": ["published", "draft", 1, true, .null, .none, "Published", "editor"],
            "n": [1, 2, 3, .double(3.5), .double(2.0000001), -1, "3", .null, .none, .largeInteger("99999999999999999999")],
            "title": ["Intro to x", "Intro", "intro", "b", "a", "é", "", 5, .none, .array(["Intro"])],
            "flag": [true, false, "yes", 0, .null, .none],
            "a": [.object(["b": 3]), .object(["b": "3"]), .object([:]), 3, .array([3]), .none],
            "private": [true, .none],
            "owner": ["u1", .none],
        ]
        var fields: [String: JSONValue] = [:]
        for (name, values) in pool.sorted(by: { $0.key < $1.key }) {
            if let value = values[Int(random.next() % UInt64(values.count))] { fields[name] = value }
        }
        return fields
    }

    @Test(
        "a list holds exactly the records the rule grants, with exact totals and keyset pages (seeded)", arguments: backends)
    func listMatchesEvaluator(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, _ in
            var random = SeededGenerator(state: 0x5EED_0001)
            var records: [StoredRecord] = []
            for _ in 0..<80 {
                let owner: String? = [nil, "u1", "u2"][Int(random.next() % 3)]
                let isPrivate = owner != nil && random.next() % 3 == 0
                records.append(
                    try await storage.createRecord(
                        type: "t", fields: Self.randomFields(&random), owner: owner, isPrivate: isPrivate))
            }
            _ = try await storage.createRecord(type: "other", fields: ["status": "published"], owner: nil)
            for source in Self.listRules {
                let condition = try AccessRules.parse(source)
                for caller in Self.callers {
                    let expected = try records.filter {
                        condition.decide(in: AccessRules.environment(caller: caller, record: try $0.ruleValue))
                    }.map(\.id)
                    var query = RecordQuery(type: "t", limit: 500)
                    query.access = try RecordPredicate.compile(condition, caller: caller)
                    let (page, total) = try await storage.listRecords(query, page: 1)
                    #expect(page.map(\.id) == expected, "\(source) for \(caller.value)")
                    #expect(total == expected.count, "\(source) for \(caller.value)")
                    // Keyset pages of 7, forwards, hold the same records in the same order.
                    query.limit = 7
                    var walked: [String] = []
                    var position: RecordPosition?
                    while true {
                        let rows = try await storage.listRecords(query, from: position, backwards: false)
                        let shown = rows.prefix(7)
                        walked += shown.map(\.id)
                        guard rows.count > 7, let last = shown.last else { break }
                        position = RecordPosition(time: last.createdAt, seq: last.seq)
                    }
                    #expect(walked == expected, "keyset: \(source) for \(caller.value)")
                    let text = try await storage.listRecordText(query, from: nil, backwards: false)
                    #expect(text.keys.positions.count == min(7, expected.count), "page text: \(source)")
                }
            }
        }
    }

    @Test("rules the compiler cannot express exactly are refused, not approximated")
    func notListable() throws {
        for source in [
            "record.a == record.b", "record.created_at > \"2020\"", "\"x\" in record.tags", "record == null",
            "record.title ^= record.prefix", "record.tags == [1]", "record.a < record.b",
        ] {
            #expect(throws: RuleNotListable.self, "\(source)") {
                try RecordPredicate.compile(try AccessRules.parse(source), caller: .anonymous)
            }
        }
    }

    // MARK: Routes

    /// Tokens of the route tests: each caller kind.
    static let tokens: [String: (user: String?, client: String)] = [
        "opa_owner": ("u_owner", "app"), "opa_other": ("u_other", "app"), "opa_editor": ("u_editor", "app"),
        "opa_machine": (nil, "machine"),
    ]

    enum Who: String, CaseIterable {
        case anonymous, owner, other, editor, machine
        var headers: HTTPFields {
            self == .anonymous ? [:] : [.authorization: "Bearer opa_\(rawValue)"]
        }
    }

    func withRoutes(
        _ backend: ScratchDatabase.Backend,
        _ body: @escaping @Sendable (any Storage, any TestClientProtocol) async throws -> Void
    ) async throws {
        try await withStorage(backend) { storage, _ in
            for (token, caller) in Self.tokens {
                try await storage.saveToken(
                    StoredToken(
                        hash: Secrets.hash(token), kind: .access, userID: caller.user, clientID: caller.client,
                        scope: "records:read records:write", family: "f-\(token)", expiresAt: AuthService.now() + 600_000,
                        state: "active"))
            }
            try await storage.addRole("editor", userID: "u_editor")
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-rules-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            var configuration = ServerConfiguration(port: 0)
            configuration.logger = ErrorMiddlewareTests.quiet
            configuration.filesDirectory = folder.path
            configuration.accessRulesMaxAge = .zero
            let router = try await OutpostServer(configuration: configuration).makeRouter(storage: storage)
            try await Application(router: router, logger: ErrorMiddlewareTests.quiet).test(.router) { client in
                try await body(storage, client)
            }
        }
    }

    struct Reply {
        var status: HTTPResponse.Status
        var json: JSONValue
        var headers: HTTPFields
        var code: String? { json["error"]?["code"]?.stringValue }
        var rule: String? { json["error"]?["details"]?["rule"]?.stringValue }
    }

    static func call(
        _ client: some TestClientProtocol, _ method: HTTPRequest.Method, _ uri: String, _ who: Who, _ body: JSONValue? = nil
    ) async throws -> Reply {
        var headers = who.headers
        if body != nil {
            headers[.contentType] = method == .patch ? "application/merge-patch+json" : "application/json"
        }
        let response = try await client.execute(
            uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0.jsonString()) })
        let json = (try? JSONValue(parsing: Data(response.body.readableBytesView))) ?? .null
        return Reply(status: response.status, json: json, headers: response.headers)
    }

    static func create(_ client: some TestClientProtocol, _ who: Who, _ fields: JSONValue, query: String = "") async throws
        -> String
    {
        let reply = try await call(client, .post, "/records/posts\(query)", who, fields)
        #expect(reply.status == .created, "\(reply.json)")
        return reply.json["id"]?.stringValue ?? "missing"
    }

    @Test(
        "the defaults: sign in to create, the owner changes, public records are read by all, private by the owner",
        arguments: backends)
    func defaults(_ backend: ScratchDatabase.Backend) async throws {
        try await withRoutes(backend) { _, client in
            let anonymous = try await Self.call(client, .post, "/records/posts", .anonymous, ["title": "x"])
            #expect(anonymous.status == .unauthorized)
            #expect(anonymous.code == "sign_in_required")
            #expect(anonymous.headers[.wwwAuthenticate] == "Bearer")
            let id = try await Self.create(client, .owner, ["title": "x"])
            let secret = try await Self.create(client, .owner, ["title": "s"], query: "?visibility=private")
            let machine = try await Self.create(client, .machine, ["title": "m"])
            for who in Who.allCases {
                #expect(try await Self.call(client, .get, "/records/posts/\(id)", who).status == .ok, "\(who)")
                let hidden = try await Self.call(client, .get, "/records/posts/\(secret)", who)
                #expect(hidden.status == (who == .owner ? .ok : .notFound), "\(who)")
                let list = try await Self.call(client, .get, "/records/posts?page=1", who)
                #expect(list.json["total"] == .int(who == .owner ? 3 : 2), "\(who)")
            }
            for who in [Who.anonymous, .other, .editor, .machine] {
                let update = try await Self.call(client, .patch, "/records/posts/\(id)", who, ["title": "y"])
                // Without a token, signing in may change the answer: 401; signed in, 403.
                #expect(update.status == (who == .anonymous ? .unauthorized : .forbidden), "\(who)")
                #expect(update.code == (who == .anonymous ? "sign_in_required" : "forbidden_by_rule"))
                #expect(update.rule == "posts.update")
                #expect(try await Self.call(client, .delete, "/records/posts/\(id)", who).rule == "posts.delete")
                // A record the caller may not read is missing, whatever the write.
                #expect(try await Self.call(client, .put, "/records/posts/\(secret)", who, ["a": 1]).status == .notFound)
                #expect(try await Self.call(client, .delete, "/records/posts/\(secret)", who).status == .notFound)
            }
            // No owner: nobody changes it under the defaults.
            #expect(try await Self.call(client, .patch, "/records/posts/\(machine)", .machine, ["a": 1]).status == .forbidden)
            #expect(try await Self.call(client, .put, "/records/posts/\(id)", .owner, ["title": "z"]).status == .ok)
            #expect(try await Self.call(client, .patch, "/records/posts/\(secret)", .owner, ["a": 1]).status == .ok)
            #expect(try await Self.call(client, .delete, "/records/posts/\(id)", .owner).status == .noContent)
        }
    }

    @Test("rule shapes × callers × operations: true, false, role, field and body rules; * as the fallback", arguments: backends)
    func shapes(_ backend: ScratchDatabase.Backend) async throws {
        try await withRoutes(backend) { storage, client in
            // `true` everywhere: anonymous writes happen because a rule says so.
            try await storage.setRules(
                type: "posts", Dictionary(uniqueKeysWithValues: RuleOperation.allCases.map { ($0.rawValue, "true") }))
            let open = try await Self.create(client, .anonymous, ["title": "open"])
            #expect(try await Self.call(client, .patch, "/records/posts/\(open)", .anonymous, ["n": 1]).status == .ok)
            let owned = try await Self.create(client, .owner, ["title": "mine"], query: "?visibility=private")
            #expect(try await Self.call(client, .get, "/records/posts/\(owned)", .anonymous).status == .ok)
            #expect(try await Self.call(client, .delete, "/records/posts/\(owned)", .other).status == .noContent)

            // `false` everywhere: nothing for anyone, reads answered as missing.
            try await storage.setRules(
                type: "posts", Dictionary(uniqueKeysWithValues: RuleOperation.allCases.map { ($0.rawValue, "false") }))
            for who in Who.allCases {
                let create = try await Self.call(client, .post, "/records/posts", who, ["title": "x"])
                #expect(create.status == (who == .anonymous ? .unauthorized : .forbidden), "\(who)")
                #expect(create.rule == "posts.create")
                #expect(try await Self.call(client, .get, "/records/posts/\(open)", who).status == .notFound)
                #expect(try await Self.call(client, .patch, "/records/posts/\(open)", who, ["n": 2]).status == .notFound)
                let list = try await Self.call(client, .get, "/records/posts?page=1", who)
                #expect(list.json["total"] == .int(0))
                #expect(try await Self.call(client, .get, "/records/posts", who).json["results"] == .array([]))
            }

            // Role-based update; field-based read and list; body-based create.
            try await storage.setRules(
                type: "posts",
                [
                    // `record.owner != null`: an anonymous caller's user is null too, and null == null.
                    "update": #""editor" in caller.roles || (record.owner != null && record.owner == caller.user)"#,
                    "read": #"record.status == "published" || record.owner == caller.user"#,
                    "create": "request.body.title != null",
                ])
            let untitled = try await Self.call(client, .post, "/records/posts", .owner, ["status": "draft"])
            #expect(untitled.status == .forbidden)
            #expect(untitled.rule == "posts.create")
            let draft = try await Self.create(client, .owner, ["title": "d", "status": "draft"])
            let published = try await Self.create(client, .anonymous, ["title": "p", "status": "published"])
            for who in Who.allCases {
                let read = try await Self.call(client, .get, "/records/posts/\(draft)", who)
                #expect(read.status == (who == .owner ? .ok : .notFound), "\(who)")
                #expect(try await Self.call(client, .get, "/records/posts/\(published)", who).status == .ok)
                let list = try await Self.call(client, .get, "/records/posts?page=1&per_page=100", who)
                let ids = list.json["results"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
                #expect(ids.contains(published) && ids.contains(draft) == (who == .owner), "\(who)")
                #expect(list.json["total"] == .int(ids.count))
                let update = try await Self.call(client, .patch, "/records/posts/\(published)", who, ["n": 1])
                let refusal: HTTPResponse.Status = who == .anonymous ? .unauthorized : .forbidden
                #expect(update.status == ([.editor].contains(who) ? .ok : refusal), "\(who): \(update.json)")
            }
            // The update rule reads the body too.
            try await storage.setRule(
                type: "posts", operation: "update", expression: #"request.body.status != "published" || "editor" in caller.roles"#
            )
            #expect(
                try await Self.call(client, .patch, "/records/posts/\(draft)", .owner, ["status": "published"]).status
                    == .forbidden)
            #expect(try await Self.call(client, .patch, "/records/posts/\(draft)", .owner, ["title": "d2"]).status == .ok)

            // `*` applies to types without their own rule, and the error names it.
            try await storage.setRules(type: "*", ["create": "true", "delete": "false"])
            let note = try await Self.call(client, .post, "/records/notes", .anonymous, ["a": 1])
            #expect(note.status == .created)
            let id = note.json["id"]?.stringValue ?? ""
            let refused = try await Self.call(client, .delete, "/records/notes/\(id)", .anonymous)
            #expect(refused.status == .unauthorized)
            #expect(refused.headers[.wwwAuthenticate] == "Bearer")
            #expect(refused.rule == "*.delete")
        }
    }

    @Test("an idempotent create is checked again when it is replayed", arguments: backends)
    func replayRechecked(_ backend: ScratchDatabase.Backend) async throws {
        try await withRoutes(backend) { storage, client in
            try await storage.setRule(type: "posts", operation: "create", expression: "true")
            var headers = Who.anonymous.headers
            headers[.contentType] = "application/json"
            headers[HTTPField.Name("Idempotency-Key")!] = "k-1"
            let first = try await client.execute(
                uri: "/records/posts", method: .post, headers: headers, body: ByteBuffer(string: #"{"a":1}"#))
            #expect(first.status == .created)
            let replay = try await client.execute(
                uri: "/records/posts", method: .post, headers: headers, body: ByteBuffer(string: #"{"a":1}"#))
            #expect(replay.status == .created)
            _ = try await storage.removeRule(type: "posts", operation: "create")
            let refused = try await client.execute(
                uri: "/records/posts", method: .post, headers: headers, body: ByteBuffer(string: #"{"a":1}"#))
            #expect(refused.status == .unauthorized)
        }
    }

    @Test("a list never holds a record GET refuses to the same caller (seeded, every caller kind)", arguments: backends)
    func listAgreesWithGet(_ backend: ScratchDatabase.Backend) async throws {
        try await withRoutes(backend) { storage, client in
            try await storage.setRule(type: "posts", operation: "create", expression: "true")
            var random = SeededGenerator(state: 42)
            for index in 0..<30 {
                let who = Who.allCases[index % Who.allCases.count]
                let query = who != .anonymous && who != .machine && random.next() % 3 == 0 ? "?visibility=private" : ""
                _ = try await Self.create(client, who, .object(Self.randomFields(&random)), query: query)
            }
            for rule in [
                AccessRules.defaults[.read]!, #"record.status == "published" || record.owner == caller.user"#,
                #""editor" in caller.roles || record.n > 2"#, "!record.flag",
            ] {
                try await storage.setRule(type: "posts", operation: "read", expression: rule)
                for who in Who.allCases {
                    let list = try await Self.call(client, .get, "/records/posts?page=1&per_page=100", who)
                    let ids = list.json["results"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
                    #expect(list.json["total"] == .int(ids.count))
                    var readable = 0
                    for id in ids {
                        #expect(try await Self.call(client, .get, "/records/posts/\(id)", who).status == .ok, "\(rule) \(who)")
                        readable += 1
                    }
                    var keyset: [String] = []
                    var next: String? = "/records/posts?limit=4"
                    while let uri = next {
                        let page = try await Self.call(client, .get, uri, who)
                        keyset += page.json["results"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
                        next = page.json["next_cursor"]?.stringValue.map { "/records/posts?limit=4&cursor=\($0)" }
                    }
                    #expect(keyset == ids, "\(rule) \(who)")
                }
            }
        }
    }
}
