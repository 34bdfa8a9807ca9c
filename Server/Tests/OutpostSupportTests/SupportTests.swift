import Dispatch
import Foundation
@_spi(OutpostInternal) import OutpostSupport
import OutpostTestSupport
import Testing

@Suite("Duration conversions")
struct DurationUnitsTests {
    @Test("seconds, milliseconds and nanoseconds of whole and fractional durations")
    func conversions() {
        #expect(Duration.milliseconds(1500).inSeconds == 1.5)
        #expect(Duration.seconds(2).inMilliseconds == 2000)
        #expect(Duration.nanoseconds(2_500_000).inMilliseconds == 2)  // rounded toward zero
        #expect(Duration.milliseconds(3).inNanoseconds == 3_000_000)
        #expect(Duration.seconds(-1).inMilliseconds == -1000)
        #expect(Duration.zero.inSeconds == 0)
    }
}

@Suite("Time limit")
struct TimeLimitTests {
    struct Boom: Error {}

    @Test("a body that finishes in time gives its value or its error")
    func inTime() async {
        guard case .value(42) = await withTimeLimit(.seconds(30), { 42 }) else {
            Issue.record("expected the value")
            return
        }
        guard case .error(let error) = await withTimeLimit(.seconds(30), { () async throws -> Int in throw Boom() }) else {
            Issue.record("expected the error")
            return
        }
        #expect(error is Boom)
    }

    @Test("a body that ignores cancellation does not hold the caller past the limit")
    func timesOut() async {
        let never = DispatchSemaphore(value: 0)
        let outcome = await withTimeLimit(.milliseconds(20)) { () async -> Int in
            // Blocks a pool thread of its own making, deaf to cancellation, until the test lets it go.
            await withCheckedContinuation { continuation in
                Thread {
                    never.wait()
                    continuation.resume(returning: 1)
                }.start()
            }
        }
        never.signal()
        guard case .timedOut = outcome else {
            Issue.record("expected a time-out, got \(outcome)")
            return
        }
    }
}

@Suite("Blocking pool")
struct BlockingPoolTests {
    @Test("work runs on the pool's own threads, not the caller's, and its result or error comes back")
    func runsOnPool() async throws {
        let pool = BlockingPool(threads: 2, name: "test-pool")
        #expect(try await pool.run { pool.isCurrentThreadInPool })
        #expect(!pool.isCurrentThreadInPool)
        await #expect(throws: CocoaError.self) {
            try await pool.run { try Data(contentsOf: URL(fileURLWithPath: "/nonexistent-\(UUID().uuidString)")) }
        }
    }
}

@Suite("Atomic file")
struct AtomicFileTests {
    @Test("writes with mode 0600, replaces by rename and leaves no temporary file")
    func writes() throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "atomic-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appending(path: "data.json")
        try AtomicFile.write(Data("one".utf8), to: file)
        let first = try FileManager.default.attributesOfItem(atPath: file.path)
        try AtomicFile.write(Data("two".utf8), to: file)
        let second = try FileManager.default.attributesOfItem(atPath: file.path)
        #expect(try Data(contentsOf: file) == Data("two".utf8))
        #expect((second[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect((first[.systemFileNumber] as? NSNumber) != (second[.systemFileNumber] as? NSNumber))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["data.json"])
    }

    @Test("a folder that does not exist is an error naming the file")
    func missingFolder() {
        let file = URL(fileURLWithPath: "/nonexistent-\(UUID().uuidString)/data.json")
        let error = #expect(throws: AtomicFileError.self) { try AtomicFile.write(Data("x".utf8), to: file) }
        #expect(error?.operation == "create")
        #expect(error?.description.contains("nonexistent") == true)
    }
}

@Suite("File lock")
struct FileLockTests {
    static func lockPath() -> String {
        FileManager.default.temporaryDirectory.appending(path: "lock-\(UUID().uuidString)").path
    }

    @Test("a second holder waits, times out with a clear error, and gets the lock once it is free")
    func excludes() async throws {
        let path = Self.lockPath()
        defer { unlink(path) }
        let first = try await FileLock.acquire(path: path, timeout: .seconds(5))
        await #expect {
            _ = try await FileLock.acquire(path: path, timeout: .milliseconds(30))
        } throws: { error in
            guard case .timedOut(path) = error as? FileLockError else { return false }
            return true
        }
        first.release()
        let second = try await FileLock.acquire(path: path, timeout: .seconds(5))
        second.release()
    }

    @Test("a waiter that gave up releases the lock as soon as its thread gets it")
    func abandonedWaitReleases() async throws {
        let path = Self.lockPath()
        defer { unlink(path) }
        let first = try await FileLock.acquire(path: path, timeout: .seconds(5))
        _ = try? await FileLock.acquire(path: path, timeout: .milliseconds(20))
        first.release()
        // Had the abandoned waiter kept the lock, this would time out.
        let third = try await FileLock.acquire(path: path, timeout: .seconds(10))
        third.release()
    }

    @Test("waiters blocked on a held lock leave the cooperative pool free to run other tasks")
    func waitersDoNotBlockThePool() async throws {
        let path = Self.lockPath()
        defer { unlink(path) }
        let holder = try await FileLock.acquire(path: path, timeout: .seconds(5))
        // If the waiters held the pool's threads, the watchdog releases the lock: the test fails, not hangs.
        let watchdog = PoolWatchdog { holder.release() }
        let waiters = ProcessInfo.processInfo.activeProcessorCount * 2 + 2
        let acquired = Flag()
        let tasks = await PoolWatchdog.start(waiters) { _ in
            let lock = try await FileLock.acquire(path: path, timeout: .seconds(60))
            acquired.set()
            lock.release()
        }
        #expect(await watchdog.probe())
        #expect(acquired.count == 0)
        holder.release()
        for task in tasks { try await task.value }
        #expect(acquired.count == waiters)
    }
}
