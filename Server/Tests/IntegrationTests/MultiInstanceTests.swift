import Foundation
import HTTPTypes
import Outpost
import OutpostServer
import OutpostServerTesting
import OutpostTestSupport
import Testing

/// Three `outpost serve` processes on one PostgreSQL database, driven round-robin: nothing that
/// must hold across requests lives in one process.
@Suite("Several instances on one PostgreSQL database", .closesWhatItOpens, .serialized)
struct MultiInstanceTests {
    static let enabled =
        CrashRecoveryTests.binary != nil && (ScratchDatabase.postgresBase != nil || ScratchDatabase.postgresRequired)

    /// Three instances, their clients, a browser for form posts, and a password client and user.
    struct Cluster {
        let scratch: ScratchDatabase
        let children: [CrashRecoveryTests.Child]
        let clients: [OutpostClient]
        let browser = TestBrowser()
        let clientID: String
        static let password = "correct horse battery"

        static func start() async throws -> Cluster {
            let binary = try #require(CrashRecoveryTests.binary)
            let scratch = try await ScratchDatabase.make(.postgres)
            var children: [CrashRecoveryTests.Child] = []
            do {
                // Started together: their migrations race, and must apply once.
                // Every child that started is kept (and stopped below) even when another failed.
                let started = await withTaskGroup(of: Result<CrashRecoveryTests.Child, any Error>.self) { group in
                    for _ in 0..<3 {
                        group.addTask {
                            do { return .success(try await .start(binary, database: scratch.argument)) } catch {
                                return .failure(error)
                            }
                        }
                    }
                    return await group.reduce(into: [Result<CrashRecoveryTests.Child, any Error>]()) { $0.append($1) }
                }
                children = started.compactMap { try? $0.get() }
                for result in started { _ = try result.get() }
                // The admin command through the same seam: a user made with `outpost users add`.
                try await Self.run(binary, ["users", "add", "ada", "--database", scratch.argument], input: password + "\n")
                // The tests write without signing in: rules in the shared database allow it, on every instance.
                try await Self.run(binary, ["rules", "set", "*", "create", "true", "--database", scratch.argument], input: "")
                let storage = try await scratch.open()
                for operation in ["update", "delete"] {
                    try await storage.setRule(
                        type: "*", operation: operation, expression: "record.owner == null || record.owner == caller.user")
                }
                let (client, _) = try await storage.registerClient(
                    name: "Cluster test", redirectURIs: [], grants: ["password", "refresh_token"],
                    scopes: ["records", "profile"],
                    confidential: false)
                try await storage.close()
                // 30 patches of one record queue on its row lock across the instances, one commit at a
                // time: with the whole suite sharing 2 cores, the last waited close to 10 s in CI. The
                // timeout bounds a hang, not the speed of a contended row.
                let clients = children.map {
                    OutpostClient(configuration: .init(baseURL: $0.baseURL, timeout: .seconds(60), retry: .none))
                }
                return Cluster(scratch: scratch, children: children, clients: clients, clientID: client.id)
            } catch {
                for child in children { await child.kill9() }
                await scratch.remove()
                throw error
            }
        }

        static func run(_ binary: URL, _ arguments: [String], input: String) async throws {
            let process = Process()
            process.executableURL = binary
            process.arguments = arguments
            let stdin = Pipe()
            process.standardInput = stdin
            process.standardOutput = FileHandle.nullDevice
            let exit = ProcessExit(watching: process)
            try process.run()
            stdin.fileHandleForWriting.write(Data(input.utf8))
            try stdin.fileHandleForWriting.close()
            #expect(await exit.wait() == ChildExit(status: 0, signalled: false), "outpost \(arguments.first ?? "") failed")
        }

        func url(_ instance: Int, _ path: String) -> String {
            children[instance % 3].baseURL.absoluteString + path
        }

        func token(_ instance: Int, _ fields: [String: String]) async throws -> TestBrowser.Page {
            var fields = fields
            fields["client_id"] = clientID
            return try await browser.postForm(url(instance, "/oauth/token"), fields)
        }

        func stop() async {
            for client in clients { try? await client.shutdown() }
            try? await browser.shutdown()
            // No graceful wait: nothing of theirs is checked after. All are killed before any is awaited:
            // Foundation learns of a child's end when a socket the child holds closes, and a child
            // started at the same time as another may hold the other's too.
            for child in children { _ = kill(child.process.processIdentifier, SIGKILL) }
            for child in children { await child.exit.wait() }
            await scratch.remove()
        }
    }

    func withCluster(_ body: (Cluster) async throws -> Void) async throws {
        let cluster = try await Cluster.start()
        do {
            try await body(cluster)
        } catch {
            await cluster.stop()
            throw error
        }
        await cluster.stop()
    }

    @Test(
        "refresh across instances: concurrent refreshes of one token all get the winner's pair; once it moves on, reuse revokes the family",
        .enabled(if: enabled))
    func refreshSingleFlight() async throws {
        try await withCluster { cluster in
            let signIn = try await cluster.token(
                0, ["grant_type": "password", "username": "ada", "password": Cluster.password])
            #expect(signIn.status == 200, "\(signIn.body)")
            let refresh = try #require(signIn.json["refresh_token"] as? String)
            let pages = try await withThrowingTaskGroup(of: TestBrowser.Page.self) { group in
                for instance in 0..<6 {
                    group.addTask {
                        try await cluster.token(instance % 3, ["grant_type": "refresh_token", "refresh_token": refresh])
                    }
                }
                return try await group.reduce(into: [TestBrowser.Page]()) { $0.append($1) }
            }
            // One rotation; the others, on any instance, are inside the reuse grace window.
            #expect(pages.allSatisfy { $0.status == 200 }, "\(pages.map(\.status))")
            let pairs = Set(pages.compactMap { $0.json["refresh_token"] as? String })
            #expect(pairs.count == 1, "one new pair for all")
            let newRefresh = try #require(pairs.first)
            let moved = try await cluster.token(1, ["grant_type": "refresh_token", "refresh_token": newRefresh])
            #expect(moved.status == 200)
            let access = try #require(moved.json["access_token"] as? String)
            // The first token presented after its pair moved on: every token of the sign-in is revoked, on every instance.
            let reused = try await cluster.token(2, ["grant_type": "refresh_token", "refresh_token": refresh])
            #expect(reused.status == 400 && reused.json["error"] as? String == "invalid_grant")
            for instance in 0..<3 {
                let me = try await cluster.browser.get(cluster.url(instance, "/me"), authorization: "Bearer \(access)")
                #expect(me.status == 401)
            }
        }
    }

    @Test("a cursor minted on one instance is followed on another", .enabled(if: enabled))
    func cursorsAcrossInstances() async throws {
        try await withCluster { cluster in
            var ids: [String] = []
            for index in 0..<5 {
                let created = try await cluster.clients[index % 3].send(.post("/records/notes", json: ["n": .int(index)]))
                ids.append(try #require(try created.json()["id"]?.stringValue))
            }
            let first = try await cluster.clients[0].send(.get("/records/notes?limit=2")).json()
            let cursor = try #require(first["next_cursor"]?.stringValue)
            let second = try await cluster.clients[1].send(.get("/records/notes?limit=2&cursor=\(cursor)")).json()
            let next = try #require(second["next_cursor"]?.stringValue)
            let third = try await cluster.clients[2].send(.get("/records/notes?limit=2&cursor=\(next)")).json()
            let pages = [first, second, third].flatMap { page in
                (page["results"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
            }
            #expect(pages == ids)
        }
    }

    @Test("concurrent merge patches of one record through different instances all apply", .enabled(if: enabled))
    func patchesAcrossInstances() async throws {
        try await withCluster { cluster in
            let created = try await cluster.clients[0].send(.post("/records/counters", json: [:])).json()
            let path = "/records/counters/\(created["id"]?.stringValue ?? "")"
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<30 {
                    group.addTask {
                        let answer = try await cluster.clients[index % 3].send(
                            Request(
                                method: .patch, path: path,
                                body: .data(Data("{\"f\(index)\": \(index)}".utf8), contentType: "application/merge-patch+json")))
                        #expect(answer.status == 200)
                    }
                }
                try await group.waitForAll()
            }
            let final = try await cluster.clients[1].send(.get(path))
            let fields = try final.json()
            #expect((0..<30).allSatisfy { fields["f\($0)"] == .int($0) })
            #expect(final.headerFields[.eTag] == "\"v31\"")
        }
    }

    @Test("failed sign-ins are counted across instances", .enabled(if: enabled))
    func rateLimitsShared() async throws {
        try await withCluster { cluster in
            // The default limit is 10 failures per account and address; spread over three instances.
            for attempt in 0..<10 {
                let page = try await cluster.token(
                    attempt, ["grant_type": "password", "username": "ada", "password": "wrong password"])
                #expect(page.status == 400, "attempt \(attempt): \(page.body)")
            }
            for instance in 0..<3 {
                let page = try await cluster.token(
                    instance, ["grant_type": "password", "username": "ada", "password": Cluster.password])
                #expect(page.status == 429 || page.json["error"] as? String == "slow_down", "\(page.status) \(page.body)")
                #expect(page.status != 200)
            }
        }
    }

    @Test("an idempotent POST retried on another instance replays the first answer", .enabled(if: enabled))
    func idempotencyAcrossInstances() async throws {
        try await withCluster { cluster in
            let request = Request.post("/records/orders", json: ["item": "tea"]).idempotencyKey("order-1")
            let first = try await cluster.clients[0].send(request)
            let again = try await cluster.clients[1].send(request)
            let third = try await cluster.clients[2].send(request)
            #expect(first.status == 201 && again.status == 201 && third.status == 201)
            #expect(try first.json()["id"] == (try again.json()["id"]))
            #expect(again.body == first.body && third.body == first.body)
            #expect(again.headerFields[HTTPField.Name("Idempotency-Replayed")!] == "true")
            let total = try await cluster.clients[2].send(.get("/records/orders?page=1&per_page=5")).json()["total"]
            #expect(total == .int(1))
        }
    }
}
