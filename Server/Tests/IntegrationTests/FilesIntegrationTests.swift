import Crypto
import Foundation
import HTTPTypes
import Outpost
import OutpostServer
import OutpostTestSupport
import Synchronization
import Testing

/// `/files` through the SDK and by hand: streaming both ways, progress, resumption, ranges,
/// ownership, names and limits.
@Suite("Files", .closesWhatItOpens)
struct FilesIntegrationTests {
    /// A signed-in client per user, over a live server.
    struct Fixture {
        let auth: AuthFixture
        let folder: URL
        /// Every client made, shut down when the test ends.
        let clients = ClientRegistry()
        var server: LiveServer { auth.server }
        var port: Int { auth.server.running.port }

        func client(_ user: String?, transport: (any ClientTransport)? = nil) async throws -> OutpostClient {
            var middlewares: [any ClientMiddleware] = []
            if let user {
                let token = try #require(try await auth.passwordTokens(user)["access_token"] as? String)
                middlewares.append(HeaderMiddleware([.authorization: "Bearer \(token)"]))
            }
            let configuration = OutpostClient.Configuration(baseURL: server.baseURL)
            let client =
                if let transport {
                    OutpostClient(configuration: configuration, ownedTransport: transport, middlewares: middlewares)
                } else {
                    OutpostClient(configuration: configuration, middlewares: middlewares)
                }
            clients.list.withLock { $0.append(client) }
            return client
        }

        func shutdown() async {
            for client in clients.list.withLock({ $0 }) { try? await client.shutdown() }
        }

        /// A file of `size` pseudo-random bytes, and its SHA-256 in hex.
        func makeFile(_ name: String, size: Int) throws -> (URL, String) {
            let url = folder.appendingPathComponent(name)
            var generator = SeededBytes(seed: UInt64(size))
            var bytes = [UInt8](repeating: 0, count: size)
            for index in 0..<size { bytes[index] = generator.next() }
            let data = Data(bytes)
            try data.write(to: url)
            return (url, Self.sha256(data))
        }

        static func sha256(_ data: Data) -> String { SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined() }
        static func sha256(of url: URL) throws -> String { sha256(try Data(contentsOf: url)) }

        func raw(_ text: String) async throws -> RawHTTP.Reply {
            try await RawHTTP(port: port).exchange(text, timeout: .seconds(10))
        }
    }

    static func withFixture(
        configure: @escaping (inout ServerConfiguration) -> Void = { _ in }, _ body: (Fixture) async throws -> Void
    ) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-files-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withAuthFixture(configure: configure) { auth in
            let fixture = Fixture(auth: auth, folder: folder)
            do {
                try await body(fixture)
            } catch {
                await fixture.shutdown()
                throw error
            }
            await fixture.shutdown()
        }
    }

    /// Reads every progress step of `transfer` while it runs.
    static func steps<T>(_ transfer: FileTransfer<T>) -> Task<[FileTransferProgress], Never> {
        Task {
            var steps: [FileTransferProgress] = []
            for await step in transfer.progress { steps.append(step) }
            return steps
        }
    }

    static func expectMonotonic(_ steps: [FileTransferProgress], endingAt total: Int64) {
        #expect(!steps.isEmpty)
        #expect(zip(steps, steps.dropFirst()).allSatisfy { $0.bytesDone <= $1.bytesDone })
        #expect(steps.last?.bytesDone == total)
        #expect(steps.allSatisfy { $0.totalBytes == total })
    }

    @Test("a multi-megabyte file goes up and comes back byte for byte, with progress ending at the total")
    func roundTrip() async throws {
        try await Self.withFixture { fixture in
            let size = 6 * 1024 * 1024 + 123
            let (source, sha) = try fixture.makeFile("source.bin", size: size)
            let client = try await fixture.client("ada")
            let upload = client.files.upload(from: source, as: "video.bin", contentType: "video/mp4")
            let uploadSteps = Self.steps(upload)
            let uploaded = try await upload.result
            #expect(uploaded.file.sha256 == sha)
            #expect(uploaded.file.size == Int64(size))
            #expect(uploaded.file.contentType == "video/mp4")
            #expect(uploaded.resumedFrom == 0)
            Self.expectMonotonic(await uploadSteps.value, endingAt: Int64(size))

            let target = fixture.folder.appendingPathComponent("copy.bin")
            let download = try await fixture.client(nil).files.download("video.bin", to: target)
            let downloadSteps = Self.steps(download)
            let downloaded = try await download.result
            #expect(downloaded.sha256 == sha)
            #expect(downloaded.contentType == "video/mp4")
            #expect(try Fixture.sha256(of: target) == sha)
            #expect(!FileManager.default.fileExists(atPath: target.path + ".part"))
            Self.expectMonotonic(await downloadSteps.value, endingAt: Int64(size))

            let info = try #require(try await client.files.info("video.bin"))
            #expect(info.size == Int64(size))
            #expect(info.sha256 == sha)
        }
    }

    @Test("a download cancelled after some bytes resumes from its partial file with Range and If-Range")
    func resumedDownload() async throws {
        try await Self.withFixture { fixture in
            let size = 5 * 1024 * 1024
            let (source, sha) = try fixture.makeFile("source.bin", size: size)
            let owner = try await fixture.client("ada")
            _ = try await owner.files.upload(from: source, as: "big.bin").result
            let target = fixture.folder.appendingPathComponent("big.bin")

            // The transport holds the response body once a megabyte has arrived, until cancelled.
            let gated = PausingTransport(base: AsyncHTTPClientTransport(), pauseAfter: 1024 * 1024)
            let first = try await fixture.client(nil, transport: gated).files.download("big.bin", to: target)
            await gated.paused.wait()  // opened when the first megabyte is in
            first.cancel()
            await #expect(throws: OutpostError.self) { try await first.result }
            let partial = try FileManager.default.attributesOfItem(atPath: target.path + ".part")[.size] as? Int ?? 0
            #expect(partial >= 1024 * 1024 && partial < size)
            #expect(!FileManager.default.fileExists(atPath: target.path))

            let second = try await fixture.client(nil).files.download("big.bin", to: target)
            let steps = Self.steps(second)
            let result = try await second.result
            #expect(result.resumedFrom == Int64(partial))
            #expect(await steps.value.first?.bytesDone == Int64(partial))
            #expect(result.sha256 == sha)
            #expect(try Fixture.sha256(of: target) == sha)
        }
    }

    @Test("an upload broken mid-way goes on from the offset the server reports, and the checksum holds")
    func resumedUpload() async throws {
        try await Self.withFixture { fixture in
            let size = 4 * 1024 * 1024
            let (source, sha) = try fixture.makeFile("source.bin", size: size)
            let client = try await fixture.client("ada")
            let uploadID = "resume0123456789abcdef"
            let broken = client.files.upload(
                BrokenBytes(data: try Data(contentsOf: source), failAfter: 2 * 1024 * 1024), length: Int64(size),
                as: "doc.bin", uploadID: uploadID)
            await #expect(throws: (any Error).self) { try await broken.result }
            // The server may not have started on the broken request yet when the client asks (its
            // bytes still wait in the socket on a loaded machine): ask again until the server has
            // taken them (polled, bounded; there is no event to wait on from outside).
            let reported = try await eventually(within: .seconds(20), every: .zero) {
                try await client.files.uploadOffset(of: "doc.bin", uploadID: uploadID)
            }
            let offset = try #require(reported, "the server never reported the broken upload's offset")
            #expect(offset > 0 && offset <= 2 * 1024 * 1024)
            #expect(try await client.files.info("doc.bin") == nil)

            let resumed = try await client.files.upload(from: source, as: "doc.bin", uploadID: uploadID).result
            #expect(resumed.resumedFrom == offset)
            #expect(resumed.file.sha256 == sha)
            let target = fixture.folder.appendingPathComponent("doc.bin")
            _ = try await client.files.download("doc.bin", to: target).result
            #expect(try Fixture.sha256(of: target) == sha)
            #expect(try await client.files.uploadOffset(of: "doc.bin", uploadID: uploadID) == nil)
        }
    }

    @Test("a wrong checksum at the end is 422 and nothing is stored")
    func checksumMismatch() async throws {
        try await Self.withFixture { fixture in
            let token = try #require(try await fixture.auth.passwordTokens("ada")["access_token"] as? String)
            let digest = Data(repeating: 7, count: 32).base64EncodedString()
            let reply = try await fixture.raw(
                "PUT /files/x.txt HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\nRepr-Digest: sha-256=:\(digest):\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
            )
            #expect(reply.status == 422)
            #expect(reply.body.contains("checksum_mismatch"))
            #expect(try await fixture.raw("GET /files/x.txt HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n").status == 404)
        }
    }

    @Test("ranges: 206 with Content-Range, suffixes, 416, If-Range, If-None-Match 304, HEAD")
    func ranges() async throws {
        try await Self.withFixture { fixture in
            let text = String((0..<1000).map { Character(UnicodeScalar(UInt8(65 + $0 % 26))) })
            let url = fixture.folder.appendingPathComponent("letters.txt")
            try Data(text.utf8).write(to: url)
            let client = try await fixture.client("ada")
            let file = try await client.files.upload(from: url, as: "letters.txt", contentType: "text/plain").result.file
            func get(_ headers: String, method: String = "GET") async throws -> RawHTTP.Reply {
                try await fixture.raw("\(method) /files/letters.txt HTTP/1.1\r\nHost: a\r\n\(headers)Connection: close\r\n\r\n")
            }
            let whole = try await get("")
            #expect(whole.status == 200)
            #expect(whole.headers["content-length"] == "1000")
            #expect(whole.headers["accept-ranges"] == "bytes")
            #expect(whole.headers["etag"] == file.etag)
            #expect(whole.headers["content-type"] == "text/plain")
            #expect(whole.body == text)

            let middle = try await get("Range: bytes=10-19\r\n")
            #expect(middle.status == 206)
            #expect(middle.headers["content-range"] == "bytes 10-19/1000")
            #expect(middle.body == String(text.dropFirst(10).prefix(10)))
            let tail = try await get("Range: bytes=-5\r\n")
            #expect(tail.status == 206)
            #expect(tail.body == String(text.suffix(5)))
            let open = try await get("Range: bytes=995-\r\n")
            #expect(open.headers["content-range"] == "bytes 995-999/1000")
            let beyond = try await get("Range: bytes=2000-\r\n")
            #expect(beyond.status == 416)
            #expect(beyond.headers["content-range"] == "bytes */1000")
            let several = try await get("Range: bytes=0-1,5-6\r\n")
            #expect(several.status == 200)
            #expect(several.body == text)

            let stale = try await get("Range: bytes=10-19\r\nIf-Range: \"other\"\r\n")
            #expect(stale.status == 200)
            #expect(stale.body == text)
            let current = try await get("Range: bytes=10-19\r\nIf-Range: \(file.etag)\r\n")
            #expect(current.status == 206)
            let cached = try await get("If-None-Match: \(file.etag)\r\n")
            #expect(cached.status == 304)
            #expect(cached.body.isEmpty)
            let head = try await get("", method: "HEAD")
            #expect(head.status == 200)
            #expect(head.headers["content-length"] == "1000")
            #expect(head.body.isEmpty)
        }
    }

    @Test("only the owner replaces or deletes; writing needs a signed-in user")
    func ownership() async throws {
        try await Self.withFixture { fixture in
            let (source, _) = try fixture.makeFile("a.bin", size: 1000)
            let ada = try await fixture.client("ada")
            let bob = try await fixture.client("bob")
            let nobody = try await fixture.client(nil)
            _ = try await ada.files.upload(from: source, as: "mine.bin").result

            let refused = await #expect(throws: OutpostError.self) {
                try await bob.files.upload(from: source, as: "mine.bin").result
            }
            #expect(refused?.status == 403)
            let anonymous = await #expect(throws: OutpostError.self) {
                try await nobody.files.upload(from: source, as: "new.bin").result
            }
            #expect(anonymous?.status == 401)
            let notTheirs = await #expect(throws: OutpostError.self) { try await bob.files.delete("mine.bin") }
            #expect(notTheirs?.status == 403)
            #expect(try await nobody.files.info("mine.bin")?.size == 1000)

            _ = try await ada.files.upload(from: source, as: "mine.bin").result
            try await ada.files.delete("mine.bin")
            #expect(try await nobody.files.info("mine.bin") == nil)
        }
    }

    @Test("bad names are refused by the SDK and by the server")
    func badNames() async throws {
        try await Self.withFixture { fixture in
            let client = try await fixture.client("ada")
            for name in ["../etc/passwd", ".hidden", "", String(repeating: "a", count: 129), "a b", "a\u{0}b", "naïve"] {
                let error = await #expect(throws: OutpostError.self) { try await client.files.delete(name) }
                #expect(error?.code == .invalidRequest)
            }
            let token = try #require(try await fixture.auth.passwordTokens("ada")["access_token"] as? String)
            for path in ["/files/..%2Fsecret", "/files/.hidden", "/files/a%00b", "/files/" + String(repeating: "a", count: 129)] {
                let reply = try await fixture.raw(
                    "PUT \(path) HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx"
                )
                #expect(reply.status == 400, "\(path)")
                #expect(reply.body.contains("invalid_file_name"), "\(path)")
            }
        }
    }

    @Test("a file over the operator's limit is 413 file_too_large, with or without a declared length")
    func sizeLimit() async throws {
        try await Self.withFixture(configure: { $0.maxFileBytes = 1024 * 1024 }) { fixture in
            let (source, _) = try fixture.makeFile("big.bin", size: 1024 * 1024 + 1)
            let client = try await fixture.client("ada")
            let declared = await #expect(throws: OutpostError.self) {
                try await client.files.upload(from: source, as: "big.bin").result
            }
            #expect(declared?.status == 413)
            #expect(declared?.serverCode == "file_too_large")

            let token = try #require(try await fixture.auth.passwordTokens("ada")["access_token"] as? String)
            let chunk = String(repeating: "z", count: 64 * 1024)
            var parts: [[UInt8]] = [
                Array(
                    "PUT /files/big.bin HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                        .utf8)
            ]
            for _ in 0..<17 { parts.append(Array("10000\r\n\(chunk)\r\n".utf8)) }
            parts.append(Array("0\r\n\r\n".utf8))
            let streamed = try await RawHTTP(port: fixture.port).exchange(parts, timeout: .seconds(10))
            #expect(streamed.status == 413)
            #expect(!streamed.timedOut, "\(streamed.elapsed)")
            #expect(streamed.body.contains("file_too_large"))
            #expect(try await client.files.info("big.bin") == nil)
        }
    }

    @Test("many parallel worst-case Range headers, and the server still answers /health")
    func hostileRanges() async throws {
        try await Self.withFixture { fixture in
            let url = fixture.folder.appendingPathComponent("small.txt")
            try Data("0123456789".utf8).write(to: url)
            let client = try await fixture.client("ada")
            _ = try await client.files.upload(from: url, as: "small.txt").result
            let long = "bytes=" + Array(repeating: "0-0", count: 2000).joined(separator: ",")
            let huge = "bytes=" + String(repeating: "9", count: 5000) + "-"
            let statuses = try await withThrowingTaskGroup(of: Int?.self) { group in
                for index in 0..<64 {
                    let range = [long, huge, "bytes=-99999999999999999999", "bytes=" + String(repeating: "-", count: 4000)][
                        index % 4]
                    group.addTask {
                        try await fixture.raw(
                            "GET /files/small.txt HTTP/1.1\r\nHost: a\r\nRange: \(range)\r\nConnection: close\r\n\r\n"
                        )
                        .status
                    }
                }
                var statuses: [Int?] = []
                for try await status in group { statuses.append(status) }
                return statuses
            }
            #expect(statuses.count == 64)
            #expect(statuses.allSatisfy { $0 == 200 || $0 == 431 })
            let health = try await fixture.raw("GET /health HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
            #expect(health.status == 200)
        }
    }
}

/// Deterministic pseudo-random bytes (xorshift).
struct SeededBytes {
    var state: UInt64
    init(seed: UInt64) { state = seed | 1 }
    mutating func next() -> UInt8 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return UInt8(truncatingIfNeeded: state)
    }
}

/// The bytes of `data` in 64 KiB chunks, failing once `failAfter` bytes have been produced: an
/// upload whose source breaks mid-way.
struct BrokenBytes: AsyncSequence, Sendable {
    typealias Element = Data
    let data: Data
    let failAfter: Int

    struct Broken: Error {}

    struct AsyncIterator: AsyncIteratorProtocol {
        let data: Data
        let failAfter: Int
        var offset = 0
        mutating func next() async throws -> Data? {
            guard offset < failAfter else { throw Broken() }
            let end = Swift.min(offset + 64 * 1024, data.count)
            defer { offset = end }
            return data.subdata(in: offset..<end)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(data: data, failAfter: failAfter) }
}

/// A real transport whose first streamed response body stops after `pauseAfter` bytes and waits
/// to be cancelled: a download broken at a known point.
final class PausingTransport: ClientTransport {
    let base: any ClientTransport
    let pauseAfter: Int
    let paused = Gate()
    private let used = Mutex(false)

    init(base: any ClientTransport, pauseAfter: Int) {
        self.base = base
        self.pauseAfter = pauseAfter
    }

    func send(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> (HTTPResponse, Data) {
        try await base.send(request, body: body, options: options)
    }

    func stream(_ request: HTTPRequest, body: ByteStream?, options: TransportOptions) async throws -> (HTTPResponse, ByteStream) {
        let (head, stream) = try await base.stream(request, body: body, options: options)
        let first = used.withLock { used in
            defer { used = true }
            return !used
        }
        guard first else { return (head, stream) }
        let seen = Mutex(0)
        let limit = pauseAfter
        let paused = paused
        return (
            head,
            ByteStream(length: stream.length) {
                if seen.withLock({ $0 }) >= limit {
                    paused.open()
                    // Nothing more arrives until the transfer is cancelled.
                    let (never, keep) = AsyncStream.makeStream(of: Void.self)
                    for await _ in never {}
                    keep.finish()
                    throw CancellationError()
                }
                var iterator = stream.makeAsyncIterator()
                let chunk = try await iterator.next()
                seen.withLock { $0 += chunk?.count ?? 0 }
                return chunk
            }
        )
    }

    func shutdown() async throws { try await base.shutdown() }
}

/// The clients a test made, to shut them all down at its end.
final class ClientRegistry: Sendable {
    let list = Mutex<[OutpostClient]>([])
}
