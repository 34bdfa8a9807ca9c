import Foundation
import GRDB
import OutpostCore
import OutpostTestSupport
import Synchronization
import Testing

@testable import OutpostSync

/// Several stores on one file (an app and its extensions through an App Group container), and the
/// database settings that make that work.
@Suite struct StoreSharingTests {
    @Test func theDatabaseWaitsForOtherWritersAndObservesSuspension() {
        let configuration = StoreSchema.configuration()
        guard case .timeout(let seconds) = configuration.busyMode else {
            Issue.record("busy mode \(configuration.busyMode), not a timeout")
            return
        }
        #expect(seconds == StoreSchema.busyTimeout)
        #expect(seconds >= 5)
        #expect(configuration.observesSuspensionNotifications)
        #expect(configuration.foreignKeysEnabled)
    }

    /// A write transaction takes the write lock at `BEGIN`, so that two writers wait for each other
    /// there (the busy timeout) instead of failing halfway when the second upgrades its lock.
    @Test func writesBeginImmediate() async throws {
        try await withStore { store, _ in
            let statements = Mutex<[String]>([])
            try await store.database.writeWithoutTransaction { db in
                db.trace { event in
                    let sql = "\(event)"
                    statements.withLock { $0.append(sql) }
                }
            }
            try await store.create("notes", fields: ["text": "one"])
            let begins = statements.withLock { $0 }.filter { $0.uppercased().hasPrefix("BEGIN") }
            #expect(!begins.isEmpty)
            #expect(begins.allSatisfy { $0.uppercased().hasPrefix("BEGIN IMMEDIATE") }, "\(begins)")
        }
    }

    /// Two stores on one file, each with its own connections, write at the same time: none fails
    /// with SQLITE_BUSY, and every write is there.
    @Test func twoStoresOnOneFileWriteAtOnce() async throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "outpost-sync-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let stores = [try SyncedStore(folder: folder), try SyncedStore(folder: folder)]
        let perStore = 150
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, store) in stores.enumerated() {
                for writer in 0..<3 {
                    group.addTask {
                        for n in 0..<(perStore / 3) {
                            try await store.create("notes", fields: ["store": .int(index), "n": .int(writer * 1000 + n)])
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        for store in stores {
            #expect(try await store.status()["notes"] == SyncTypeStatus(pending: 2 * perStore, failed: 0))
            #expect(try await store.query("notes").count == 2 * perStore)
        }
    }

    /// The folder a child process (this test binary, run again) writes into, and how many records.
    static let childFolder = ProcessInfo.processInfo.environment["OUTPOST_SYNC_CHILD_FOLDER"]
    static let childWrites = 400
    static let childStarted = "outpost-sync-child-writing"

    /// Run only in the child that ``twoProcessesWriteAtOnce()`` starts: writes into the parent's store.
    @Test(.enabled(if: StoreSharingTests.childFolder != nil))
    func childWriter() async throws {
        let store = try SyncedStore(folder: URL(fileURLWithPath: try #require(Self.childFolder)))
        // Tells the parent to start writing too (standard error is not buffered).
        FileHandle.standardError.write(Data("\(Self.childStarted)\n".utf8))
        for n in 0..<Self.childWrites {
            try await store.create("notes", fields: ["process": "child", "n": .int(n)])
        }
    }

    /// This test binary, when it can be run again with a filter (SwiftPM's test bundle on Linux).
    static let binary: URL? = {
        let path = URL(fileURLWithPath: CommandLine.arguments.first ?? "").standardizedFileURL
        return path.pathExtension == "xctest" && FileManager.default.isExecutableFile(atPath: path.path) ? path : nil
    }()

    /// Two processes write into one store at once, as an app and its extension do: neither fails
    /// with SQLITE_BUSY, and every write is there.
    @Test(.enabled(if: StoreSharingTests.binary != nil && StoreSharingTests.childFolder == nil))
    func twoProcessesWriteAtOnce() async throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "outpost-sync-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try SyncedStore(folder: folder)
        let binary = try #require(Self.binary)
        let process = Process()
        process.executableURL = binary
        process.arguments = ["--testing-library", "swift-testing", "--filter", "StoreSharingTests/childWriter"]
        var environment = ProcessInfo.processInfo.environment
        environment["OUTPOST_SYNC_CHILD_FOLDER"] = folder.path
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        let exit = ProcessExit(watching: process)
        try process.run()
        // Once the child writes, write as well, while it goes on.
        var chunks = output.fileHandleForReading.chunksOffPool().makeAsyncIterator()
        var log = ""
        while !log.contains(Self.childStarted), let chunk = await chunks.next() {
            log += String(decoding: chunk, as: UTF8.self)
        }
        for n in 0..<Self.childWrites {
            try await store.create("notes", fields: ["process": "parent", "n": .int(n)])
        }
        while let chunk = await chunks.next() { log += String(decoding: chunk, as: UTF8.self) }
        let ended = await exit.wait()
        #expect(ended.status == 0 && !ended.signalled, "the child failed:\n\(log.suffix(4000))")
        #expect(log.contains("childWriter"), "the child ran no test:\n\(log.suffix(2000))")
        let records = try await store.query("notes")
        #expect(records.filter { $0.fields["process"] == "child" }.count == Self.childWrites)
        #expect(records.filter { $0.fields["process"] == "parent" }.count == Self.childWrites)
    }

    @Test func theLifecycleSuspendsInTheBackgroundAndResumesInTheForeground() {
        let center = NotificationCenter()
        let background = Notification.Name("test.background")
        let foreground = Notification.Name("test.foreground")
        let posted = Mutex<[Notification.Name]>([])
        let lifecycle = LifecycleSuspension(center: center, background: background, foreground: foreground) { name in
            posted.withLock { $0.append(name) }
        }
        center.post(name: background, object: nil)
        // Synchronously, on the posting thread: the database is suspended before the app is.
        #expect(posted.withLock { $0 } == [Database.suspendNotification])
        center.post(name: foreground, object: nil)
        #expect(posted.withLock { $0 } == [Database.suspendNotification, Database.resumeNotification])
        lifecycle.stop()
        center.post(name: background, object: nil)
        #expect(posted.withLock { $0 }.count == 2)
    }

    @Test func suspendAndResumePostGRDBsNotifications() async throws {
        let posted = Mutex<[Notification.Name]>([])
        let observers = [Database.suspendNotification, Database.resumeNotification].map { name in
            NotificationCenter.default.addObserver(forName: name, object: nil, queue: nil) { note in
                posted.withLock { $0.append(note.name) }
            }
        }
        defer { observers.forEach(NotificationCenter.default.removeObserver) }
        // Resume first: a store of another test running now is never left suspended.
        SyncedStore.resume()
        #expect(posted.withLock { $0 } == [Database.resumeNotification])
    }
}
