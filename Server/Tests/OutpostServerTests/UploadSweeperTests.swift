import Foundation
import Logging
import NIOCore
import OutpostTestSupport
import ServiceLifecycle
import Synchronization
import Testing

@testable import OutpostServer

/// The server's periodic sweep of expired uploads: how often, that it goes on after a failure,
/// and that it stops with the server.
// The time limit bounds a hang, not the speed: with every suite running at once on two cores, a
// test can wait over a minute for its turn.
@Suite("Upload sweeper", .closesWhatItOpens, .timeLimit(.minutes(3)))
struct UploadSweeperTests {
    /// A folder store whose sweeps are counted and announced; the first one fails.
    final class CountedSweeps: FileStorage {
        let base: FolderFileStorage
        let count = Mutex(0)
        let announce: AsyncStream<Int>.Continuation

        init(base: FolderFileStorage, announce: AsyncStream<Int>.Continuation) {
            self.base = base
            self.announce = announce
        }

        struct Failed: Error {}

        func sweepUploads() async throws -> Int {
            let number = count.withLock {
                $0 += 1
                return $0
            }
            announce.yield(number)
            if number == 1 { throw Failed() }
            return try await base.sweepUploads()
        }

        func file(named name: String) async throws -> StoredFile? { try await base.file(named: name) }
        func removeFiles(owner: String, transferringTo recipient: String?) async throws -> Int {
            try await base.removeFiles(owner: owner, transferringTo: recipient)
        }
        func read(_ file: StoredFile, range: Range<Int64>, to sink: (ByteBuffer) async throws -> Void) async throws {
            try await base.read(file, range: range, to: sink)
        }
        func deleteFile(named name: String) async throws -> Bool { try await base.deleteFile(named: name) }
        func uploadOffset(_ upload: UploadKey) async throws -> Int64? { try await base.uploadOffset(upload) }
        func readUpload(_ upload: UploadKey, to sink: (ByteBuffer) async throws -> Void) async throws {
            try await base.readUpload(upload, to: sink)
        }
        func appendUpload<Body: AsyncSequence>(
            _ upload: UploadKey, at offset: Int64, body: Body, observe: (ByteBuffer) throws -> Void
        ) async throws -> Int64 where Body.Element == ByteBuffer {
            try await base.appendUpload(upload, at: offset, body: body, observe: observe)
        }
        func completeUpload(_ upload: UploadKey, as file: StoredFile) async throws {
            try await base.completeUpload(upload, as: file)
        }
        func deleteUpload(_ upload: UploadKey) async throws { try await base.deleteUpload(upload) }
        func usage(owner: String) async throws -> FileUsage { try await base.usage(owner: owner) }
    }

    @Test("a tenth of the lifetime, between a second and 10 minutes")
    func interval() {
        #expect(UploadSweeper.interval(lifetime: ServerConfiguration.defaultUploadLifetime) == .seconds(600))
        #expect(UploadSweeper.interval(lifetime: .seconds(3600)) == .seconds(360))
        #expect(UploadSweeper.interval(lifetime: .seconds(5)) == .seconds(1))
    }

    @Test("sweeps again and again, also after a failed sweep, and stops when the server shuts down")
    func runsUntilShutdown() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-sweeper-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let (sweeps, announce) = AsyncStream.makeStream(of: Int.self)
        let files = CountedSweeps(base: try await FolderFileStorage.open(directory: folder.path), announce: announce)
        var logger = Logger(label: "outpost.test.sweeper")
        logger.logLevel = .critical
        let sweeper = UploadSweeper(files: files, interval: .milliseconds(1), logger: logger)
        let group = ServiceGroup(configuration: .init(services: [sweeper], logger: logger))
        let running = Task { try await group.run() }
        var iterator = sweeps.makeAsyncIterator()
        // The first sweep fails; the sweeper goes on.
        #expect(await iterator.next() == 1)
        #expect(await iterator.next() == 2)
        await group.triggerGracefulShutdown()
        try await running.value
        #expect(files.count.withLock { $0 } >= 2)
    }
}
