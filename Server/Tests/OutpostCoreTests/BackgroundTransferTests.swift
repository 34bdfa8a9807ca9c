import Crypto
import Foundation
import HTTPTypes
@_spi(OutpostInternal) import OutpostSupport
import OutpostTestSupport
import OutpostTesting
import Synchronization
import Testing

@_spi(OutpostInternal) @testable import OutpostCore

@Suite("Background transfers", .serialized)
struct BackgroundTransferTests {
    /// A folder for one test, a file in it, and a coordinator over a scripted server.
    struct Fixture {
        let folder: URL
        let transport: ScriptedTransport
        let client: OutpostClient
        let session: TransportTransferSession

        init(
            holdingTasks: Bool = false, middlewares: [any ClientMiddleware] = [],
            answering: @escaping ScriptedTransport.ExchangeResponder
        ) throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-background-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            transport = ScriptedTransport(answering: answering)
            client = OutpostClient(
                configuration: OutpostClient.Configuration(baseURL: URL(string: "http://scripted.test")!), transport: transport,
                middlewares: middlewares)
            // An identifier of its own: one BackgroundFiles per identifier in the (shared) test process.
            session = TransportTransferSession(
                transport: transport, identifier: "test.transfers.\(UUID().uuidString)",
                folder: folder.appendingPathComponent("received"), holdingTasks: holdingTasks)
        }

        func background() -> BackgroundFiles {
            var files = client.files
            files.options.chunkSize = 4
            return files.background(session, folder: folder.appendingPathComponent("work"))
        }

        func file(_ name: String, _ text: String) throws -> URL {
            let url = folder.appendingPathComponent(name)
            try Data(text.utf8).write(to: url)
            return url
        }

        func remove() { try? FileManager.default.removeItem(at: folder) }
    }

    static func digest(_ text: String) -> String { "sha-256=:\(Data(SHA256.hash(data: Data(text.utf8))).base64EncodedString()):" }
    static func hex(_ text: String) -> String { Hex.string(SHA256.hash(data: Data(text.utf8))) }

    static func stored(_ name: String, _ text: String) -> JSONValue {
        [
            "name": .string(name), "size": .int(text.utf8.count), "content_type": "text/plain", "sha256": .string(hex(text)),
            "etag": "\"e1\"",
        ]
    }

    /// The next result, or a failure after 20 s.
    static func nextResult(_ background: BackgroundFiles) async throws -> BackgroundTransferResult {
        let outcome = await withTimeLimit(.seconds(20)) { await background.results.first { _ in true } }
        guard case .value(let result?) = outcome else {
            Issue.record("no result within 20 s")
            throw CancellationError()
        }
        return result
    }

    @Test("an upload is signed by the middlewares, carries the file's SHA-256 and ends with its one request")
    func upload() async throws {
        let text = "background bytes"
        let fixture = try Fixture(middlewares: [HeaderMiddleware([.authorization: "Bearer t1"])]) { exchange in
            ScriptedTransport.reply(201, json: Self.stored("notes.txt", text))
        }
        defer { fixture.remove() }
        let background = fixture.background()
        let source = try fixture.file("notes.txt", text)
        let transfer = try await background.upload(from: source, as: "notes.txt", contentType: "text/plain")
        let result = try await Self.nextResult(background)
        #expect(result.transfer == transfer)
        guard case .uploaded(let uploaded) = result.outcome else {
            Issue.record("expected an upload, got \(result.outcome)")
            return
        }
        #expect(uploaded.file.sha256 == Self.hex(text))
        let sent = try #require(fixture.transport.requests.only)
        #expect(sent.method == .put)
        #expect(sent.path == "/files/notes.txt")
        #expect(sent.query["upload"] == transfer.id)
        #expect(sent.header(.authorization) == "Bearer t1")
        #expect(sent.header(HTTPField.Name("Upload-Offset")!) == "0")
        #expect(sent.header(HTTPField.Name("Upload-Complete")!) == "?1")
        #expect(sent.header(HTTPField.Name("Repr-Digest")!) == Self.digest(text))
        #expect(sent.header(.contentType) == "text/plain")
        #expect(sent.body == Data(text.utf8))
    }

    /// A server whose first PUT breaks, which then holds the first 6 bytes (after `beforeOffset`),
    /// and which stores `text` as `log.txt` from the second PUT.
    static func breakingOnce(
        _ text: String, beforeOffset: @escaping @Sendable () async -> Void = {}
    ) -> ScriptedTransport.ExchangeResponder {
        let puts = Mutex(0)
        return { exchange in
            if exchange.method == .get {
                await beforeOffset()
                return ScriptedTransport.reply(200, json: ["offset": 6], headers: [HTTPField.Name("Upload-Offset")!: "6"])
            }
            if puts.withLock({
                $0 += 1; return $0
            }) == 1 {
                throw OutpostError(.connectionLost, "the connection broke")
            }
            return ScriptedTransport.reply(201, json: Self.stored("log.txt", text))
        }
    }

    @Test("a broken upload asks the server's offset and sends the rest; progress never decreases")
    func resumedUpload() async throws {
        let text = "0123456789abcdef"
        let fixture = try Fixture(answering: Self.breakingOnce(text))
        defer { fixture.remove() }
        let background = fixture.background()
        let transfer = try await background.upload(from: try fixture.file("log.txt", text), as: "log.txt")
        let result = try await Self.nextResult(background)
        guard case .uploaded(let uploaded) = result.outcome else {
            Issue.record("expected an upload, got \(result.outcome)")
            return
        }
        #expect(uploaded.resumedFrom == 6)
        let requests = fixture.transport.requests
        try #require(requests.count == 3)
        #expect(requests[1].method == .get && requests[1].query["upload"] == transfer.id)
        #expect(requests[2].header(HTTPField.Name("Upload-Offset")!) == "6")
        #expect(requests[2].header(HTTPField.Name("Repr-Digest")!) == Self.digest(text))
        #expect(requests[2].body == Data(text.utf8.dropFirst(6)))
        // The remainder written for the system is gone once the upload ended.
        #expect(!FileManager.default.fileExists(atPath: background.remainderFile(transfer.id).path))
        background.stop()
        var steps: [Int64] = []
        for await step in background.progress { steps.append(step.progress.bytesDone) }
        #expect(steps == steps.sorted() && Set(steps).count == steps.count, "progress went back: \(steps)")
        #expect(steps.last == Int64(text.utf8.count))
    }

    @Test("a download is checked against Repr-Digest and moved into place")
    func download() async throws {
        let text = "the file's bytes"
        let fixture = try Fixture { _ in
            (
                HTTPResponse(status: .ok, headerFields: [HTTPField.Name("Repr-Digest")!: Self.digest(text), .eTag: "\"e1\""]),
                Data(text.utf8)
            )
        }
        defer { fixture.remove() }
        let background = fixture.background()
        let destination = fixture.folder.appendingPathComponent("copy.txt")
        _ = try await background.download("file.txt", to: destination)
        let result = try await Self.nextResult(background)
        guard case .downloaded(let downloaded) = result.outcome else {
            Issue.record("expected a download, got \(result.outcome)")
            return
        }
        #expect(downloaded.sha256 == Self.hex(text))
        #expect(try String(contentsOf: destination, encoding: .utf8) == text)
        #expect(!FileManager.default.fileExists(atPath: destination.path + ".part"))
        // The session's received file was handed over and removed.
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.session.folder.path).isEmpty)
    }

    @Test("a download whose bytes do not match Repr-Digest is refused and leaves nothing behind")
    func digestMismatch() async throws {
        let fixture = try Fixture { _ in
            (
                HTTPResponse(status: .ok, headerFields: [HTTPField.Name("Repr-Digest")!: Self.digest("other bytes")]),
                Data("tampered".utf8)
            )
        }
        defer { fixture.remove() }
        let background = fixture.background()
        let destination = fixture.folder.appendingPathComponent("copy.txt")
        _ = try await background.download("file.txt", to: destination)
        let result = try await Self.nextResult(background)
        guard case .failed(let error) = result.outcome else {
            Issue.record("expected a refusal, got \(result.outcome)")
            return
        }
        #expect(error.code == .malformedResponse)
        #expect(error.message.contains("SHA-256"))
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        #expect(!FileManager.default.fileExists(atPath: destination.path + ".part"))
    }

    @Test("a download goes on from the bytes in .part with Range and If-Range")
    func resumedDownload() async throws {
        let text = "0123456789"
        let fixture = try Fixture { exchange in
            (
                HTTPResponse(
                    status: .partialContent,
                    headerFields: [
                        .contentRange: "bytes 4-9/10", .eTag: "\"e1\"", HTTPField.Name("Repr-Digest")!: Self.digest(text),
                    ]), Data(text.utf8.dropFirst(4))
            )
        }
        defer { fixture.remove() }
        let destination = fixture.folder.appendingPathComponent("copy.txt")
        try Data("0123".utf8).write(to: URL(fileURLWithPath: destination.path + ".part"))
        try Data("\"e1\"".utf8).write(to: URL(fileURLWithPath: destination.path + ".part.etag"))
        let background = fixture.background()
        _ = try await background.download("file.txt", to: destination)
        let result = try await Self.nextResult(background)
        guard case .downloaded(let downloaded) = result.outcome else {
            Issue.record("expected a download, got \(result.outcome)")
            return
        }
        #expect(downloaded.resumedFrom == 4)
        #expect(try String(contentsOf: destination, encoding: .utf8) == text)
        let sent = try #require(fixture.transport.requests.only)
        #expect(sent.header(.range) == "bytes=4-")
        #expect(sent.header(.ifRange) == "\"e1\"")
    }

    @Test("a task that comes back with 401 is signed again and started once more")
    func expiredToken() async throws {
        let signatures = Mutex(0)
        let signer = ClosureMiddleware { request, body, _, next in
            var request = request
            request.headerFields[.authorization] = "Bearer \(signatures.withLock { $0 += 1; return $0 })"
            return try await next(request, body)
        }
        let fixture = try Fixture(middlewares: [signer]) { exchange in
            // The token of the first signature has expired; later ones are fresh.
            guard exchange.header(.authorization) != "Bearer 1" else {
                return ScriptedTransport.reply(401, json: ["error": ["code": "invalid_token", "message": "expired"]])
            }
            return ScriptedTransport.reply(201, json: Self.stored("a.txt", "abc"))
        }
        defer { fixture.remove() }
        let background = fixture.background()
        _ = try await background.upload(from: try fixture.file("a.txt", "abc"), as: "a.txt")
        let result = try await Self.nextResult(background)
        guard case .uploaded = result.outcome else {
            Issue.record("expected an upload, got \(result.outcome)")
            return
        }
        let puts = fixture.transport.requests.filter { $0.method == .put }
        #expect(puts.map { $0.header(.authorization) } == ["Bearer 1", "Bearer 3"])
    }

    @Test("a transfer started before a relaunch is finished by a new coordinator, then the system's handler is called")
    func relaunch() async throws {
        let text = "survives a relaunch"
        let fixture = try Fixture(holdingTasks: true) { _ in
            (HTTPResponse(status: .ok, headerFields: [HTTPField.Name("Repr-Digest")!: Self.digest(text)]), Data(text.utf8))
        }
        defer { fixture.remove() }
        let destination = fixture.folder.appendingPathComponent("copy.txt")
        let first = fixture.background()
        let transfer = try await first.download("file.txt", to: destination)
        first.stop()
        #expect(fixture.transport.requests.isEmpty, "the task ran before the relaunch")

        let second = fixture.background()
        let (calls, call) = AsyncStream.makeStream(of: Void.self)
        second.handleEvents { call.yield() }
        fixture.session.startHeldTasks()
        let result = try await Self.nextResult(second)
        #expect(result.transfer == transfer)
        guard case .downloaded = result.outcome else {
            Issue.record("expected a download, got \(result.outcome)")
            return
        }
        #expect(try String(contentsOf: destination, encoding: .utf8) == text)
        let called = await withTimeLimit(.seconds(20)) { await calls.first { _ in true } != nil }
        guard case .value(true) = called else {
            Issue.record("the completion handler was not called")
            return
        }
    }

    @Test("UIKit's completion handler, a plain closure and not Sendable, is taken as it comes on the main actor and called")
    @MainActor
    func uikitHandler() async throws {
        let text = "handled"
        let fixture = try Fixture(holdingTasks: true) { _ in
            (HTTPResponse(status: .ok, headerFields: [HTTPField.Name("Repr-Digest")!: Self.digest(text)]), Data(text.utf8))
        }
        defer { fixture.remove() }
        let destination = fixture.folder.appendingPathComponent("copy.txt")
        let first = fixture.background()
        _ = try await first.download("file.txt", to: destination)
        first.stop()
        let second = fixture.background()
        let (calls, call) = AsyncStream.makeStream(of: Void.self)
        // The type the app delegate receives: a plain closure (which the Sendable overload refuses).
        let handler: () -> Void = { call.yield() }
        second.handleEvents(completionHandler: handler)
        fixture.session.startHeldTasks()
        _ = try await Self.nextResult(second)
        let called = await withTimeLimit(.seconds(20)) { await calls.first { _ in true } != nil }
        guard case .value(true) = called else {
            Issue.record("the completion handler was not called")
            return
        }
    }

    @Test("the system's handler is called when the events are delivered, before the requests that finish a transfer")
    func handlerBeforeFinishingWork() async throws {
        let text = "0123456789abcdef"
        let (gate, open) = AsyncStream.makeStream(of: Void.self)
        let (asked, ask) = AsyncStream.makeStream(of: Void.self)
        // The offset a resumption asks for is answered only once the test says so.
        let fixture = try Fixture(
            holdingTasks: true,
            answering: Self.breakingOnce(text) {
                ask.yield()
                for await _ in gate { break }
            })
        defer { fixture.remove() }
        let background = fixture.background()
        let transfer = try await background.upload(from: try fixture.file("log.txt", text), as: "log.txt")
        let (calls, call) = AsyncStream.makeStream(of: Void.self)
        background.handleEvents { call.yield() }
        fixture.session.startHeldTasks()

        // The broken upload's resumption has asked the server's offset and waits for it; the
        // handler has been called all the same.
        let waiting = await withTimeLimit(.seconds(20)) { await asked.first { _ in true } != nil }
        guard case .value(true) = waiting else {
            Issue.record("the resumption did not ask the offset")
            return
        }
        let called = await withTimeLimit(.seconds(20)) { await calls.first { _ in true } != nil }
        guard case .value(true) = called else {
            Issue.record("the handler waited for the finishing requests")
            return
        }

        open.yield()
        let result = try await Self.nextResult(background)
        #expect(result.transfer == transfer)
        guard case .uploaded(let uploaded) = result.outcome else {
            Issue.record("expected an upload, got \(result.outcome)")
            return
        }
        #expect(uploaded.resumedFrom == 6)
    }

    @Test("one BackgroundFiles per session identifier: the one in use is returned; a new one takes over with a clear error")
    func onePerIdentifier() async throws {
        let fixture = try Fixture { _ in ScriptedTransport.reply(201, json: Self.stored("a.txt", "a")) }
        defer { fixture.remove() }
        let first = fixture.background()
        #expect(fixture.background() === first)
        #expect(fixture.client.files.background(fixture.session) === first)
        #expect(BackgroundFiles.registry.current(fixture.session.identifier) === first)

        // Made directly: it takes the session over, and the first starts no more transfers.
        let second = BackgroundFiles(files: fixture.client.files, session: fixture.session)
        #expect(fixture.background() === second)
        do {
            _ = try await first.download("a.txt", to: fixture.folder.appendingPathComponent("a.txt"))
            Issue.record("a replaced BackgroundFiles started a transfer")
        } catch let error as OutpostError {
            #expect(error.code == .invalidRequest)
            #expect(error.message.contains("took over the session \(fixture.session.identifier)"))
        }
        var ended = first.results.makeAsyncIterator()
        #expect(await ended.next() == nil, "the replaced one's results end")

        // Once stopped, the next call makes a new one.
        second.stop()
        #expect(BackgroundFiles.registry.current(fixture.session.identifier) == nil)
        let third = fixture.background()
        #expect(third !== second)
        await #expect(throws: OutpostError.self) {
            _ = try await second.upload(from: try fixture.file("b.txt", "b"), as: "b.txt")
        }
        third.stop()
    }

    @Test("the registry keeps background sessions for the process, and only points to the readers")
    func sessionRegistry() {
        final class Box: Sendable {}
        let kept = SessionRegistry<Box>(keepsValues: true)
        let made = Mutex(0)
        let make = {
            made.withLock { $0 += 1 }
            return Box()
        }
        let a = ObjectIdentifier(kept.value(for: "s", make: make))
        #expect(ObjectIdentifier(kept.value(for: "s", make: make)) == a, "one value per identifier")
        #expect(made.withLock { $0 } == 1)
        #expect(kept.value(for: "other", make: make) !== kept.current("s"))

        let held = SessionRegistry<Box>(keepsValues: false)
        do {
            let box = held.value(for: "s", make: Box.init)
            #expect(held.current("s") === box)
        }
        #expect(held.current("s") == nil, "a reader that went away is not kept")
    }

    @Test("remainders and received files wait in Application Support, not Caches")
    func foldersOutOfCaches() throws {
        let folder = BackgroundFiles.defaultFolder("com.example/transfers")
        let support = try #require(FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first)
        #expect(folder.deletingLastPathComponent().standardizedFileURL.path == support.standardizedFileURL.path)
        #expect(folder.lastPathComponent == "outpost-background-com.example_transfers")
        if let caches = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first {
            #expect(!folder.standardizedFileURL.path.hasPrefix(caches.standardizedFileURL.path + "/"))
        }
        let made = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-folder-\(UUID().uuidString)/inner")
        defer { try? FileManager.default.removeItem(at: made.deletingLastPathComponent()) }
        try BackgroundFolder.prepare(made)
        let mode = try FileManager.default.attributesOfItem(atPath: made.path)[.posixPermissions] as? Int
        #expect(mode == 0o700)
    }

    @Test("a task description that is garbage, oversize or out of bounds is refused with a clear error")
    func hostileDescriptions() async throws {
        let valid = BackgroundTransferDescription(
            kind: .download, id: "0123456789abcdef", name: "a.txt", path: "/tmp/a.txt", resumesLeft: 3)
        #expect(try BackgroundTransferDescription(parsing: valid.text) == valid)
        var escaping = valid
        escaping.path = "/tmp/../etc/passwd"
        var relative = valid
        relative.path = "a.txt"
        var badName = valid
        badName.name = "../a"
        var negative = valid
        negative.offset = -1
        var future = valid
        future.version = 2
        let hostile = [
            "garbage", "", "{}", "[1,2]", String(repeating: "x", count: 5000),
            "{\"kind\":\"upload\"" + String(repeating: " ", count: 4096) + "}",
            escaping.text, relative.text, badName.text, negative.text, future.text,
        ]
        for text in hostile {
            do {
                _ = try BackgroundTransferDescription(parsing: text)
                Issue.record("accepted \(text.prefix(80))")
            } catch {
                #expect(error.code == .invalidRequest)
                #expect(error.message.hasPrefix("A background task's description"))
            }
        }

        // Through the coordinator: the result says why, and the received file is not kept.
        let fixture = try Fixture { _ in (HTTPResponse(status: .ok), Data("bytes".utf8)) }
        defer { fixture.remove() }
        let background = fixture.background()
        let request = HTTPRequest(method: .get, scheme: "http", authority: "scripted.test", path: "/files/a.txt")
        try fixture.session.startDownload(request, taskDescription: String(repeating: "{", count: 10_000))
        let result = try await Self.nextResult(background)
        #expect(result.transfer == nil)
        guard case .failed(let error) = result.outcome else {
            Issue.record("expected a refusal, got \(result.outcome)")
            return
        }
        #expect(error.code == .invalidRequest)
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.session.folder.path).isEmpty)
    }
}

extension Array {
    fileprivate var only: Element? { count == 1 ? first : nil }
}
