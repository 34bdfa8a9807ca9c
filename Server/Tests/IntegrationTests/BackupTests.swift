import Foundation
import Outpost
import OutpostServer
import OutpostTestSupport
import Synchronization
import Testing

/// `outpost backup` and `outpost restore` (the built binary) on SQLite databases of live servers.
@Suite(
    "outpost backup and restore", .closesWhatItOpens, .timeLimit(.minutes(3)),
    .enabled(if: CrashRecoveryTests.binary != nil && LiveServer.backend == .sqlite))
struct BackupTests {
    /// Runs the `outpost` binary with `arguments`; answers its exit status and its standard output
    /// and error together.
    static func outpost(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = CrashRecoveryTests.binary
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        let exit = ProcessExit(watching: process)
        try process.run()
        var text = ""
        for await chunk in output.fileHandleForReading.chunksOffPool() { text += String(decoding: chunk, as: UTF8.self) }
        return (await exit.wait().status, text)
    }

    static func database(_ server: LiveServer) -> String { server.folder.appendingPathComponent("test.sqlite").path }

    /// The ids of records whose creation was acknowledged, in order.
    final class Ledger: Sendable {
        private let ids = Mutex<[String]>([])
        func add(_ id: String) { ids.withLock { $0.append(id) } }
        var all: [String] { ids.withLock { $0 } }
    }

    @Test("a backup taken while writers run holds every write acknowledged before it began; restored, a server serves them")
    func backupUnderWriteLoad() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-backup-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let backup = folder.appendingPathComponent("backup.sqlite").path
        let restored = folder.appendingPathComponent("restored.sqlite").path
        let ledger = Ledger()
        let enough = Gate()
        let stop = Flag()
        let acknowledgedBefore = try await withLiveServer { server, client in
            defer { stop.set() }
            let writers = Task {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for writer in 0..<4 {
                        group.addTask {
                            var n = 0
                            while !stop.isSet {
                                let id = try await client.send(
                                    .post("/records/items", json: ["writer": .int(writer), "n": .int(n), "text": "backed up"]),
                                    decoding: JSONValue.self)["id"]?.stringValue
                                if let id { ledger.add(id) }
                                n += 1
                                if ledger.all.count >= 200 { enough.open() }
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            await enough.wait()
            let before = ledger.all
            let run = try await Self.outpost(["backup", backup, "--database", Self.database(server)])
            let writtenDuring = ledger.all.count - before.count
            stop.set()
            try await writers.value
            #expect(run.status == 0, "\(run.output)")
            #expect(run.output.contains("schema version \(SQLiteBackup.knownSchemaVersion)"), "\(run.output)")
            #expect(writtenDuring > 0, "the writers went on while the backup ran")
            return before
        }
        let summary = try await SQLiteBackup.inspect(backup)
        #expect(summary.records >= acknowledgedBefore.count)

        let restore = try await Self.outpost(["restore", backup, "--database", restored])
        #expect(restore.status == 0, "\(restore.output)")
        try await withLiveServer(configure: { $0.databasePath = restored }) { _, client in
            for id in acknowledgedBefore {
                let record = try await client.send(.get("/records/items/\(id)"), decoding: JSONValue.self)
                #expect(record["text"] == "backed up")
            }
        }
    }

    @Test("backup refuses an existing DEST (left as it was) unless --force, and a database that is not there")
    func backupRefusesExistingDestination() async throws {
        try await withLiveServer { server, client in
            _ = try await client.send(.post("/records/items", json: ["n": 1]))
            let destination = server.folder.appendingPathComponent("existing.sqlite").path
            try Data("keep me".utf8).write(to: URL(fileURLWithPath: destination))
            let refused = try await Self.outpost(["backup", destination, "--database", Self.database(server)])
            #expect(refused.status != 0)
            #expect(refused.output.contains("exists"), "\(refused.output)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: destination)) == Data("keep me".utf8))

            let forced = try await Self.outpost(["backup", destination, "--database", Self.database(server), "--force"])
            #expect(forced.status == 0, "\(forced.output)")
            #expect(try await SQLiteBackup.inspect(destination).records == 1)
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: server.folder.path).filter {
                $0.contains(".backup-")
            }
            #expect(leftovers.isEmpty)

            let missing = try await Self.outpost([
                "backup", destination + ".2", "--database", server.folder.appendingPathComponent("none.sqlite").path,
            ])
            #expect(missing.status != 0 && missing.output.contains("no database"), "\(missing.output)")
            #expect(!FileManager.default.fileExists(atPath: server.folder.appendingPathComponent("none.sqlite").path))
        }
    }

    @Test("restore refuses a corrupt file, a SQLite file that is not Outpost's and a newer schema; the target is untouched")
    func restoreRefusesBadSources() async throws {
        try await withLiveServer { server, client in
            _ = try await client.send(.post("/records/items", json: ["n": 1]))
            let folder = server.folder
            let good = folder.appendingPathComponent("good.sqlite").path
            #expect(try await Self.outpost(["backup", good, "--database", Self.database(server)]).status == 0)
            let target = folder.appendingPathComponent("target.sqlite").path

            // Random bytes, and a backup whose pages were overwritten in the middle.
            let garbage = folder.appendingPathComponent("garbage.sqlite")
            try Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }).write(to: garbage)
            let damaged = folder.appendingPathComponent("damaged.sqlite")
            var bytes = try Data(contentsOf: URL(fileURLWithPath: good))
            let pageSize = 4096
            for offset in stride(from: pageSize, to: bytes.count, by: pageSize) {
                bytes.replaceSubrange((offset + 8)..<(offset + 40), with: Data(repeating: 0xA5, count: 32))
            }
            try bytes.write(to: damaged)
            for source in [garbage.path, damaged.path] {
                let run = try await Self.outpost(["restore", source, "--database", target])
                #expect(run.status != 0, "\(source): \(run.output)")
                #expect(run.output.contains("damaged") || run.output.contains("not a readable SQLite"), "\(run.output)")
                #expect(!FileManager.default.fileExists(atPath: target))
            }

            // A SQLite file without Outpost's tables.
            let other = folder.appendingPathComponent("other.sqlite").path
            let opened = try await SQLiteStorage.open(path: other, logger: .init(label: "test"))
            try await opened.execute(unsafeSQL: "CREATE TABLE notes (text TEXT)")
            try await opened.close()
            let notOutpost = try await Self.outpost(["restore", other, "--database", target])
            #expect(notOutpost.status != 0 && notOutpost.output.contains("not an Outpost one"), "\(notOutpost.output)")

            // A schema version this build does not know.
            let newer = folder.appendingPathComponent("newer.sqlite").path
            try FileManager.default.copyItem(atPath: good, toPath: newer)
            let future = try await SQLiteStorage.open(path: newer, logger: .init(label: "test"))
            try await future.execute(unsafeSQL: "INSERT INTO schema_migrations (version, applied_at) VALUES (100000, 0)")
            try await future.close()
            let tooNew = try await Self.outpost(["restore", newer, "--database", target])
            #expect(tooNew.status != 0 && tooNew.output.contains("newer than this outpost knows"), "\(tooNew.output)")
            #expect(!FileManager.default.fileExists(atPath: target))

            // The good one goes in.
            let restored = try await Self.outpost(["restore", good, "--database", target])
            #expect(restored.status == 0, "\(restored.output)")
            #expect(try await SQLiteBackup.inspect(target).records == 1)
        }
    }

    @Test("restore replaces a database only with --force and never while a server has it open; the old one is kept")
    func restoreReplacesOnlyAStoppedDatabase() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-restore-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let backup = folder.appendingPathComponent("backup.sqlite").path
        let live = folder.appendingPathComponent("live.sqlite").path
        // The backup holds one record; the live database gets a second one after it.
        let ids = try await withLiveServer(configure: { $0.databasePath = live }) { _, client in
            let first = try await client.send(.post("/records/items", json: ["n": 1]), decoding: JSONValue.self)["id"]
            #expect(try await Self.outpost(["backup", backup, "--database", live]).status == 0)
            let second = try await client.send(.post("/records/items", json: ["n": 2]), decoding: JSONValue.self)["id"]

            let unforced = try await Self.outpost(["restore", backup, "--database", live])
            #expect(unforced.status != 0 && unforced.output.contains("--force"), "\(unforced.output)")
            let held = try await Self.outpost(["restore", backup, "--database", live, "--force"])
            #expect(held.status != 0, "\(held.output)")
            #expect(held.output.contains("open in another process"), "\(held.output)")
            let stillServed = try await client.send(.get("/records/items/\(second?.stringValue ?? "")"), decoding: JSONValue.self)
            #expect(stillServed["n"] == 2)
            return (try #require(first?.stringValue), try #require(second?.stringValue))
        }
        let replaced = try await Self.outpost(["restore", backup, "--database", live, "--force"])
        #expect(replaced.status == 0, "\(replaced.output)")
        #expect(try await SQLiteBackup.inspect(live).records == 1)
        #expect(try await SQLiteBackup.inspect(live + ".before-restore").records == 2, "the old database, its log merged")
        #expect(!FileManager.default.fileExists(atPath: live + "-wal"))
        try await withLiveServer(configure: { $0.databasePath = live }) { _, client in
            #expect(try await client.send(.get("/records/items/\(ids.0)"), decoding: JSONValue.self)["n"] == 1)
            let gone = try await AccountDeletionTests.send(client, .get("/records/items/\(ids.1)"), token: nil)
            #expect(gone.status == 404, "the record written after the backup is not in it")
        }
    }
}
