import Crypto
import Foundation
import Logging
import NIOCore
import OutpostServerTesting
import OutpostTestSupport
import PostgresNIO
import Synchronization
import Testing

@testable import OutpostServer

/// One suite, both file stores: what the routes rely on from ``FileStorage``, checked against the
/// folder and (when `OUTPOST_TEST_POSTGRES_URL` is set) the PostgreSQL database. "Another instance"
/// is a second store opened on the same folder or database.
@Suite("File storage conformance", .closesWhatItOpens)
struct FileStorageConformanceTests {
    enum Kind: String, Sendable, CustomStringConvertible {
        case folder, postgres
        var description: String { rawValue }
    }

    static let kinds: [Kind] = ScratchDatabase.backends.map { $0 == .sqlite ? .folder : .postgres }
    static let chunk = Int(PostgresFileStorage.chunkLength)

    /// A store under test, a way to open another instance on the same folder or database, and the
    /// PostgreSQL storage when there is one.
    struct Fixture {
        let files: any FileStorage
        let another: () async throws -> any FileStorage
        let postgres: PostgresStorage?
        let folder: URL?

        /// How many chunk rows the database holds (PostgreSQL), or files of bytes the folder holds
        /// (files' and pending uploads').
        func storedPieces() async throws -> Int {
            if let postgres {
                return Int(try await postgres.rows("SELECT count(*) AS n FROM file_chunks").first?.int64("n") ?? -1)
            }
            let folder = try #require(folder)
            let manager = FileManager.default
            let data = try manager.contentsOfDirectory(atPath: folder.appendingPathComponent("objects").path)
            let parts = try manager.contentsOfDirectory(atPath: folder.appendingPathComponent("uploads").path)
            return data.filter { $0.hasSuffix(".data") }.count + parts.filter { $0.hasSuffix(".part") }.count
        }
    }

    func withStore(
        _ kind: Kind, lifetime: Duration = .seconds(3600), clock: MovableClock = MovableClock(),
        _ body: (Fixture) async throws -> Void
    ) async throws {
        await ResourcePlaces.enter()
        switch kind {
        case .folder:
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-store-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            let open: () async throws -> any FileStorage = {
                try await FolderFileStorage.open(directory: folder.path, uploadLifetime: lifetime, now: clock.now)
            }
            try await body(Fixture(files: try await open(), another: open, postgres: nil, folder: folder))
        case .postgres:
            let database = try await ScratchDatabase.make(.postgres)
            var logger = Logger(label: "outpost.test.files")
            logger.logLevel = .critical
            let opened = Mutex<[any Storage]>([])
            let open: () async throws -> any FileStorage = {
                let storage = try #require(try await database.open(logger: logger) as? PostgresStorage)
                opened.withLock { $0.append(storage) }
                return PostgresFileStorage(storage: storage, uploadLifetime: lifetime, now: clock.now)
            }
            do {
                let files = try await open()
                let postgres = try #require(opened.withLock { $0.first } as? PostgresStorage)
                try await body(Fixture(files: files, another: open, postgres: postgres, folder: nil))
            } catch {
                for storage in opened.withLock({ $0 }) { try? await storage.close() }
                await database.remove()
                throw error
            }
            for storage in opened.withLock({ $0 }) { try await storage.close() }
            await database.remove()
        }
    }

    // MARK: Helpers

    /// `count` bytes that differ with `seed`.
    static func bytes(_ count: Int, seed: UInt8 = 1) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: ($0 &* 31) ^ ($0 >> 11)) &+ seed }
    }

    /// `bytes` as a body of pieces of `piece` bytes.
    static func body(_ bytes: [UInt8], piece: Int = 65_536) -> AsyncStream<ByteBuffer> {
        let (stream, continuation) = AsyncStream.makeStream(of: ByteBuffer.self)
        var start = 0
        while start < bytes.count {
            let end = min(start + piece, bytes.count)
            continuation.yield(ByteBuffer(bytes: bytes[start..<end]))
            start = end
        }
        continuation.finish()
        return stream
    }

    static func key(_ name: String, owner: String = "ada") -> UploadKey {
        UploadKey(owner: owner, name: name, id: "upload-\(name)-0123456789")
    }

    static func sha256(_ bytes: [UInt8]) -> String { SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined() }

    static func metadata(_ name: String, _ bytes: [UInt8], owner: String = "ada") -> StoredFile {
        StoredFile(
            name: name, size: Int64(bytes.count), contentType: "application/octet-stream", sha256: sha256(bytes), owner: owner,
            updatedAt: Date(), location: "")
    }

    /// Stores `bytes` as the file `name` through a pending upload, as a `PUT` does.
    @discardableResult
    static func put(_ files: any FileStorage, _ name: String, _ bytes: [UInt8], owner: String = "ada") async throws
        -> StoredFile
    {
        let key = key(name, owner: owner)
        let size = try await files.appendUpload(key, at: 0, body: body(bytes, piece: 100_003)) { _ in }
        #expect(size == Int64(bytes.count))
        try await files.completeUpload(key, as: metadata(name, bytes, owner: owner))
        return try #require(try await files.file(named: name))
    }

    /// The bytes of `range` of `file`, and the largest piece they came in.
    static func read(_ files: any FileStorage, _ file: StoredFile, _ range: Range<Int64>) async throws -> ([UInt8], Int, Int) {
        var received: [UInt8] = []
        var largest = 0
        var pieces = 0
        try await files.read(file, range: range) { piece in
            largest = max(largest, piece.readableBytes)
            pieces += 1
            received.append(contentsOf: piece.readableBytesView)
        }
        return (received, largest, pieces)
    }

    static func pendingBytes(_ files: any FileStorage, _ key: UploadKey) async throws -> [UInt8] {
        var received: [UInt8] = []
        try await files.readUpload(key) { received.append(contentsOf: $0.readableBytesView) }
        return received
    }

    // MARK: Tests

    @Test("ranges come back exactly, in pieces of at most a chunk; the whole file in one piece per chunk", arguments: kinds)
    func ranges(_ kind: Kind) async throws {
        try await withStore(kind) { fixture in
            let bytes = Self.bytes(3 * Self.chunk + 1_001)
            let file = try await Self.put(fixture.files, "ranges.bin", bytes)
            #expect(file.size == Int64(bytes.count))
            #expect(file.sha256 == Self.sha256(bytes))
            let whole = try await Self.read(fixture.files, file, 0..<file.size)
            #expect(whole.0 == bytes)
            #expect(whole.2 == 4)
            let chunk = Int64(Self.chunk)
            let ranges: [Range<Int64>] = [
                0..<1, 5..<chunk + 5, chunk - 1..<chunk + 1, chunk..<2 * chunk, 2 * chunk + 3..<file.size,
                file.size - 1..<file.size, 100..<file.size - 100, 7..<7,
            ]
            for range in ranges {
                let (received, largest, _) = try await Self.read(fixture.files, file, range)
                #expect(received == Array(bytes[Int(range.lowerBound)..<Int(range.upperBound)]), "range \(range)")
                #expect(largest <= Self.chunk)
            }
            // Another instance reads the same file.
            let other = try await fixture.another()
            let seen = try #require(try await other.file(named: "ranges.bin"))
            #expect(try await Self.read(other, seen, 10..<20).0 == Array(bytes[10..<20]))
        }
    }

    @Test(
        "an upload resumes from its offset: what arrived before a broken body stays, a wrong offset or size is refused",
        arguments: kinds)
    func resume(_ kind: Kind) async throws {
        try await withStore(kind) { fixture in
            let files = fixture.files
            let bytes = Self.bytes(700_000, seed: 3)
            let key = Self.key("resumed.bin")
            #expect(try await files.uploadOffset(key) == nil)
            #expect(try await files.appendUpload(key, at: 0, body: Self.body(Array(bytes[..<300_000]))) { _ in } == 300_000)
            #expect(try await files.uploadOffset(key) == 300_000)

            // A body that breaks after 50,000 bytes: those stay.
            struct Broken: Error {}
            let (broken, feed) = AsyncThrowingStream.makeStream(of: ByteBuffer.self)
            feed.yield(ByteBuffer(bytes: bytes[300_000..<350_000]))
            feed.finish(throwing: Broken())
            await #expect(throws: Broken.self) { _ = try await files.appendUpload(key, at: 300_000, body: broken) { _ in } }
            #expect(try await files.uploadOffset(key) == 350_000)
            #expect(try await Self.pendingBytes(files, key) == Array(bytes[..<350_000]))

            // Another instance sees the same upload.
            let other = try await fixture.another()
            #expect(try await other.uploadOffset(key) == 350_000)
            await #expect(throws: PendingUploadMoved.self) {
                _ = try await other.appendUpload(key, at: 300_000, body: Self.body(Array(bytes[300_000...]))) { _ in }
            }
            await #expect(throws: PendingUploadMoved.self) {
                try await other.completeUpload(key, as: Self.metadata("resumed.bin", bytes))
            }
            #expect(try await other.appendUpload(key, at: 350_000, body: Self.body(Array(bytes[350_000...]))) { _ in } == 700_000)
            try await other.completeUpload(key, as: Self.metadata("resumed.bin", bytes))
            #expect(try await files.uploadOffset(key) == nil)
            let file = try #require(try await files.file(named: "resumed.bin"))
            #expect(try await Self.read(files, file, 0..<file.size).0 == bytes)
            await #expect(throws: PendingUploadMoved.self) {
                try await files.completeUpload(key, as: Self.metadata("resumed.bin", bytes))
            }
            // An upload of nothing is a file of nothing.
            let empty = try await Self.put(files, "empty.bin", [])
            #expect(try await Self.read(files, empty, 0..<0).0.isEmpty)
        }
    }

    @Test(
        "replacing a file: a reader gets the old bytes or stops short, never a mix; the old bytes are removed", arguments: kinds)
    func replace(_ kind: Kind) async throws {
        try await withStore(kind) { fixture in
            let files = fixture.files
            let old = Self.bytes(3 * Self.chunk + 17, seed: 5)
            let new = Self.bytes(Self.chunk + 9, seed: 9)
            let file = try await Self.put(files, "doc.bin", old)
            var received: [UInt8] = []
            var replaced = false
            do {
                try await files.read(file, range: 0..<file.size) { piece in
                    received.append(contentsOf: piece.readableBytesView)
                    if !replaced {
                        replaced = true
                        try await Self.put(files, "doc.bin", new)
                    }
                }
                #expect(received == old, "a reader that finished read the old bytes only")
            } catch {
                #expect(received.count < old.count)
                #expect(received == Array(old.prefix(received.count)), "a reader that stopped read old bytes only")
            }
            #expect(replaced)
            let current = try #require(try await files.file(named: "doc.bin"))
            #expect(current.sha256 == Self.sha256(new))
            #expect(try await Self.read(files, current, 0..<current.size).0 == new)
            #expect(try await fixture.storedPieces() == (fixture.postgres == nil ? 1 : 2))

            #expect(try await files.deleteFile(named: "doc.bin"))
            #expect(try await files.deleteFile(named: "doc.bin") == false)
            #expect(try await files.file(named: "doc.bin") == nil)
            #expect(try await fixture.storedPieces() == 0)
        }
    }

    @Test(
        "usage: each owner's files, bytes and pending uploads, kept up to date and the same in another instance", arguments: kinds
    )
    func usage(_ kind: Kind) async throws {
        try await withStore(kind) { fixture in
            let files = fixture.files
            try await Self.put(files, "a1.bin", Self.bytes(1_000))
            try await Self.put(files, "a2.bin", Self.bytes(300_000))
            try await Self.put(files, "b1.bin", Self.bytes(5), owner: "bob")
            let pending = Self.key("a3.bin")
            _ = try await files.appendUpload(pending, at: 0, body: Self.body(Self.bytes(70_000))) { _ in }
            #expect(
                try await files.usage(owner: "ada")
                    == FileUsage(fileBytes: 301_000, files: 2, pendingUploads: 1, pendingBytes: 70_000))
            #expect(try await files.usage(owner: "bob") == FileUsage(fileBytes: 5, files: 1))
            #expect(try await files.usage(owner: "nobody") == FileUsage())

            try await Self.put(files, "a1.bin", Self.bytes(10))
            _ = try await files.appendUpload(pending, at: 70_000, body: Self.body(Self.bytes(30_000))) { _ in }
            let expected = FileUsage(fileBytes: 300_010, files: 2, pendingUploads: 1, pendingBytes: 100_000)
            #expect(try await files.usage(owner: "ada") == expected)
            #expect(try await fixture.another().usage(owner: "ada") == expected)

            #expect(try await files.deleteFile(named: "a2.bin"))
            try await files.deleteUpload(pending)
            #expect(try await files.usage(owner: "ada") == FileUsage(fileBytes: 10, files: 1))
            #expect(try await fixture.another().usage(owner: "bob") == FileUsage(fileBytes: 5, files: 1))
        }
    }

    @Test(
        "an upload untouched for its lifetime is gone: no offset, no append, swept with its bytes; one written to stays",
        arguments: kinds)
    func expiry(_ kind: Kind) async throws {
        let clock = MovableClock()
        try await withStore(kind, lifetime: .seconds(3600), clock: clock) { fixture in
            let files = fixture.files
            let old = Self.key("old.bin")
            let fresh = Self.key("fresh.bin")
            _ = try await files.appendUpload(old, at: 0, body: Self.body(Self.bytes(1_000))) { _ in }
            clock.advance(.seconds(30 * 60))
            _ = try await files.appendUpload(fresh, at: 0, body: Self.body(Self.bytes(10))) { _ in }
            clock.advance(.seconds(31 * 60))

            #expect(try await files.uploadOffset(old) == nil)
            #expect(try await files.uploadOffset(fresh) == 10)
            await #expect(throws: PendingUploadMoved.self) {
                _ = try await files.appendUpload(old, at: 1_000, body: Self.body(Self.bytes(5))) { _ in }
            }
            #expect(try await files.usage(owner: "ada").pendingUploads == 2, "expired, not yet swept")
            #expect(try await files.sweepUploads() == 1)
            #expect(try await files.sweepUploads() == 0)
            #expect(try await files.usage(owner: "ada") == FileUsage(pendingUploads: 1, pendingBytes: 10))
            #expect(try await fixture.storedPieces() == 1, "the fresh upload's bytes only")

            // Written to at 61 minutes: alive at 120, gone at 122.
            _ = try await files.appendUpload(fresh, at: 10, body: Self.body([])) { _ in }
            clock.advance(.seconds(59 * 60))
            #expect(try await files.sweepUploads() == 0)
            #expect(try await files.uploadOffset(fresh) == 10)
            clock.advance(.seconds(2 * 60))
            #expect(try await files.uploadOffset(fresh) == nil)
            // An expired upload starts again from 0.
            #expect(try await files.appendUpload(fresh, at: 0, body: Self.body(Self.bytes(7))) { _ in } == 7)
            #expect(try await files.uploadOffset(fresh) == 7)
            #expect(try await files.usage(owner: "ada") == FileUsage(pendingUploads: 1, pendingBytes: 7))
        }
    }

    @Test(
        "two instances writing one upload: the request whose offset moved stops with PendingUploadMoved and stores nothing",
        .enabled(if: ScratchDatabase.backends.contains(.postgres)))
    func racingAppends() async throws {
        try await withStore(.postgres) { fixture in
            let key = Self.key("raced.bin")
            let start = Self.bytes(1_000)
            _ = try await fixture.files.appendUpload(key, at: 0, body: Self.body(start)) { _ in }
            let other = try await fixture.another()
            let (body, feed) = AsyncStream.makeStream(of: ByteBuffer.self)
            let (seen, saw) = AsyncStream.makeStream(of: Void.self)
            let files = fixture.files
            let first = Task { try await files.appendUpload(key, at: 1_000, body: body) { _ in saw.yield() } }
            feed.yield(ByteBuffer(bytes: Self.bytes(100, seed: 7)))
            var iterator = seen.makeAsyncIterator()
            _ = await iterator.next()  // the first request holds 100 bytes, not stored yet
            let winner = Self.bytes(500, seed: 8)
            #expect(try await other.appendUpload(key, at: 1_000, body: Self.body(winner)) { _ in } == 1_500)
            feed.finish()
            await #expect(throws: PendingUploadMoved.self) { _ = try await first.value }
            #expect(try await fixture.files.uploadOffset(key) == 1_500)
            #expect(try await Self.pendingBytes(fixture.files, key) == start + winner)
        }
    }
}
