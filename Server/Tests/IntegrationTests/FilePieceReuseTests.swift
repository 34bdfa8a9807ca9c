import Foundation
import NIOCore
import OutpostServer
import OutpostTestSupport
import Testing

/// A download reads its pieces into one reused buffer (`PieceBuffer`); these check that reuse
/// never changes a byte: not of a piece the connection still holds, not of a range that starts or
/// ends inside a piece.
@Suite("File download piece reuse", .closesWhatItOpens)
struct FilePieceReuseTests {
    static let piece = 256 * 1024

    /// Uploads a file of `size` bytes through the real server and client, then opens the server's
    /// file folder directly: the bytes, the storage and the stored file.
    static func withStoredFile(
        size: Int, _ body: ([UInt8], FolderFileStorage, StoredFile) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-pieces-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await FilesIntegrationTests.withFixture(configure: { $0.filesDirectory = directory.path }) { fixture in
            let (source, _) = try fixture.makeFile("pieces.bin", size: size)
            _ = try await fixture.client("ada").files.upload(from: source, as: "pieces.bin").result
            let storage = try await FolderFileStorage.open(directory: directory.path)
            let file = try #require(try await storage.file(named: "pieces.bin"))
            try await body(Array(try Data(contentsOf: source)), storage, file)
        }
    }

    /// The same file read twice: by a reader that lets go of each piece (one buffer serves them
    /// all) and by one that holds every piece until the end (as a connection that has not sent them
    /// yet does: each needs a buffer of its own, and none may be overwritten by the next).
    @Test(
        "pieces are read into a reused buffer only when the reader let go of them; every byte arrives as stored",
        arguments: [false, true])
    func reuse(holding: Bool) async throws {
        let size = 5 * Self.piece + 12_345
        try await Self.withStoredFile(size: size) { bytes, storage, file in
            var received: [UInt8] = []
            var held: [ByteBuffer] = []
            var pieces = 0
            let allocations = try await storage.readCountingPieces(file, range: 0..<Int64(size)) { chunk in
                pieces += 1
                if holding {
                    held.append(chunk)
                } else {
                    received.append(contentsOf: chunk.readableBytesView)
                }
            }
            // Held pieces are checked only now, after every later piece was read: a buffer reused
            // in place would show the last piece's bytes in every held one.
            if holding { received = held.flatMap { Array($0.readableBytesView) } }
            #expect(pieces == 6)
            #expect(received == bytes)
            // A storage that allocated per piece reports 6 for the reader that lets go; one that
            // reused a held buffer reports fewer than 6 for the one that holds.
            #expect(allocations == (holding ? 6 : 1))
        }
    }

    @Test("ranges that start and end inside pieces come back exactly")
    func ranges() async throws {
        let size = 3 * Self.piece + 1_001
        try await Self.withStoredFile(size: size) { bytes, storage, file in
            let piece = Int64(Self.piece)
            let ranges: [Range<Int64>] = [
                0..<1, 5..<piece + 5, piece - 1..<piece + 1, piece..<2 * piece, 2 * piece + 3..<Int64(size),
                Int64(size) - 1..<Int64(size), 100..<Int64(size) - 100,
            ]
            for range in ranges {
                var received: [UInt8] = []
                var largest = 0
                _ = try await storage.readCountingPieces(file, range: range) { chunk in
                    largest = max(largest, chunk.readableBytes)
                    received.append(contentsOf: chunk.readableBytesView)
                }
                #expect(received == Array(bytes[Int(range.lowerBound)..<Int(range.upperBound)]), "range \(range)")
                #expect(largest <= Self.piece)
            }
        }
    }
}
