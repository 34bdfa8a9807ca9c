import Foundation
import Outpost
@_spi(OutpostInternal) import OutpostSupport
import OutpostTestSupport
import Synchronization
import Testing

/// `BackgroundFiles` over `TransportTransferSession` (the in-process double of a background
/// `URLSession`) against the live server: signed requests made ahead of time, the checksum rules,
/// resumption from a partial file, and a transfer finished by the coordinator of a later launch.
@Suite("Background transfers", .closesWhatItOpens)
struct BackgroundTransferIntegrationTests {
    typealias Fixture = FilesIntegrationTests.Fixture

    static func session(_ client: OutpostClient, _ fixture: Fixture, holding: Bool = false) -> TransportTransferSession {
        // An identifier of its own: one BackgroundFiles per identifier in the (shared) test process.
        TransportTransferSession(
            transport: client.transport, identifier: "test.transfers.\(UUID().uuidString)",
            folder: fixture.folder.appendingPathComponent("received-\(UUID().uuidString)"), holdingTasks: holding)
    }

    static func background(_ client: OutpostClient, _ session: TransportTransferSession, _ fixture: Fixture) -> BackgroundFiles {
        client.files.background(session, folder: fixture.folder.appendingPathComponent("work"))
    }

    /// The next result, or a recorded failure after 30 s.
    static func nextResult(_ background: BackgroundFiles) async throws -> BackgroundTransferResult {
        let outcome = await withTimeLimit(.seconds(30)) { await background.results.first { _ in true } }
        guard case .value(let result?) = outcome else {
            Issue.record("no result within 30 s")
            throw CancellationError()
        }
        return result
    }

    @Test("a file goes up and comes back through the coordinator, signed, with its SHA-256 checked")
    func roundTrip() async throws {
        try await FilesIntegrationTests.withFixture { fixture in
            let size = 1024 * 1024 + 17
            let (source, sha) = try fixture.makeFile("source.bin", size: size)
            let client = try await fixture.client("ada")
            let background = Self.background(client, Self.session(client, fixture), fixture)
            let upload = try await background.upload(from: source, as: "clip.bin", contentType: "video/mp4")
            let uploaded = try await Self.nextResult(background)
            #expect(uploaded.transfer == upload)
            guard case .uploaded(let file) = uploaded.outcome else {
                Issue.record("expected an upload, got \(uploaded.outcome)")
                return
            }
            #expect(file.file.sha256 == sha)
            #expect(file.file.size == Int64(size))
            #expect(file.file.owner == nil || file.file.owner?.isEmpty == false)

            let target = fixture.folder.appendingPathComponent("copy.bin")
            _ = try await background.download("clip.bin", to: target)
            let downloaded = try await Self.nextResult(background)
            guard case .downloaded(let copy) = downloaded.outcome else {
                Issue.record("expected a download, got \(downloaded.outcome)")
                return
            }
            #expect(copy.sha256 == sha)
            #expect(copy.contentType == "video/mp4")
            #expect(try Fixture.sha256(of: target) == sha)
            background.stop()
        }
    }

    @Test("an anonymous upload is refused by the server and reported, not retried")
    func anonymousUpload() async throws {
        try await FilesIntegrationTests.withFixture { fixture in
            let (source, _) = try fixture.makeFile("source.bin", size: 1000)
            let client = try await fixture.client(nil)
            let background = Self.background(client, Self.session(client, fixture), fixture)
            _ = try await background.upload(from: source, as: "anonymous.bin")
            let result = try await Self.nextResult(background)
            guard case .failed(let error) = result.outcome else {
                Issue.record("expected a refusal, got \(result.outcome)")
                return
            }
            #expect(error.status == 401 || error.status == 403)
            #expect(try await client.files.info("anonymous.bin") == nil)
        }
    }

    @Test("a download goes on from the bytes an earlier one left in .part")
    func resumedDownload() async throws {
        try await FilesIntegrationTests.withFixture { fixture in
            let size = 600 * 1024
            let (source, sha) = try fixture.makeFile("source.bin", size: size)
            let client = try await fixture.client("ada")
            _ = try await client.files.upload(from: source, as: "big.bin").result
            let info = try #require(try await client.files.info("big.bin"))
            let target = fixture.folder.appendingPathComponent("big.bin")
            let kept = 200 * 1024
            try Data(try Data(contentsOf: source).prefix(kept)).write(to: URL(fileURLWithPath: target.path + ".part"))
            try Data(info.etag.utf8).write(to: URL(fileURLWithPath: target.path + ".part.etag"))

            let background = Self.background(client, Self.session(client, fixture), fixture)
            _ = try await background.download("big.bin", to: target)
            let result = try await Self.nextResult(background)
            guard case .downloaded(let downloaded) = result.outcome else {
                Issue.record("expected a download, got \(result.outcome)")
                return
            }
            #expect(downloaded.resumedFrom == Int64(kept))
            #expect(downloaded.sha256 == sha)
            #expect(try Fixture.sha256(of: target) == sha)
            #expect(!FileManager.default.fileExists(atPath: target.path + ".part"))
        }
    }

    @Test("a file changed after it was hashed is refused by the server's digest check, and nothing is stored")
    func digestMismatch() async throws {
        try await FilesIntegrationTests.withFixture { fixture in
            let (source, _) = try fixture.makeFile("source.bin", size: 64 * 1024)
            let client = try await fixture.client("ada")
            let session = Self.session(client, fixture, holding: true)
            let background = Self.background(client, session, fixture)
            _ = try await background.upload(from: source, as: "changed.bin")
            // The bytes change while the task waits for the system to send it.
            try Data(repeating: 7, count: 64 * 1024).write(to: source)
            session.startHeldTasks()
            let result = try await Self.nextResult(background)
            guard case .failed(let error) = result.outcome else {
                Issue.record("expected a refusal, got \(result.outcome)")
                return
            }
            #expect(error.status == 422)
            #expect(error.serverCode == "checksum_mismatch")
            #expect(try await client.files.info("changed.bin") == nil)
        }
    }

    @Test("transfers started by one launch are finished by the coordinator of the next, which then calls the system's handler")
    func relaunch() async throws {
        try await FilesIntegrationTests.withFixture { fixture in
            let (source, sha) = try fixture.makeFile("source.bin", size: 300 * 1024)
            let client = try await fixture.client("ada")
            _ = try await client.files.upload(from: source, as: "existing.bin").result
            let session = Self.session(client, fixture, holding: true)
            let target = fixture.folder.appendingPathComponent("existing-copy.bin")

            let earlier = Self.background(client, session, fixture)
            let upload = try await earlier.upload(from: source, as: "later.bin")
            let download = try await earlier.download("existing.bin", to: target)
            earlier.stop()

            let later = Self.background(client, session, fixture)
            let (calls, call) = AsyncStream.makeStream(of: Void.self)
            later.handleEvents { call.yield() }
            session.startHeldTasks()
            var finished: [BackgroundTransfer: BackgroundTransferResult.Outcome] = [:]
            for _ in 0..<2 {
                let result = try await Self.nextResult(later)
                finished[try #require(result.transfer)] = result.outcome
            }
            guard case .uploaded(let uploaded) = finished[upload] else {
                Issue.record("the upload did not finish: \(String(describing: finished[upload]))")
                return
            }
            #expect(uploaded.file.sha256 == sha)
            guard case .downloaded(let downloaded) = finished[download] else {
                Issue.record("the download did not finish: \(String(describing: finished[download]))")
                return
            }
            #expect(downloaded.sha256 == sha)
            #expect(try Fixture.sha256(of: target) == sha)
            let called = await withTimeLimit(.seconds(20)) { await calls.first { _ in true } != nil }
            guard case .value(true) = called else {
                Issue.record("the system's completion handler was not called")
                return
            }
        }
    }
}
