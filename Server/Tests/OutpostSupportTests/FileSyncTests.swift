import Foundation
@_spi(OutpostInternal) import OutpostSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite("Flushing to disk and brief locks")
struct FileSyncTests {
    static func temporaryFile() -> String {
        FileManager.default.temporaryDirectory.appending(path: "outpost-sync-\(UUID().uuidString)").path
    }

    @Test("a file and its folder are flushed; a closed descriptor is reported as a failure")
    func flushes() throws {
        let path = Self.temporaryFile()
        defer { unlink(path) }
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        #expect(descriptor >= 0)
        #expect(write(descriptor, "data", 4) == 4)
        #expect(FileSync.toDisk(descriptor))
        close(descriptor)
        #expect(!FileSync.toDisk(descriptor))
        FileSync.folderToDisk(FileManager.default.temporaryDirectory.path)
        FileSync.folderToDisk("/nonexistent-outpost-folder")  // best effort: no crash, no error
    }

    @Test("lockBriefly takes a free lock, times out on a held one, and gets it once it is let go")
    func briefLock() throws {
        let path = Self.temporaryFile()
        defer { unlink(path) }
        let holder = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        let waiter = open(path, O_RDWR | O_CLOEXEC)
        defer {
            close(holder)
            close(waiter)
        }
        try FileLock.lockBriefly(holder, path: path, timeout: .seconds(1))
        #expect(throws: FileLockError.self) { try FileLock.lockBriefly(waiter, path: path, timeout: .milliseconds(30)) }
        FileLock.unlock(holder)
        try FileLock.lockBriefly(waiter, path: path, timeout: .seconds(1))
        #expect(flock(holder, LOCK_EX | LOCK_NB) != 0, "the waiter holds it now")
        FileLock.unlock(waiter)
        #expect(flock(holder, LOCK_EX | LOCK_NB) == 0)
    }
}
