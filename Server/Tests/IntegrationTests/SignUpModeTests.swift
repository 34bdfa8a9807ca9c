import Foundation
import Outpost
import OutpostServer
import Testing

/// `outpost serve --signup open|invite|closed` on a live server, with invite codes in storage.
@Suite("Sign-up modes", .closesWhatItOpens, .timeLimit(.minutes(2)))
struct SignUpModeTests {
    static func signUp(_ fixture: AuthFixture, _ username: String, invite: String? = nil) async throws -> ClientResponse {
        var body: [String: JSONValue] = ["username": .string(username), "password": "long enough password"]
        if let invite { body["invite"] = .string(invite) }
        return try await PrivateRecordsTests.send(fixture.server.baseURL, .post, "/users", body: .object(body))
    }

    static func code(_ response: ClientResponse) throws -> String? {
        try response.json()["error"]?["code"]?.stringValue
    }

    @Test("open: anyone signs up, and an invite field is ignored once it has its declared shape")
    func open() async throws {
        try await withAuthFixture { fixture in
            let plain = try await Self.signUp(fixture, "newcomer")
            #expect(plain.status == 201)
            let withCode = try await Self.signUp(fixture, "second", invite: "inv_made_up")
            #expect(withCode.status == 201)
            // Still the shape the OpenAPI document declares: a string of at most 128 characters.
            let long = try await Self.signUp(fixture, "third", invite: String(repeating: "x", count: 129))
            #expect(long.status == 400)
        }
    }

    @Test("closed: every sign-up is 403 signup_closed; operator-added users still sign in")
    func closed() async throws {
        try await withAuthFixture(configure: { $0.signUp = .closed }) { fixture in
            let refused = try await Self.signUp(fixture, "newcomer")
            #expect(refused.status == 403)
            #expect(try Self.code(refused) == "signup_closed")
            #expect(try await fixture.withStorage { try await $0.user(username: "newcomer") } == nil)
            #expect(try await fixture.passwordTokens("ada")["access_token"] != nil)
        }
    }

    @Test("invite: a code is needed, works once, expires, and survives a sign-up that failed")
    func invite() async throws {
        try await withAuthFixture(configure: { $0.signUp = .invite }) { fixture in
            let missing = try await Self.signUp(fixture, "newcomer")
            #expect(missing.status == 403)
            #expect(try Self.code(missing) == "invite_required")
            let made = try await Self.signUp(fixture, "newcomer", invite: "inv_made_up")
            #expect(try Self.code(made) == "invite_invalid")
            let long = try await Self.signUp(fixture, "newcomer", invite: String(repeating: "x", count: 129))
            #expect(long.status == 400)
            #expect(try Self.code(long) == "invalid_invite")

            let (code, expires) = try await fixture.withStorage { try await Invites.issue(in: $0, lifetime: .seconds(600)) }
            #expect(code.hasPrefix(Invites.prefix))
            #expect(expires > Date())
            // A sign-up that fails for another reason (the username is taken) keeps the code.
            let taken = try await Self.signUp(fixture, "ada", invite: code)
            #expect(taken.status == 409)
            let created = try await Self.signUp(fixture, "newcomer", invite: code)
            #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
            let again = try await Self.signUp(fixture, "another", invite: code)
            #expect(again.status == 403)
            #expect(try Self.code(again) == "invite_invalid")

            let expired = try await fixture.withStorage { try await Invites.issue(in: $0, lifetime: .zero) }
            #expect(try Self.code(try await Self.signUp(fixture, "late", invite: expired.code)) == "invite_invalid")
        }
    }

    @Test("invite: one code, many concurrent sign-ups: exactly one succeeds")
    func inviteRace() async throws {
        try await withAuthFixture(configure: { $0.signUp = .invite }) { fixture in
            let (code, _) = try await fixture.withStorage { try await Invites.issue(in: $0, lifetime: .seconds(600)) }
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<6 { group.addTask { try await Self.signUp(fixture, "racer\(index)", invite: code).status } }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 201 }.count == 1, "\(statuses)")
            #expect(statuses.filter { $0 == 403 }.count == 5, "\(statuses)")
        }
    }
}
