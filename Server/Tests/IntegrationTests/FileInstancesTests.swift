import Crypto
import Foundation
import Logging
import Outpost
import OutpostServer
import OutpostServerTesting
import OutpostTestSupport
import Testing

/// `/files` with three servers on one PostgreSQL database, each with a folder of its own next to
/// its (unused) SQLite path: a file, or a pending upload, written through one instance is read
/// through the others only if it lives in the database.
@Suite("Files across PostgreSQL instances", .closesWhatItOpens, .serialized, .timeLimit(.minutes(2)))
struct FileInstancesTests {
    static let enabled = ScratchDatabase.postgresBase != nil || ScratchDatabase.postgresRequired
    static let password = "correct horse battery"

    struct Instance {
        let running: RunningServer
        let client: OutpostClient
        /// Where a folder store of this instance would keep files.
        let folder: String
        var port: Int { running.port }
    }

    /// `count` servers on one fresh PostgreSQL database with the user `ada`, each with a client
    /// signed in as her with one token (from the first instance, also given to `body`); all stopped
    /// afterwards.
    static func withInstances(_ count: Int, _ body: ([Instance], String) async throws -> Void) async throws {
        let scratch = try await ScratchDatabase.make(.postgres)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-file-instances-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let browser = TestBrowser()
        var servers: [RunningServer] = []
        var clients: [OutpostClient] = []
        do {
            let storage = try await scratch.open()
            let (client, _) = try await storage.registerClient(
                name: "File instances test", redirectURIs: [], grants: ["password"], scopes: ["records", "profile"],
                confidential: false)
            _ = try await storage.addUser(username: "ada", password: password, cost: 4)
            try await storage.close()
            for index in 0..<count {
                var logger = Logger(label: "outpost.test.files\(index)")
                logger.logLevel = .critical
                var configuration = ServerConfiguration(
                    host: "127.0.0.1", port: 0, databasePath: folder.appendingPathComponent("instance\(index).sqlite").path,
                    logger: logger)
                configuration.storageFactory = { [logger] in try await scratch.location.open(logger: logger) }
                servers.append(try await OutpostServer(configuration: configuration).start())
            }
            let page = try await browser.postForm(
                servers[0].baseURL.absoluteString + "/oauth/token",
                ["grant_type": "password", "username": "ada", "password": password, "client_id": client.id])
            let token = try #require(page.json["access_token"] as? String, "\(page.body)")
            var instances: [Instance] = []
            for (index, running) in servers.enumerated() {
                let client = OutpostClient(
                    configuration: .init(baseURL: running.baseURL),
                    middlewares: [HeaderMiddleware([.authorization: "Bearer \(token)"])])
                clients.append(client)
                let files = folder.appendingPathComponent("instance\(index)-files").path
                instances.append(Instance(running: running, client: client, folder: files))
            }
            try await body(instances, token)
        } catch {
            Issue.record(error)
        }
        for client in clients { try? await client.shutdown() }
        for running in servers { await running.stop() }
        try? await browser.shutdown()
        await scratch.remove()
        try? FileManager.default.removeItem(at: folder)
    }

    @Test(
        "an upload begun through instance 1 resumes through instance 2 and downloads whole and in part through instance 3; a delete through one is 404 through another",
        .enabled(if: enabled))
    func acrossInstances() async throws {
        try await Self.withInstances(3) { instances, token in
            let (one, two, three) = (instances[0], instances[1], instances[2])
            let size = 3 * 256 * 1024 + 4_321
            let bytes = (0..<size).map { UInt8(truncatingIfNeeded: ($0 &* 131) ^ ($0 >> 9)) }
            let sha = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
            let work = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-file-bytes-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: work) }
            let source = work.appendingPathComponent("source.bin")
            try Data(bytes).write(to: source)

            // The first 600,000 bytes through instance 1, left open.
            let uploadID = "instances0123456789abcdef"
            let first = 600_000
            let head =
                "PUT /files/shared.bin?upload=\(uploadID) HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\n"
                + "Upload-Offset: 0\r\nUpload-Complete: ?0\r\nContent-Length: \(first)\r\nConnection: close\r\n\r\n"
            let opened = try await RawHTTP(port: one.port).exchange(
                [Array(head.utf8), Array(bytes[..<first])], timeout: .seconds(30))
            #expect(opened.status == 204, "\(opened.text.prefix(300))")
            #expect(opened.headers["upload-offset"] == "\(first)")

            // Instance 2 knows the upload, and takes the rest.
            #expect(try await two.client.files.uploadOffset(of: "shared.bin", uploadID: uploadID) == Int64(first))
            let resumed = try await two.client.files.upload(from: source, as: "shared.bin", uploadID: uploadID).result
            #expect(resumed.resumedFrom == Int64(first))
            #expect(resumed.file.sha256 == sha)
            #expect(resumed.file.size == Int64(size))

            // Instance 3 serves it, whole and a range across chunks.
            let target = work.appendingPathComponent("copy.bin")
            let downloaded = try await three.client.files.download("shared.bin", to: target).result
            #expect(downloaded.sha256 == sha)
            #expect(try Data(contentsOf: target) == Data(bytes))
            let range = 300_000..<700_000
            let partial = try await RawHTTP(port: three.port).exchange(
                "GET /files/shared.bin HTTP/1.1\r\nHost: a\r\nRange: bytes=\(range.lowerBound)-\(range.upperBound - 1)\r\nConnection: close\r\n\r\n",
                timeout: .seconds(30))
            #expect(partial.status == 206)
            #expect(partial.headers["content-range"] == "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(size)")
            let end = try #require(FileDownloadMemoryTests.headEnd(partial.bytes))
            #expect(Array(partial.bytes[end...]) == Array(bytes[range]))

            // Deleted through instance 1: 404 through instances 2 and 3.
            try await one.client.files.delete("shared.bin")
            #expect(try await two.client.files.info("shared.bin") == nil)
            let gone = try await RawHTTP(port: three.port).exchange(
                "GET /files/shared.bin HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", timeout: .seconds(10))
            #expect(gone.status == 404)
            // No instance made a folder for files.
            for instance in instances { #expect(!FileManager.default.fileExists(atPath: instance.folder)) }
        }
    }
}
