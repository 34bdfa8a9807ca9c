import ArgumentParser
import OutpostServer
import Testing

@testable import outpost

@Suite("outpost rules")
struct RulesCommandTests {
    static let stored = [
        StoredRule(
            type: "posts", operation: "update", expression: #""editor" in caller.roles || record.owner == caller.user"#,
            updatedAt: 0),
        StoredRule(type: "*", operation: "create", expression: "true", updatedAt: 0),
    ]

    @Test("check prints allow or deny, the rule and its explanation")
    func check() throws {
        let denied = try RulesCommand.Check.parse([
            "posts", "update", "--caller", #"{"user": "u1", "roles": ["viewer"]}"#, "--record", #"{"owner": "u2"}"#,
        ]).report(Self.stored)
        #expect(!denied.allowed)
        #expect(denied.text.hasPrefix(#"deny by rule posts.update: "editor" in caller.roles || record.owner == caller.user"#))
        #expect(denied.text.contains(#"record.owner == caller.user → "u2" == "u1" → false"#), "\(denied.text)")

        let allowed = try RulesCommand.Check.parse([
            "posts", "update", "--caller", #"{"user": "u1", "roles": ["editor"]}"#, "--record", #"{"owner": "u2"}"#,
        ]).report(Self.stored)
        #expect(allowed.allowed)
        #expect(allowed.text.hasPrefix("allow"))

        // `*` and the defaults apply where the type has no rule.
        let star = try RulesCommand.Check.parse(["notes", "create"]).report(Self.stored)
        #expect(star.allowed && star.text.hasPrefix("allow by rule *.create: true"))
        let fallback = try RulesCommand.Check.parse(["notes", "delete", "--caller", #"{"user": "u1"}"#]).report(Self.stored)
        #expect(!fallback.allowed)
        #expect(fallback.text.hasPrefix("deny by the default delete rule: record.owner != null"))
        let body = try RulesCommand.Check.parse([
            "notes", "read", "--record", #"{"private": true, "owner": "u1"}"#, "--body", #"{"title": "x"}"#,
        ]).report([])
        #expect(!body.allowed)
    }

    @Test("check refuses a caller or record that is not a JSON object, and an unknown operation")
    func checkRefuses() throws {
        #expect(throws: (any Error).self) { try RulesCommand.Check.parse(["posts", "read", "--caller", "[1]"]).report([]) }
        #expect(throws: (any Error).self) {
            try RulesCommand.Check.parse(["posts", "read", "--caller", #"{"user": 1}"#]).report([])
        }
        #expect(throws: (any Error).self) { try RulesCommand.Check.parse(["posts", "write"]).report([]) }
    }

    @Test("set validates the expression before it touches the database")
    func setValidates() throws {
        #expect(throws: (any Error).self) { try RulesCommand.Set.parse(["posts", "read", "record.owner =="]) }
        #expect(throws: (any Error).self) { try RulesCommand.Set.parse(["posts", "write", "true"]) }
        #expect(throws: (any Error).self) { try RulesCommand.Set.parse(["posts", "list", "record.a == record.b"]) }
        _ = try RulesCommand.Set.parse(["*", "create", "caller.signed_in"])
        #expect(throws: (any Error).self) { try RolesCommand.Add.parse(["ada", "has space"]) }
    }

    @Test("@files: rules of files are set, checked and shown apart from record types; * does not reach them")
    func files() throws {
        let stored = Self.stored + [StoredRule(type: "@files", operation: "read", expression: "caller.signed_in", updatedAt: 0)]
        let anonymous = try RulesCommand.Check.parse(["@files", "read", "--record", #"{"name": "a.txt"}"#]).report(stored)
        #expect(!anonymous.allowed)
        #expect(anonymous.text.hasPrefix("deny by rule @files.read: caller.signed_in"))
        // `*.create` is `true` above, but files have their own default.
        let create = try RulesCommand.Check.parse(["@files", "create", "--record", #"{"name": "a.txt"}"#]).report(stored)
        #expect(!create.allowed)
        #expect(create.text.hasPrefix("deny by the default create rule: caller.user != null"))
        let owner = try RulesCommand.Check.parse([
            "@files", "delete", "--caller", #"{"user": "u1"}"#, "--record", #"{"owner": "u1"}"#,
        ]).report(stored)
        #expect(owner.allowed)
        let typed = try RulesCommand.Check.parse([
            "@files", "create", "--caller", #"{"user": "u1"}"#, "--body", #"{"content_type": "image/png"}"#,
        ]).report(
            stored + [
                StoredRule(
                    type: "@files", operation: "create", expression: #"request.content_type == "text/plain""#, updatedAt: 0)
            ])
        #expect(!typed.allowed)
        #expect(throws: (any Error).self) { try RulesCommand.Check.parse(["@files", "list"]).report(stored) }
        #expect(throws: (any Error).self) { try RulesCommand.Set.parse(["@files", "subscribe", "true"]) }
        #expect(throws: (any Error).self) { try RulesCommand.Set.parse(["@files", "read", "record.owner == caller.user"]) }
        _ = try RulesCommand.Set.parse(["@files", "update", "file.owner == caller.user || \"editor\" in caller.roles"])
        let shown = RulesCommand.Show.text(stored)
        #expect(shown.contains("@files.read: caller.signed_in\n"))
        #expect(shown.contains("File defaults (where @files has no rule):\n  read: true\n"))
    }
}
