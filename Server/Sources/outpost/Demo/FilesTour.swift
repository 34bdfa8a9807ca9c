import Foundation
import HTTPTypes
import Outpost
import OutpostServer
import Synchronization

/// A file larger than any request body the server takes: uploaded with progress, downloaded,
/// broken mid-download and resumed, and checked byte for byte; then a page with a script, which
/// the server serves as an attachment that cannot run as its origin.
enum FilesTour {
    static func run(baseURL: URL, providerSecret: String, log: TourLog) async throws {
        log.section("Files")
        let plain = OutpostClient(configuration: .init(baseURL: baseURL))
        defer { Task { try? await plain.shutdown() } }
        _ = try await plain.send(.post("/users", json: ["username": "margaret", "password": "demo-password-1"]))
        let margaret = AuthTour.authenticator(baseURL: baseURL, client: plain, clientID: OutpostServer.cliClientID)
        _ = try await margaret.signIn(
            provider: "outpost.test",
            data: [
                "user": "margaret", "signature": .string(TestProvider.signature(user: "margaret", secret: providerSecret)),
            ])
        let api = OutpostClient(configuration: .init(baseURL: baseURL), middlewares: [AuthMiddleware(authenticator: margaret)])
        defer { Task { try? await api.shutdown() } }
        log.step("margaret signs in; uploads go through AuthMiddleware like every other request")

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-files-tour-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let size = 12 * 1024 * 1024
        let source = folder.appendingPathComponent("telescope.raw")
        var generator = SystemRandomNumberGenerator()
        let words = (0..<size / 8).map { _ in generator.next() }
        let original = words.withUnsafeBytes { Data($0) }
        try original.write(to: source)
        log.step("A 12 MiB file (the server's JSON body limit is 1 MiB)")

        let upload = api.files.upload(from: source, as: "telescope.raw", contentType: "application/octet-stream")
        try await report(upload.progress, log: log)
        let stored = try await upload.result.file
        log.step("PUT /files/telescope.raw streamed from disk → \(stored.size) bytes, ETag \(stored.etag)")
        log.detail("the server checked the SHA-256 the SDK sent at the end: \(stored.sha256.prefix(16))…")

        let copy = folder.appendingPathComponent("copy.raw")
        let download = plain.files.download("telescope.raw", to: copy)
        try await report(download.progress, log: log)
        let fetched = try await download.result
        log.step("GET /files/telescope.raw streamed to disk; bytes match: \(try Data(contentsOf: copy) == original)")

        // A connection that drops after 5 MiB, and no automatic retry: the download fails, and the
        // bytes that arrived stay in copy2.raw.part.
        let dropping = OutpostClient(
            configuration: .init(baseURL: baseURL), ownedTransport: DroppingTransport(dropAfter: 5 * 1024 * 1024))
        defer { Task { try? await dropping.shutdown() } }
        let second = folder.appendingPathComponent("copy2.raw")
        do {
            _ = try await OutpostFiles(client: dropping, options: .init(automaticResumes: 0)).download(
                "telescope.raw", to: second
            )
            .result
        } catch let error as OutpostError {
            let kept = (try? FileManager.default.attributesOfItem(atPath: second.path + ".part")[.size] as? Int) ?? 0
            log.step("A second download loses its connection after \(kept / 1_048_576) MiB (\(error.code))")
        }
        let resumed = try await plain.files.download("telescope.raw", to: second).result
        log.step("Run again: Range: bytes=\(resumed.resumedFrom)- with If-Range: \(fetched.etag ?? "-") → 206, appended")
        log.detail("bytes match: \(try Data(contentsOf: second) == original), SHA-256 checked against the server's Repr-Digest")

        // What one user uploads may be opened by another: a page with a script is served so that it
        // never runs as the server's origin.
        let page = folder.appendingPathComponent("page.html")
        try Data("<html><script>fetch('/device')</script></html>".utf8).write(to: page)
        _ = try await api.files.upload(from: page, as: "page.html", contentType: "text/html").result
        let served = try await plain.send(.get("/files/page.html"))
        log.step("PUT /files/page.html (text/html with a script), GET it as another visitor:")
        for name in ["Content-Disposition", "X-Content-Type-Options", "Content-Security-Policy"] {
            log.detail("\(name): \(served.headerFields[HTTPField.Name(name)!] ?? "-")")
        }
        try await api.files.delete("page.html")

        try await api.files.delete("telescope.raw")
        log.step("DELETE /files/telescope.raw (owner only) → gone: \(try await plain.files.info("telescope.raw") == nil)")
    }

    /// Logs the progress at each quarter.
    static func report(_ progress: AsyncStream<FileTransferProgress>, log: TourLog) async throws {
        var quarter = 0
        for await step in progress {
            guard let fraction = step.fractionDone, Int(fraction * 4) > quarter else { continue }
            quarter = Int(fraction * 4)
            log.detail("progress \(quarter * 25)%: \(step.bytesDone) of \(step.totalBytes ?? 0) bytes")
        }
    }
}

/// The default transport, except that a streamed response body breaks after `dropAfter` bytes, as
/// when a network goes away mid-download.
final class DroppingTransport: ClientTransport {
    #if canImport(FoundationNetworking)
        let base: any ClientTransport = AsyncHTTPClientTransport()
    #else
        let base: any ClientTransport = URLSessionTransport()
    #endif
    let dropAfter: Int

    init(dropAfter: Int) { self.dropAfter = dropAfter }

    func send(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> (HTTPResponse, Data) {
        try await base.send(request, body: body, options: options)
    }

    func stream(_ request: HTTPRequest, body: ByteStream?, options: TransportOptions) async throws -> (HTTPResponse, ByteStream) {
        let (head, stream) = try await base.stream(request, body: body, options: options)
        let received = Counter()
        let limit = dropAfter
        return (
            head,
            ByteStream(length: stream.length) {
                guard received.value < limit else {
                    throw OutpostError(.connectionLost, "The demo's network dropped the connection")
                }
                var iterator = stream.makeAsyncIterator()
                let chunk = try await iterator.next()
                received.add(chunk?.count ?? 0)
                return chunk
            }
        )
    }

    func shutdown() async throws { try await base.shutdown() }

    final class Counter: Sendable {
        private let count = Mutex(0)
        var value: Int { count.withLock { $0 } }
        func add(_ bytes: Int) { count.withLock { $0 += bytes } }
    }
}
