import Foundation
import Outpost
import OutpostServer
import OutpostTestSupport
import Testing

/// The audit log, written by the live server and the `outpost` binary, on SQLite and (with
/// `OUTPOST_TEST_LIVE_BACKEND=postgres`) PostgreSQL, and read back with `outpost audit`.
@Suite("Audit log", .closesWhatItOpens, .timeLimit(.minutes(3)))
struct AuditLogTests {
    static func events(_ server: LiveServer, _ query: AuditQuery = AuditQuery(limit: 10_000)) async throws -> [AuditEvent] {
        let storage = try await server.openStorage()
        do {
            let audit = try #require(storage as? any AuditStorage)
            let events = try await audit.auditEvents(query)
            try await storage.close()
            return events
        } catch {
            try? await storage.close()
            throw error
        }
    }

    static func database(_ server: LiveServer) -> String {
        server.scratch?.argument ?? server.folder.appendingPathComponent("test.sqlite").path
    }

    /// The JSON text of every column of `events`, to look for secrets in.
    static func text(_ events: [AuditEvent]) -> String {
        events.map { event in
            [event.actor ?? "", event.action, event.subject ?? "", event.clientAddress ?? "", event.detailText].joined(
                separator: " ")
        }.joined(separator: "\n")
    }

    @Test(
        "sign-ins (password, browser, provider; success and failure), a device approval and DELETE /me are recorded, without secrets"
    )
    func serverEvents() async throws {
        try await withAuthFixture { fixture in
            var secrets = [AuthFixture.password, fixture.confidentialSecret]
            let ada = try await fixture.passwordTokens("ada")
            secrets += [ada["access_token"] as? String ?? "", ada["refresh_token"] as? String ?? ""]
            let wrong = "wrong-password-\(UUID().uuidString)"
            secrets.append(wrong)
            for username in ["ada", "nobody-\(UUID().uuidString.prefix(8))"] {
                let refused = try await fixture.token([
                    "grant_type": "password", "username": username, "password": wrong, "client_id": fixture.publicClient.id,
                ])
                #expect(refused.status == 400)
            }

            let client = OutpostClient(configuration: .init(baseURL: fixture.server.baseURL))
            let signature = TestProvider.signature(user: "carol", secret: LiveServer.providerSecret)
            secrets.append(signature)
            let carol = try await client.send(
                .post(
                    "/auth/login",
                    json: [
                        "provider": "outpost.test", "client_id": .string(fixture.publicClient.id),
                        "auth_data": ["user": "carol", "signature": .string(signature)],
                    ]), decoding: JSONValue.self)
            secrets.append(carol["access_token"]?.stringValue ?? "")
            let badSignature = String(repeating: "0f", count: 16)
            secrets.append(badSignature)
            await #expect(throws: OutpostError.self) {
                _ = try await client.send(
                    .post(
                        "/auth/login",
                        json: [
                            "provider": "outpost.test", "client_id": .string(fixture.publicClient.id),
                            "auth_data": ["user": "carol", "signature": .string(badSignature)],
                        ]))
            }

            // The device flow: a browser sign-in, then the approval.
            let start = try await fixture.browser.postForm(
                fixture.base + "/oauth/device_authorization", ["client_id": fixture.publicClient.id, "scope": "records"])
            let userCode = try #require(start.json["user_code"] as? String)
            secrets += [userCode, start.json["device_code"] as? String ?? ""]
            let page = try await fixture.browser.get(start.json["verification_uri_complete"] as? String ?? "")
            var fields = page.hiddenFields
            fields["user_code"] = userCode
            fields["username"] = "bob"
            fields["password"] = AuthFixture.password
            fields["decision"] = "continue"
            let confirm = try await fixture.browser.postForm(fixture.base + "/device", fields)
            var decision = confirm.hiddenFields
            decision["decision"] = "allow"
            #expect(try await fixture.browser.postForm(fixture.base + "/device", decision).status == 200)

            let bob = try await fixture.passwordTokens("bob")
            let bobAccess = try #require(bob["access_token"] as? String)
            secrets.append(bobAccess)
            #expect(try await AccountDeletionTests.send(client, .delete("/me"), token: bobAccess).status == 204)
            try await client.shutdown()

            let storage = try await fixture.server.openStorage()
            let adaID = try #require(try await storage.user(username: "ada")?.id)
            let carolID = try await storage.user(username: "carol")?.id
            try await storage.close()
            let events = try await Self.events(fixture.server)
            func has(_ action: String, _ method: String? = nil, where check: (AuditEvent) -> Bool = { _ in true }) -> Bool {
                events.contains { $0.action == action && (method == nil || $0.detail["method"] == method) && check($0) }
            }
            #expect(
                has(AuditAction.signInSucceeded, "password") {
                    $0.actor == adaID && $0.subject == adaID && $0.clientAddress == "127.0.0.1"
                        && $0.detail["client_id"] == fixture.publicClient.id
                })
            #expect(has(AuditAction.signInFailed, "password") { $0.subject == adaID && $0.actor == nil })
            #expect(has(AuditAction.signInFailed, "password") { $0.subject == nil }, "an unknown username is not kept")
            #expect(
                has(AuditAction.signInSucceeded, "provider") { $0.actor == carolID && $0.detail["provider"] == "outpost.test" })
            #expect(has(AuditAction.signInFailed, "provider") { $0.clientAddress == "127.0.0.1" })
            #expect(has(AuditAction.signInSucceeded, "browser"))
            #expect(has(AuditAction.deviceApproved) { $0.subject == fixture.publicClient.id })
            #expect(
                has(AuditAction.userDeleted) {
                    $0.actor == $0.subject && $0.detail["username"] == "bob" && $0.clientAddress == "127.0.0.1"
                })
            #expect(events.map(\.id) == events.map(\.id).sorted(), "oldest first")
            let text = Self.text(events)
            for secret in secrets where !secret.isEmpty {
                #expect(!text.contains(secret), "a secret in the audit log")
            }
            #expect(!text.contains("nobody-"), "an unknown username typed at sign-in")
        }
    }

    @Test("an upstream ID token exchanged (and one refused) is a token_exchange sign-in event without the token")
    func tokenExchangeEvents() async throws {
        try await withIssuer { issuer in
            try await withAuthFixture { fixture in
                let client = try await fixture.federation(issuer)
                let token = try await issuer.idToken(nonce: "nonce-1")
                let exchanged = try await fixture.exchange(token, client: client)
                #expect(exchanged.status == 200, "\(exchanged.body)")
                let replayed = try await fixture.exchange(token, client: client)
                #expect(replayed.status == 400)
                let events = try await Self.events(fixture.server, AuditQuery(actionPrefix: "sign_in.", limit: 100))
                let exchanges = events.filter { $0.detail["method"] == "token_exchange" }
                #expect(
                    exchanges.map(\.action) == [AuditAction.signInSucceeded, AuditAction.signInFailed],
                    "\(exchanges)")
                #expect(exchanges.allSatisfy { $0.detail["provider"] == "example" && $0.clientAddress == "127.0.0.1" })
                #expect(exchanges.first?.actor != nil && exchanges.first?.actor == exchanges.first?.subject)
                let text = Self.text(events)
                for secret in [token, exchanged.json["access_token"] as? String ?? "-"] { #expect(!text.contains(secret)) }
            }
        }
    }

    @Test("a failed sign-in storm from one address writes at most the address's limit of failures and one rate-limit event")
    func failedSignInStorm() async throws {
        try await withAuthFixture(configure: {
            $0.auth.attemptsPerAddress = 5
            $0.auth.attemptsPerAccount = 100
        }) { fixture in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<4 {
                    group.addTask {
                        for n in 0..<15 {
                            _ = try await fixture.token([
                                "grant_type": "password", "username": "guess-\(lane)-\(n)", "password": "not-it-\(n)",
                                "client_id": fixture.publicClient.id,
                            ])
                        }
                    }
                }
                try await group.waitForAll()
            }
            let events = try await Self.events(fixture.server, AuditQuery(actionPrefix: "sign_in.", limit: 1000))
            let failed = events.filter { $0.action == AuditAction.signInFailed }.count
            let limited = events.filter { $0.action == AuditAction.signInRateLimited }.count
            #expect(failed <= 5, "\(failed) failures recorded for 60 attempts")
            #expect(failed >= 1)
            #expect(limited == 1, "\(limited) rate-limit events")
            #expect(events.allSatisfy { $0.clientAddress == "127.0.0.1" })
        }
    }

    @Test(
        "the CLI records client, role, rule and user changes as the operator; outpost audit prints them as JSON lines",
        .enabled(if: CrashRecoveryTests.binary != nil))
    func operatorEvents() async throws {
        try await withAuthFixture { fixture in
            let database = Self.database(fixture.server)
            func outpost(_ arguments: [String]) async throws -> String {
                let run = try await BackupTests.outpost(arguments + ["--database", database])
                #expect(run.status == 0, "outpost \(arguments.joined(separator: " ")): \(run.output)")
                return run.output
            }
            _ = try await fixture.passwordTokens("ada")
            let added = try await outpost(["clients", "add", "Audit app", "--confidential", "--grant", "client_credentials"])
            let clientID = try #require(
                added.split(separator: "\n").first { $0.hasPrefix("client_id: ") }?.dropFirst("client_id: ".count))
            let secretStart = try #require(added.range(of: "client_secret: ")?.upperBound)
            let clientSecret = String(added[secretStart...].prefix { !$0.isWhitespace })
            #expect(clientSecret.hasPrefix("ocs_") && clientSecret.count > 20, "\(added)")
            _ = try await outpost(["clients", "remove", String(clientID)])
            _ = try await outpost(["users", "role", "add", "ada", "editor"])
            _ = try await outpost(["users", "role", "remove", "ada", "editor"])
            _ = try await outpost(["rules", "set", "notes", "read", "record.owner == caller.user"])
            _ = try await outpost(["rules", "clear", "notes", "read"])
            _ = try await outpost(["users", "delete", "ada", "--yes"])

            let lines = try await outpost(["audit"]).split(separator: "\n")
            let objects = try lines.map { line in
                try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            }
            let keys: Set<String> = ["id", "time", "actor", "action", "subject", "client_address", "detail"]
            #expect(objects.allSatisfy { Set($0.keys) == keys }, "the same keys on every line")
            let ids = objects.compactMap { $0["id"] as? Int }
            #expect(ids == ids.sorted() && ids.count == objects.count)
            func operatorDid(_ action: String, subject: String? = nil) -> Bool {
                objects.contains {
                    $0["action"] as? String == action && $0["actor"] as? String == "operator"
                        && (subject == nil || $0["subject"] as? String == subject) && $0["client_address"] is NSNull
                }
            }
            #expect(operatorDid(AuditAction.clientAdded, subject: String(clientID)))
            #expect(operatorDid(AuditAction.clientRemoved, subject: String(clientID)))
            #expect(objects.filter { $0["action"] as? String == AuditAction.userRolesChanged }.count == 2)
            #expect(objects.filter { $0["action"] as? String == AuditAction.ruleChanged }.count == 2)
            #expect(operatorDid(AuditAction.userDeleted))
            #expect(objects.contains { $0["action"] as? String == AuditAction.signInSucceeded })

            let signIns = try await outpost(["audit", "--action", "sign_in.", "--limit", "1"]).split(separator: "\n")
            #expect(signIns.count == 1 && signIns[0].contains("\"action\":\"sign_in.succeeded\""))
            let later = try await outpost(["audit", "--since", "2999-01-01"])
            #expect(later.isEmpty)
            for secret in [AuthFixture.password, clientSecret] {
                #expect(!lines.joined().contains(secret))
            }

            let pruned = try await outpost(["audit", "prune", "--before", "2999-01-01"])
            #expect(pruned.contains("removed \(objects.count) audit events"), "\(pruned)")
            #expect(try await Self.events(fixture.server).isEmpty)
        }
    }
}
