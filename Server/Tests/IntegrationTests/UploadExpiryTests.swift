import Foundation
import Logging
import OutpostServer
import OutpostServerTesting
import OutpostTestSupport
import Testing

/// Abandoned resumable uploads expire after `uploadLifetime` while the server runs. The server's
/// clock is moved forward instead of waited for; the sweep the server runs on a timer is called
/// here on a store of the same folder or database. Runs on PostgreSQL with
/// `OUTPOST_TEST_LIVE_BACKEND=postgres`.
@Suite("Upload expiry", .closesWhatItOpens)
struct UploadExpiryTests {
    @Test(
        "an upload untouched for the upload lifetime answers 404 upload_not_found; the sweep removes it; it starts again from 0")
    func expired() async throws {
        let clock = MovableClock()
        try await FilesIntegrationTests.withFixture(configure: {
            $0.uploadLifetime = .seconds(3600)
            $0.uploadClock = clock.now
        }) { fixture in
            let token = try #require(try await fixture.auth.passwordTokens("ada")["access_token"] as? String)
            let path = "/files/abandoned.bin?upload=abandoned0123456789"
            func put(offset: Int, complete: Bool, _ body: String) async throws -> RawHTTP.Reply {
                try await fixture.raw(
                    "PUT \(path) HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\nUpload-Offset: \(offset)\r\n"
                        + "Upload-Complete: ?\(complete ? 1 : 0)\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
                )
            }
            func status() async throws -> RawHTTP.Reply {
                try await fixture.raw(
                    "GET \(path) HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\nConnection: close\r\n\r\n")
            }
            let first = try await put(offset: 0, complete: false, String(repeating: "a", count: 1000))
            #expect(first.status == 204)
            #expect(first.headers["upload-offset"] == "1000")
            clock.advance(.seconds(59 * 60))
            #expect(try await status().headers["upload-offset"] == "1000", "alive within the lifetime")

            // A store of the server's files, on a clock of its own, moved past the lifetime only
            // once it is open (opening the folder removes expired uploads too).
            let sweeping = MovableClock()
            let (files, close) = try await Self.openFiles(fixture.server, lifetime: .seconds(3600), clock: sweeping)
            do {
                clock.advance(.seconds(2 * 60))
                let gone = try await status()
                #expect(gone.status == 404)
                #expect(gone.body.contains("upload_not_found"))
                let more = try await put(offset: 1000, complete: true, "b")
                #expect(more.status == 404)
                #expect(more.body.contains("upload_not_found"))

                sweeping.advance(.seconds(61 * 60))
                #expect(try await files.sweepUploads() == 1)
                #expect(try await files.sweepUploads() == 0)
                let again = try await put(offset: 0, complete: true, "hello")
                #expect(again.status == 201, "\(again.text)")
                #expect(try await files.file(named: "abandoned.bin")?.size == 5)
            } catch {
                await close()
                throw error
            }
            await close()
        }
    }

    /// A second store of `server`'s files (its folder, or its PostgreSQL database), whose uploads
    /// expire after `lifetime` by `clock`.
    static func openFiles(_ server: LiveServer, lifetime: Duration, clock: MovableClock) async throws -> (
        any FileStorage, @Sendable () async -> Void
    ) {
        guard server.scratch != nil else {
            let folder = server.folder.appendingPathComponent("test-files").path
            return (try await FolderFileStorage.open(directory: folder, uploadLifetime: lifetime, now: clock.now), {})
        }
        let storage = try #require(try await server.openStorage() as? PostgresStorage)
        return (
            PostgresFileStorage(storage: storage, uploadLifetime: lifetime, now: clock.now), { try? await storage.close() }
        )
    }
}
