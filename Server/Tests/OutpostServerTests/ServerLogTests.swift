import Foundation
import Logging
import OutpostTestSupport
import Testing

@testable import OutpostServer

@Suite("The server's log handler", .closesWhatItOpens)
struct ServerLogHandlerTests {
    /// A pipe: the sink writes into one end, the test reads the other.
    final class Pipe: Sendable {
        let read: Int32
        let write: Int32
        init() throws {
            var ends: [Int32] = [0, 0]
            guard pipe(&ends) == 0 else { throw CocoaError(.fileWriteUnknown) }
            read = ends[0]
            write = ends[1]
        }
        /// Reads what is in the pipe now, without waiting for more.
        func available() -> String {
            _ = fcntl(read, F_SETFL, fcntl(read, F_GETFL) | O_NONBLOCK)
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = Glibc.read(read, &chunk, chunk.count)
                guard count > 0 else { break }
                bytes += chunk[0..<count]
            }
            return String(decoding: bytes, as: UTF8.self)
        }
        deinit {
            close(read)
            close(write)
        }
    }

    @Test("info lines wait in the buffer until a flush; a warning is written at once, after them")
    func batching() throws {
        let pipe = try Pipe()
        let sink = ServerLogSink(fileDescriptor: pipe.write)
        var logger = Logger(label: "outpost.server") { ServerLogHandler(label: $0, sink: sink) }
        logger.logLevel = .info
        logger.info("request", metadata: ["path": "/health", "method": "GET", "status": "200"])
        logger.debug("not at this level")
        sink.flush()
        let first = pipe.available()
        #expect(first.hasSuffix(" info outpost.server: request method=GET path=/health status=200\n"))
        #expect(!first.contains("not at this level"))
        let stamp = try #require(first.split(separator: " ").first)
        #expect(stamp.count == 24 && stamp.hasSuffix("Z") && stamp.dropFirst(10).hasPrefix("T"))
        #expect(pipe.available().isEmpty)

        logger.info("queued")
        logger.warning("urgent", metadata: ["code": "x"])
        let urgent = pipe.available()
        #expect(urgent.contains(": queued\n"))
        #expect(urgent.hasSuffix(" warning outpost.server: urgent code=x\n"))
    }

    @Test("the access log writes the line the handler would, as bytes: same text, level, and urgency")
    func accessLogLine() async throws {
        let pipe = try Pipe()
        let sink = ServerLogSink(fileDescriptor: pipe.write)
        var logger = Logger(label: "outpost.server") { ServerLogHandler(label: $0, sink: sink) }
        logger.logLevel = .info
        let middleware = AccessLogMiddleware<OutpostRequestContext>(logger: logger)
        #expect(middleware.direct != nil)
        for (status, milliseconds) in [(200, Int64(0)), (404, 7), (503, 1234), (201, 12_345_678)] {
            let level: Logger.Level = status >= 500 ? .warning : .info
            let path = "/records/t%20x/é"
            sink.appendRequestLine(
                label: "outpost.server", level: level, client: "2001:db8::7", method: "GET", path: path, status: status,
                milliseconds: milliseconds)
            logger.log(
                level: level, "request",
                metadata: [
                    "client": "2001:db8::7", "method": "GET", "path": "\(path)", "status": "\(status)",
                    "duration_ms": "\(milliseconds)",
                ])
            sink.flush()
            let lines = pipe.available().split(separator: "\n")
            #expect(lines.count == 2)
            // The same text after the timestamp (which may differ by a millisecond).
            #expect(lines.first?.drop { $0 != " " } == lines.last?.drop { $0 != " " })
            #expect(
                lines.first?.hasSuffix(
                    "\(level.rawValue) outpost.server: request client=2001:db8::7 duration_ms=\(milliseconds) method=GET path=\(path) status=\(status)"
                ) == true)
            #expect(lines.first?.split(separator: " ").first?.count == 24)
        }
        // A 5xx line is written at once, with no flush.
        sink.appendRequestLine(
            label: "l", level: .warning, client: "192.0.2.1", method: "POST", path: "/x", status: 500, milliseconds: 3)
        #expect(pipe.available().hasSuffix(" warning l: request client=192.0.2.1 duration_ms=3 method=POST path=/x status=500\n"))
        // Milliseconds under 100 are zero-padded in the timestamp, as the handler's are.
        for value: Int64 in [0, 5, 42, 999] {
            var bytes: [UInt8] = []
            ServerLogSink.appendDigits(value, width: 3, to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == String(String(value + 1000).dropFirst()))
        }
        var negative: [UInt8] = []
        ServerLogSink.appendDigits(-120, width: 1, to: &negative)
        ServerLogSink.appendDigits(Int64.min, width: 1, to: &negative)
        #expect(String(decoding: negative, as: UTF8.self) == "-120\(Int64.min)")
    }

    @Test("the access log goes through the logger when its handler adds metadata or is another handler")
    func accessLogFallsBack() {
        let sink = ServerLogSink(fileDescriptor: -1)
        var withMetadata = Logger(label: "l") { ServerLogHandler(label: $0, sink: sink) }
        withMetadata[metadataKey: "instance"] = "a"
        #expect(AccessLogMiddleware<OutpostRequestContext>(logger: withMetadata).direct == nil)
        let provided = Logger(label: "l") {
            ServerLogHandler(label: $0, sink: sink, metadataProvider: Logger.MetadataProvider { ["trace": "1"] })
        }
        #expect(AccessLogMiddleware<OutpostRequestContext>(logger: provided).direct == nil)
        #expect(AccessLogMiddleware<OutpostRequestContext>(logger: Logger(label: "l")).direct == nil)
    }

    @Test("a full batch is written without waiting for the timer")
    func fullBatch() throws {
        let pipe = try Pipe()
        let sink = ServerLogSink(fileDescriptor: pipe.write)
        let logger = Logger(label: "l") { ServerLogHandler(label: $0, sink: sink) }
        let line = String(repeating: "x", count: 200)
        for _ in 0..<(ServerLogSink.batchBytes / 200 + 1) { logger.info("\(line)") }
        #expect(pipe.available().count >= ServerLogSink.batchBytes)
    }
}

/// An `AuthService` on a fresh, migrated SQLite file in a temporary folder, with one user, `ada`
/// (password `correct horse`), and a password cost of 4.
enum AuthServiceFixture {
    static func with(
        configure: (inout AuthConfiguration) -> Void = { _ in }, _ body: (SQLiteStorage, AuthService) async throws -> Void
    ) async throws {
        await ResourcePlaces.enter()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-auth-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let storage = try await SQLiteStorage.open(
            path: folder.appendingPathComponent("db.sqlite").path, logger: Logger(label: "t"))
        do {
            try await storage.migrate()
            _ = try await storage.addUser(username: "ada", password: "correct horse", cost: 4)
            var configuration = ServerConfiguration()
            configuration.auth.passwordCost = 4
            configure(&configuration.auth)
            let auth = try await AuthService.make(
                storage: storage, configuration: configuration.auth, providers: [:],
                publicBase: PublicBase(configuration: configuration), logger: Logger(label: "t"))
            try await body(storage, auth)
        } catch {
            try? await storage.close()
            throw error
        }
        try await storage.close()
    }
}

@Suite("The decoy password hash", .closesWhatItOpens)
struct DecoyHashTests {
    @Test("start-up does not compute it; an unknown user's sign-in does, and fails like a wrong password")
    func unknownUser() async throws {
        try await AuthServiceFixture.with { _, auth in
            #expect(!auth.decoyHash.isStarted)
            await #expect(throws: AuthFailure.self) {
                _ = try await auth.verifyPassword(username: "nobody", password: "correct horse", address: "192.0.2.1")
            }
            #expect(auth.decoyHash.isStarted)
            let decoy = try await auth.decoyHash.value()
            #expect(decoy.hasPrefix("$2"))
            #expect(try await auth.decoyHash.value() == decoy)
        }
    }

    @Test("a known user's sign-in waits for it too, so the first sign-in takes as long either way")
    func knownUser() async throws {
        try await AuthServiceFixture.with { _, auth in
            #expect(!auth.decoyHash.isStarted)
            let user = try await auth.verifyPassword(username: "ada", password: "correct horse", address: "192.0.2.1")
            #expect(user.username == "ada")
            #expect(auth.decoyHash.isStarted)
        }
    }
}
