import Foundation
import Outpost
import OutpostServer
import OutpostServerTesting
import OutpostTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Kills `outpost serve` with SIGKILL under a load of keyed POSTs from the SDK, starts it again on
/// the same database, and checks that every acknowledged write is there exactly once.
@Suite("Crash recovery of idempotent writes", .closesWhatItOpens)
struct CrashRecoveryTests {
    /// The `outpost` executable built beside this test bundle (`swift build --build-tests` builds it).
    static let binary: URL? = {
        let bundle = URL(fileURLWithPath: CommandLine.arguments.first ?? "").standardizedFileURL
        let candidate = bundle.deletingLastPathComponent().appendingPathComponent("outpost")
        return FileManager.default.isExecutableFile(atPath: candidate.path) ? candidate : nil
    }()

    /// One `outpost serve` child process.
    struct Child {
        let process: Process
        let exit: ProcessExit
        let baseURL: URL

        static func start(_ binary: URL, database: String, rules: String? = nil) async throws -> Child {
            let process = Process()
            process.executableURL = binary
            process.arguments =
                ["serve", "--port", "0", "--database", database, "--log-level", "error"] + (rules.map { ["--rules", $0] } ?? [])
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            let exit = ProcessExit(watching: process)
            try process.run()
            let chunks = pipe.fileHandleForReading.chunksOffPool()
            var output = ""
            for await chunk in chunks {
                output += String(decoding: chunk, as: UTF8.self)
                if let range = output.range(of: #"http://[0-9.]+:[0-9]+"#, options: .regularExpression),
                    let url = URL(string: String(output[range]))
                {
                    return Child(process: process, exit: exit, baseURL: url)
                }
            }
            _ = kill(process.processIdentifier, SIGKILL)  // SIGTERM may be blocked in a child spawned from a test thread
            await exit.wait()
            throw CrashTestFailure(message: "outpost serve stopped before it listened: \(output)")
        }

        /// Kills the child with SIGKILL and waits for its end (without holding a thread).
        func kill9() async {
            _ = kill(process.processIdentifier, SIGKILL)
            await exit.wait()
        }
    }

    struct CrashTestFailure: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    /// What the load saw: the id each acknowledged key got, and the keys sent without an answer.
    final class Ledger: Sendable {
        let state = Mutex<(acknowledged: [Int: String], unanswered: Set<Int>)>(([:], []))
        let enough: AsyncStream<Void>
        let enoughSink: AsyncStream<Void>.Continuation
        let threshold: Int

        init(threshold: Int) {
            self.threshold = threshold
            (enough, enoughSink) = AsyncStream.makeStream(of: Void.self)
        }

        func acknowledge(_ n: Int, id: String) {
            let count = state.withLock {
                $0.acknowledged[n] = id
                return $0.acknowledged.count
            }
            if count == threshold { enoughSink.yield() }
        }

        func unanswered(_ n: Int) { state.withLock { _ = $0.unanswered.insert(n) } }
    }

    static func create(_ client: OutpostClient, _ n: Int) async throws -> String {
        let request = Request.post("/records/crash", json: ["n": .int(n)]).idempotencyKey("crash-\(n)")
        let answer = try await client.send(request)
        guard let id = try answer.json()["id"]?.stringValue else {
            throw CrashTestFailure(message: "no id in the answer for \(n)")
        }
        return id
    }

    @Test(
        "kill -9 under load, restart: every acknowledged write is present exactly once", .enabled(if: binary != nil),
        arguments: ScratchDatabase.backends)
    func killUnderLoad(_ backend: ScratchDatabase.Backend) async throws {
        let scratch = try await ScratchDatabase.make(backend)
        do {
            try await killUnderLoad(database: scratch.argument)
        } catch {
            await scratch.remove()
            throw error
        }
        await scratch.remove()
    }

    func killUnderLoad(database: String) async throws {
        let binary = try #require(Self.binary)

        // The load writes without signing in: a rules file (`serve --rules`) allows it.
        let rules = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-crash-rules-\(UUID().uuidString).json")
        try Data(#"{"types": {"*": {"create": "true"}}}"#.utf8).write(to: rules)
        defer { try? FileManager.default.removeItem(at: rules) }
        let first = try await Child.start(binary, database: database, rules: rules.path)
        let ledger = Ledger(threshold: 40)
        var configuration = OutpostClient.Configuration(baseURL: first.baseURL)
        configuration.retry = .none
        let client = OutpostClient(configuration: configuration)
        let workers = 4
        let perWorker = 1000
        let load = Task {
            await withTaskGroup(of: Void.self) { group in
                for worker in 0..<workers {
                    group.addTask {
                        for index in 0..<perWorker {
                            let n = worker * perWorker + index
                            do {
                                ledger.acknowledge(n, id: try await Self.create(client, n))
                            } catch {
                                ledger.unanswered(n)  // the server died with this one in flight
                                return
                            }
                        }
                    }
                }
            }
        }
        for await _ in ledger.enough { break }
        await first.kill9()
        await load.value
        try await client.shutdown()

        let second = try await Child.start(binary, database: database)
        do {
            try await checkRecovered(second.baseURL, ledger: ledger, sent: workers * perWorker)
        } catch {
            second.process.terminate()
            await second.exit.wait()
            throw error
        }
        second.process.terminate()
        await second.exit.wait()
    }

    /// Every acknowledged key answers its record again, every key sent without an answer succeeds
    /// once now, and the type holds exactly one record per key.
    func checkRecovered(_ baseURL: URL, ledger: Ledger, sent: Int) async throws {
        try await IdempotencyTests.withClient(baseURL) { client in
            let (acknowledged, unanswered) = ledger.state.withLock { ($0.acknowledged, $0.unanswered) }
            #expect(acknowledged.count >= 40)
            #expect(acknowledged.count < sent, "the server was killed before the load finished")
            // Acknowledged keys answer the same record again; the ones in flight at the kill now succeed once.
            for (n, id) in acknowledged { #expect(try await Self.create(client, n) == id) }
            for n in unanswered { _ = try await Self.create(client, n) }
            let expected = acknowledged.count + unanswered.subtracting(acknowledged.keys).count
            let total = try await client.send(.get("/records/crash?page=1&per_page=1")).json()["total"]?.intValue
            #expect(total == expected)
            for (n, id) in acknowledged {
                let matches = try await client.send(.get("/records/crash?page=1&per_page=2&n=\(n)")).json()
                #expect(matches["total"]?.intValue == 1)
                #expect(matches["results"]?[0]?["id"]?.stringValue == id)
            }
        }
    }
}
