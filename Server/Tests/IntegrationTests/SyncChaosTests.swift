import Foundation
import Logging
import Outpost
import OutpostServer
import OutpostServerTesting
import OutpostSync
import OutpostTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Three synced stores against one server under chaos: random local creates, patches and
/// deletes of the same and different records, pushes and pulls, links that go offline or lose
/// replies, server restarts, writes from another device, and `outpost sync push` killed with
/// SIGKILL mid-sync. At the end, once every link is up, every store equals the server, and each
/// create landed at most once (exactly once unless someone deleted it).
///
/// `OUTPOST_TEST_SEED` replays a run; `OUTPOST_CHAOS_OPERATIONS` sets its length (default 300).
@Suite("Synced stores converge under chaos", .closesWhatItOpens, .timeLimit(.minutes(5)))
struct SyncChaosTests {
    /// What a client's network does to its requests.
    final class Link: Sendable {
        enum Mode: Int { case online, offline, losingReplies }
        private let mode = Atomic(Mode.online.rawValue)

        func set(_ new: Mode) { mode.store(new.rawValue, ordering: .relaxed) }

        var middleware: ClosureMiddleware {
            ClosureMiddleware { request, body, _, next in
                switch Mode(rawValue: self.mode.load(ordering: .relaxed)) ?? .online {
                case .online: return try await next(request, body)
                case .offline: throw LostReply()
                case .losingReplies:
                    _ = try await next(request, body)
                    throw LostReply()
                }
            }
        }
    }

    /// The server, stopped and started again on its address and database (a SQLite file, or a
    /// scratch PostgreSQL database when `OUTPOST_TEST_LIVE_BACKEND=postgres`).
    final class Server {
        let configuration: ServerConfiguration
        let scratch: ScratchDatabase?
        private(set) var running: RunningServer?
        private(set) var port = 0

        init(folder: URL) async throws {
            var logger = Logger(label: "outpost.test.chaos")
            logger.logLevel = .critical
            var configuration = ServerConfiguration(
                host: "127.0.0.1", port: 0, databasePath: folder.appending(path: "chaos.sqlite").path, logger: logger)
            configuration.accessRules = try LiveServer.permissiveRules()
            let scratch = LiveServer.backend == .postgres ? try await ScratchDatabase.make(.postgres) : nil
            if let scratch {
                configuration.storageFactory = { [logger] in try await scratch.location.open(logger: logger) }
            }
            self.configuration = configuration
            self.scratch = scratch
        }

        var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

        func start() async throws {
            var configuration = self.configuration
            configuration.port = port
            let running = try await OutpostServer(configuration: configuration, plugins: []).start()
            port = running.port
            self.running = running
        }

        func stop() async {
            await running?.stop()
            running = nil
        }
    }

    struct Client {
        let link: Link
        let client: OutpostClient
        let store: SyncedStore
        let folder: URL
    }

    /// Local changes win field by field over the server's; the rest is the server's.
    static let merge = ConflictPolicy.merge { base, local, server in
        var result = server
        for (key, value) in local where base[key] != value { result[key] = value }
        for key in base.keys where local[key] == nil { result.removeValue(forKey: key) }
        return result
    }

    static let operations =
        ProcessInfo.processInfo.environment["OUTPOST_CHAOS_OPERATIONS"].flatMap { Int($0) } ?? 300

    /// Runs `outpost sync push` on `folder` and kills it with SIGKILL after `delay`, or lets it end.
    static func killedPush(_ binary: URL, folder: URL, server: URL, after delay: Duration) async throws {
        let process = Process()
        process.executableURL = binary
        process.arguments = ["sync", "push", "--store", folder.path, "--server", server.absoluteString]
        let home = folder.deletingLastPathComponent()
        process.environment = ["HOME": home.path, "XDG_CONFIG_HOME": home.path, "PATH": "/usr/bin:/bin"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let exit = ProcessExit(watching: process)
        try process.run()
        // The moment of the kill is the chaos, not a synchronisation: any moment must be safe.
        try await Task.sleep(for: delay)
        if !exit.hasExited { kill(process.processIdentifier, SIGKILL) }
        await exit.wait()
    }

    /// Every record on the server, by id, through the list's pages.
    static func serverRecords(_ client: OutpostClient) async throws -> [String: [String: JSONValue]] {
        var records: [String: [String: JSONValue]] = [:]
        var cursor: String?
        repeat {
            var query = [URLQueryItem(name: "limit", value: "100")]
            if let cursor { query.append(URLQueryItem(name: "cursor", value: cursor)) }
            let page = try await client.send(.get("/records/chaos", query: query)).json()
            for record in page["results"]?.arrayValue ?? [] {
                if let fields = record.objectValue, let id = fields["id"]?.stringValue { records[id] = fields }
            }
            cursor = page["next_cursor"]?.stringValue
        } while cursor != nil
        return records
    }

    @Test("three stores, offline periods, lost replies, restarts and a killed client: every store ends equal to the server")
    func converges() async throws {
        // `OUTPOST_TEST_SEED` replays a failing run.
        let seed =
            ProcessInfo.processInfo.environment["OUTPOST_TEST_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 0...UInt64.max)
        var random = SeededGenerator(state: seed)
        await ResourcePlaces.enter()
        let folder = FileManager.default.temporaryDirectory.appending(path: "outpost-chaos-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try await Server(folder: folder)
        try await server.start()
        let elsewhere = OutpostClient(configuration: .init(baseURL: server.baseURL))
        var clients: [Client] = []
        do {
            for (index, policy) in [ConflictPolicy.serverWins, .clientWins, Self.merge].enumerated() {
                let link = Link()
                let client = OutpostClient(
                    configuration: .init(baseURL: server.baseURL, retry: .none), middlewares: [link.middleware])
                let storeFolder = folder.appending(path: "client-\(index)/store")
                let store = try SyncedStore(folder: storeFolder, client: client, policies: ["chaos": policy])
                clients.append(Client(link: link, client: client, store: store, folder: storeFolder))
            }
            var created: [String] = []
            var deleted: Set<String> = []
            var counts: [String: Int] = [:]
            for step in 0..<Self.operations {
                let index = Int.random(in: 0..<clients.count, using: &random)
                let actor = clients[index]
                let local = try await actor.store.query("chaos", sort: "op")
                let roll = Int.random(in: 0..<100, using: &random)
                let name: String
                switch roll {
                case 0..<22:
                    name = "create"
                    let op = "c\(index)-\(step)"
                    created.append(op)
                    try await actor.store.create("chaos", fields: ["op": .string(op), "n": .int(step)])
                case 22..<46 where !local.isEmpty:
                    name = "patch"
                    let record = local.randomElement(using: &random)!
                    try await actor.store.patch(
                        "chaos", id: record.id, fields: ["n": .int(step), "by\(index)": .int(step)])
                case 46..<50 where !local.isEmpty:
                    name = "delete"
                    let record = local.randomElement(using: &random)!
                    if let op = record.fields["op"]?.stringValue { deleted.insert(op) }
                    try await actor.store.delete("chaos", id: record.id)
                case 50..<66:
                    name = "push"
                    try? await actor.store.push()
                case 66..<80:
                    name = "pull"
                    try? await actor.store.pull("chaos")
                case 80..<88:
                    name = "link"
                    actor.link.set(Link.Mode(rawValue: Int.random(in: 0..<3, using: &random)) ?? .online)
                case 88..<92:
                    name = "restart"
                    await server.stop()
                    try await server.start()
                case 92..<95:
                    name = "kill"
                    if let binary = CrashRecoveryTests.binary {
                        let delay = Duration.milliseconds(Int.random(in: 0...60, using: &random))
                        try await Self.killedPush(binary, folder: actor.folder, server: server.baseURL, after: delay)
                    }
                default:
                    name = "elsewhere"
                    let records = try? await Self.serverRecords(elsewhere)
                    if let id = records?.keys.sorted().randomElement(using: &random) {
                        _ = try? await elsewhere.send(
                            Request(
                                method: .patch, path: "/records/chaos/\(id)",
                                body: .json(["n": .int(step), "elsewhere": true])))
                    }
                }
                counts[name, default: 0] += 1
            }

            // Everyone back online; pushes, then pulls, until nothing is left to send.
            for client in clients { client.link.set(.online) }
            for _ in 0..<3 {
                for client in clients { try await client.store.push() }
                for client in clients { try await client.store.pull("chaos") }
            }
            let remote = try await Self.serverRecords(elsewhere)
            let context = "seed \(seed), operations \(counts.sorted { $0.key < $1.key })"
            for (index, client) in clients.enumerated() {
                #expect(try await client.store.status().isEmpty, "client \(index): \(context)")
                let local = try await client.store.query("chaos")
                #expect(local.allSatisfy { $0.state == .confirmed }, "client \(index): \(context)")
                let byID = Dictionary(uniqueKeysWithValues: local.map { ($0.id, $0.fields) })
                #expect(byID == remote, "client \(index) differs from the server: \(context)")
            }
            var landed: [String: Int] = [:]
            for record in remote.values { landed[record["op"]?.stringValue ?? "", default: 0] += 1 }
            for op in created {
                let copies = landed[op] ?? 0
                if deleted.contains(op) {
                    #expect(copies <= 1, "\(op) landed \(copies) times: \(context)")
                } else {
                    #expect(copies == 1, "\(op) landed \(copies) times: \(context)")
                }
            }
            #expect(counts["create", default: 0] > 20 && counts["restart", default: 0] > 0, "\(context)")
        } catch {
            Issue.record("seed \(seed): \(error)")
        }
        for client in clients { try? await client.client.shutdown() }
        try? await elsewhere.shutdown()
        await server.stop()
        await server.scratch?.remove()
    }
}
