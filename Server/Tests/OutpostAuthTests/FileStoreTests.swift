import Foundation
@_spi(OutpostInternal) import OutpostSupport
import OutpostTestSupport
import Testing

@testable import OutpostAuth

@Suite("File credential store")
struct FileStoreTests {
    static func temporaryFile() -> URL {
        FileManager.default.temporaryDirectory.appending(path: "outpost-auth-\(UUID().uuidString)", directoryHint: .isDirectory)
            .appending(path: "nested", directoryHint: .isDirectory).appending(path: "credentials.json")
    }

    static func permissions(_ url: URL) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    @Test("saves with 0600 in a 0700 folder, loads, keeps accounts apart, removes")
    func roundTrip() async throws {
        let file = Self.temporaryFile()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent().deletingLastPathComponent()) }
        let store = FileCredentialStore(fileURL: file)
        #expect(try await store.load(account: "a") == nil)
        let credential = Credential(
            accessToken: "at", refreshToken: "rt", expiresAt: Date(timeIntervalSince1970: 1_700_000_000.25), scopes: ["x"])
        try await store.save(credential, account: "a")
        try await store.save(Credential(accessToken: "other"), account: "b")
        #expect(try Self.permissions(file) == 0o600)
        #expect(try Self.permissions(file.deletingLastPathComponent()) == 0o700)
        #expect(try await FileCredentialStore(fileURL: file).load(account: "a") == credential)
        try await store.remove(account: "a")
        #expect(try await store.load(account: "a") == nil)
        #expect(try await store.load(account: "b")?.accessToken == "other")
        #expect(try Self.permissions(file) == 0o600)
    }

    @Test("writes replace the file atomically: no temporary files stay, a leftover one changes nothing")
    func atomic() async throws {
        let file = Self.temporaryFile()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent().deletingLastPathComponent()) }
        let store = FileCredentialStore(fileURL: file)
        try await store.save(Credential(accessToken: "one"), account: "a")
        let inode = try FileManager.default.attributesOfItem(atPath: file.path)[.systemFileNumber] as? NSNumber
        // A process that died mid-write leaves at most a partial temporary file beside the store.
        let partial = file.deletingLastPathComponent().appending(path: ".credentials.json.tmp-dead")
        try Data("{\"version\":1,\"acc".utf8).write(to: partial)
        #expect(try await store.load(account: "a")?.accessToken == "one")
        try await store.save(Credential(accessToken: "two"), account: "a")
        let newInode = try FileManager.default.attributesOfItem(atPath: file.path)[.systemFileNumber] as? NSNumber
        #expect(inode != newInode)  // renamed over, not rewritten in place
        #expect(try await store.load(account: "a")?.accessToken == "two")
        let names = try FileManager.default.contentsOfDirectory(atPath: file.deletingLastPathComponent().path)
        #expect(Set(names) == ["credentials.json", "credentials.json.lock", ".credentials.json.tmp-dead"])
    }

    @Test("a corrupt file is a clear error on load and on save, and is not overwritten")
    func corrupt() async throws {
        let file = Self.temporaryFile()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent().deletingLastPathComponent()) }
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        let garbage = Data("not json {".utf8)
        try garbage.write(to: file)
        let store = FileCredentialStore(fileURL: file)
        let loadError = await #expect(throws: AuthError.self) { try await store.load(account: "a") }
        #expect(loadError?.code == .storeCorrupt)
        #expect(loadError?.message.contains(file.path) == true)
        let saveError = await #expect(throws: AuthError.self) { try await store.save(Credential(accessToken: "x"), account: "a") }
        #expect(saveError?.code == .storeCorrupt)
        #expect(try Data(contentsOf: file) == garbage)
    }

    @Test("the exclusive lock is held across processes' stores (separate descriptors) and re-entrant within one task")
    func locking() async throws {
        let file = Self.temporaryFile()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent().deletingLastPathComponent()) }
        let first = FileCredentialStore(fileURL: file)
        let second = FileCredentialStore(fileURL: file, lockTimeout: .milliseconds(100))
        try await first.withExclusiveAccess(account: "a") {
            try await first.save(Credential(accessToken: "inside"), account: "a")  // re-entrant: no deadlock
            // Another task with no lock of its own, as another process would be.
            let other = Task.detached { try await second.withExclusiveAccess(account: "a") {} }
            let thrown = await #expect(throws: AuthError.self) { try await other.value }
            #expect(thrown?.code == .storeFailed)
        }
        try await second.withExclusiveAccess(account: "a") {}
        #expect(try await second.load(account: "a")?.accessToken == "inside")
    }

    @Test("saves waiting for another process's lock leave the cooperative pool free, then all land")
    func lockWaitOffThePool() async throws {
        let file = Self.temporaryFile()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent().deletingLastPathComponent()) }
        let store = FileCredentialStore(fileURL: file)
        try await store.save(Credential(accessToken: "first"), account: "seed")  // creates the folder
        // Another process's hold on the lock: a descriptor of its own on the same lock file.
        let other = try await FileLock.acquire(path: store.lockURL.path, timeout: .seconds(5))
        // If the saves held the pool's threads, the watchdog releases the lock: the test fails, not hangs.
        let watchdog = PoolWatchdog { other.release() }
        let savers = ProcessInfo.processInfo.activeProcessorCount * 2 + 2
        let saves = await PoolWatchdog.start(savers) { index in
            try await FileCredentialStore(fileURL: file).save(Credential(accessToken: "t\(index)"), account: "a\(index)")
        }
        #expect(await watchdog.probe())
        #expect(try await store.load(account: "a0") == nil)  // reads do not take the lock, and nothing saved yet
        other.release()
        for save in saves { try await save.value }
        for index in 0..<savers {
            #expect(try await store.load(account: "a\(index)")?.accessToken == "t\(index)")
        }
    }
}
