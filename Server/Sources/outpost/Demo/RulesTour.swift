import Foundation
import Outpost
import OutpostServer

/// Access rules at work: a diary whose entries only their owner reads or lists, and a guestbook
/// anyone signs without signing in, as long as the entry has a message (`DemoCommand.demoRules`).
enum RulesTour {
    static func run(baseURL: URL, log: TourLog) async throws {
        log.section("Access rules: a diary only its owner reads, a guestbook anyone signs")
        for (type, rules) in DemoCommand.demoRules.sorted(by: { $0.key < $1.key }) where type != "*" {
            for (operation, expression) in rules.sorted(by: { $0.key < $1.key }) {
                log.detail("rule \(type).\(operation): \(expression)")
            }
        }
        let plain = OutpostClient(configuration: .init(baseURL: baseURL))
        defer { Task { try? await plain.shutdown() } }
        _ = try await plain.send(.post("/users", json: ["username": "rosalind", "password": "demo-password-2"]))
        let grace = AuthTour.authenticator(baseURL: baseURL, client: plain, clientID: OutpostServer.cliPasswordClientID)
        _ = try await grace.signIn(username: "grace", password: "demo-password-1")
        let rosalind = AuthTour.authenticator(baseURL: baseURL, client: plain, clientID: OutpostServer.cliPasswordClientID)
        _ = try await rosalind.signIn(username: "rosalind", password: "demo-password-2")
        let asGrace = OutpostClient(configuration: .init(baseURL: baseURL), middlewares: [AuthMiddleware(authenticator: grace)])
        let asRosalind = OutpostClient(
            configuration: .init(baseURL: baseURL), middlewares: [AuthMiddleware(authenticator: rosalind)])
        defer {
            Task {
                try? await asGrace.shutdown()
                try? await asRosalind.shutdown()
            }
        }

        let entry = try await asGrace.send(.post("/records/diary", json: ["text": "Dear diary, the tests pass."])).json()
        let path = "/records/diary/\(entry["id"]?.stringValue ?? "")"
        log.step("grace writes \(path)")
        log.detail("grace GET → \(await outcome { try await asGrace.send(.get(path)) })")
        log.detail("rosalind GET → \(await outcome { try await asRosalind.send(.get(path)) }) (hidden: as if it did not exist)")
        log.detail("anonymous GET → \(await outcome { try await plain.send(.get(path)) })")
        for (who, client) in [("grace", asGrace), ("rosalind", asRosalind)] {
            let list = try await client.send(.get("/records/diary")).json()
            log.detail("\(who) lists the diary → \(list["results"]?.arrayValue?.count ?? 0) entries")
        }

        let signed = try await plain.send(.post("/records/guestbook", json: ["message": "Lovely demo!", "name": "a visitor"]))
        log.step("Anyone signs the guestbook without signing in → \(signed.status)")
        log.step(
            "An entry without a message → "
                + (await outcome { try await plain.send(.post("/records/guestbook", json: ["name": "a visitor"])) }))
        let id = try signed.json()["id"]?.stringValue ?? ""
        log.step(
            "Nobody changes a signature, signed in or not → "
                + (await outcome {
                    try await asGrace.send(
                        Request(method: .put, path: "/records/guestbook/\(id)", body: .json(["message": "changed"])))
                }))

        let rules = AccessRules(
            DemoCommand.demoRules.flatMap { type, operations in
                operations.map { StoredRule(type: type, operation: $0.key, expression: $0.value, updatedAt: 0) }
            })
        let rule = rules.rule(for: "diary", .read)
        let why = rule.condition.explain(
            in: AccessRules.environment(
                caller: RuleCaller(signedIn: true, user: "rosalind"), record: ["owner": "grace", "text": "…"]))
        log.step("Why rosalind may not read it (outpost rules check diary read --caller … --record …):")
        log.detail(why.description)
    }

    /// `200`, or the refusal's status, code and the rule it names.
    static func outcome(_ send: () async throws -> ClientResponse) async -> String {
        do {
            return "\(try await send().status)"
        } catch let error as OutpostError {
            let rule = error.details?["rule"]?.stringValue.map { ", rule \($0)" } ?? ""
            return "\(error.status.map(String.init) ?? "-") \(error.serverCode ?? error.code.rawValue)\(rule)"
        } catch {
            return "\(error)"
        }
    }
}
