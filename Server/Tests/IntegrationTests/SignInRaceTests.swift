import Foundation
import Outpost
import OutpostServer
import OutpostServerTesting
import OutpostTestSupport
import Testing

/// First sign-ins that race, and sign-up failures that are not about the username.
@Suite("Sign-in races and sign-up errors", .closesWhatItOpens)
struct SignInRaceTests {
    @Test("eight concurrent first sign-ins of one provider identity create one user")
    func concurrentFirstSignIns() async throws {
        try await withLiveServer { server, client in
            let storage = try await server.openStorage()
            let (app, _) = try await storage.registerClient(
                name: "Race", redirectURIs: [], grants: ["refresh_token"], scopes: ["records", "profile"], confidential: false)
            try await storage.close()
            let signature = TestProvider.signature(user: "zed", secret: LiveServer.providerSecret)
            let login = Request.post(
                "/auth/login",
                json: [
                    "provider": "outpost.test", "client_id": .string(app.id),
                    "auth_data": ["user": "zed", "signature": .string(signature)],
                ])
            let tokens = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        let reply = try await client.send(login, decoding: JSONValue.self)
                        return try #require(reply["access_token"]?.stringValue)
                    }
                }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            var users: Set<String> = []
            for token in tokens {
                var request = Request.get("/me")
                request.headers[.authorization] = "Bearer \(token)"
                let me = try await client.send(request, decoding: JSONValue.self)
                users.insert(me["id"]?.stringValue ?? "")
                #expect(me["username"] == "zed")
            }
            #expect(users.count == 1)
            let check = try await server.openStorage()
            #expect(try await check.user(username: "zed-2") == nil, "a second user was made for the same identity")
            try await check.close()
        }
    }

    @Test(
        "sign-up while PostgreSQL holds the users table answers 503 storage_busy, not username_taken",
        .enabled(if: ScratchDatabase.postgresBase != nil || ScratchDatabase.postgresRequired))
    func signUpOnBusyPostgres() async throws {
        let scratch = try await ScratchDatabase.make(.postgres)
        do {
            let server = try await LiveServer.start { configuration in
                configuration.storageBusyTimeout = .milliseconds(300)
                let logger = configuration.logger
                configuration.storageFactory = { [logger] in
                    try await scratch.location.open(busyTimeout: .milliseconds(300), logger: logger)
                }
            }
            let client = OutpostClient(configuration: .init(baseURL: server.baseURL, retry: .none))
            do {
                let signUp = Request.post("/users", json: ["username": "locked", "password": "long enough"])
                try await scratch.withTableLocked("users") {
                    let refused = try await #require(throws: OutpostError.self) { _ = try await client.send(signUp) }
                    #expect(refused.status == 503)
                    #expect(refused.serverCode == "storage_busy")
                }
                let created = try await client.send(signUp)
                #expect(created.status == 201)
                let taken = try await #require(throws: OutpostError.self) { _ = try await client.send(signUp) }
                #expect(taken.status == 409)
                #expect(taken.serverCode == "username_taken")
                try await client.shutdown()
                await server.stop()
            } catch {
                try? await client.shutdown()
                await server.stop()
                throw error
            }
        } catch {
            await scratch.remove()
            throw error
        }
        await scratch.remove()
    }
}
