import Foundation
import Logging
import Outpost
import OutpostServer
import OutpostServerTesting
import OutpostTestSupport
import Synchronization
import Testing

/// A live server on 127.0.0.1, port 0, with a fresh SQLite file, for one test; or a fresh
/// PostgreSQL database when `OUTPOST_TEST_LIVE_BACKEND=postgres` (CI runs the records,
/// idempotency and auth suites a second time so).
struct LiveServer {
    let running: RunningServer
    let folder: URL
    /// The PostgreSQL database the server runs on, when it does.
    let scratch: ScratchDatabase?

    var baseURL: URL { running.baseURL }

    /// The secret of the built-in `outpost.test` provider in test servers.
    static let providerSecret = "test-provider-secret"

    /// The rules live servers start with unless a test sets its own (`configuration.accessRules`):
    /// anyone creates, and records without an owner may be changed by anyone, as before access
    /// rules existed, so the suites that write records without signing in keep doing so. Reads,
    /// lists and subscriptions keep the defaults. Tests of the defaults set `accessRules` to an
    /// empty set (`AccessRuleSet()`).
    static func permissiveRules() throws -> AccessRuleSet {
        try AccessRuleSet([
            "*": [
                "create": "true",
                "update": "record.owner == null || record.owner == caller.user",
                "delete": "record.owner == null || record.owner == caller.user",
            ]
        ])
    }

    /// The backend live servers run on, from `OUTPOST_TEST_LIVE_BACKEND` (default SQLite).
    static var backend: ScratchDatabase.Backend {
        ProcessInfo.processInfo.environment["OUTPOST_TEST_LIVE_BACKEND"].flatMap(ScratchDatabase.Backend.init) ?? .sqlite
    }

    static func start(
        plugins: [any ServerPlugin] = [DemoPlugin(), TestPlugin()],
        configure: (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> LiveServer {
        // Each live server holds five threads: at most `ResourcePlaces.count` tests hold servers at once.
        await ResourcePlaces.enter()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var logger = Logger(label: "outpost.test.server")
        logger.logLevel = .critical
        var configuration = ServerConfiguration(
            host: "127.0.0.1", port: 0, databasePath: folder.appendingPathComponent("test.sqlite").path, logger: logger)
        configuration.auth.passwordCost = 4
        configuration.auth.testProviderSecret = LiveServer.providerSecret
        configuration.accessRules = try LiveServer.permissiveRules()
        let scratch = backend == .postgres ? try await ScratchDatabase.make(.postgres) : nil
        if let scratch {
            configuration.storageFactory = { [logger] in try await scratch.location.open(logger: logger) }
        }
        configure(&configuration)
        do {
            let server = try OutpostServer(configuration: configuration, plugins: plugins)
            return LiveServer(running: try await server.start(), folder: folder, scratch: scratch)
        } catch {
            await scratch?.remove()
            try? FileManager.default.removeItem(at: folder)
            throw error
        }
    }

    /// A second storage on the server's database, for fixtures (the caller closes it).
    func openStorage() async throws -> any Storage {
        var logger = Logger(label: "outpost.test.fixture")
        logger.logLevel = .critical
        return try await (scratch?.location ?? .sqlite(path: folder.appendingPathComponent("test.sqlite").path))
            .openMigrated(logger: logger)
    }

    /// Points `configuration` at this server's PostgreSQL database, when it runs on one (a SQLite
    /// configuration names the file itself).
    func shareDatabase(with configuration: inout ServerConfiguration) {
        guard let scratch else { return }
        let logger = configuration.logger
        configuration.storageFactory = { try await scratch.location.open(logger: logger) }
    }

    func stop() async {
        await running.stop()
        await scratch?.remove()
        try? FileManager.default.removeItem(at: folder)
    }
}

/// Runs `body` with a live server and a client on it, and always stops both.
func withLiveServer<T>(
    plugins: [any ServerPlugin] = [DemoPlugin(), TestPlugin()],
    configure: (inout ServerConfiguration) -> Void = { _ in },
    client makeClient: (URL) -> OutpostClient = { OutpostClient(configuration: .init(baseURL: $0)) },
    _ body: (LiveServer, OutpostClient) async throws -> T
) async throws -> T {
    let server = try await LiveServer.start(plugins: plugins, configure: configure)
    let client = makeClient(server.baseURL)
    do {
        let result = try await body(server, client)
        try await client.shutdown()
        await server.stop()
        return result
    } catch {
        try? await client.shutdown()
        await server.stop()
        throw error
    }
}

/// Handlers that misbehave on purpose, one per failure the client must read well.
struct TestPlugin: ServerPlugin {
    let identifier = "outpost.tests"
    /// Released by tests to let the `gate` handler answer.
    let gate = Gate()
    let flakyCalls = Counter()
    /// Calls of the `counted` lambda, to check that a repeated key runs it once.
    let countedCalls = Counter()

    func register(into registrar: inout PluginRegistrar) throws {
        let gate = self.gate
        let flakyCalls = self.flakyCalls
        let countedCalls = self.countedCalls
        try registrar.lambda("counted") { _ in .int(countedCalls.increment()) }
        try registrar.lambda("whoami") { call in Self.describe(call.caller) }
        try registrar.handler("whoami") { call in .json(Self.describe(call.caller)) }
        try registrar.lambda("boom") { _ in
            struct Internal: Error {}
            throw Internal()
        }
        try registrar.lambda("echo") { call in
            switch call.arguments {
            case .positional(let values): return .array(values)
            case .named(let values): return .object(values)
            }
        }
        try registrar.lambda("stubborn") { _ in
            // Ignores cancellation: the server must still answer at its deadline.
            await gate.wait()
            return "late"
        }
        try registrar.handler("gate") { _ in
            await gate.wait()
            return .json(["released": true])
        }
        try registrar.handler("not-json") { _ in
            HandlerResponse(body: .bytes(Data("<html>proxy error</html>".utf8), contentType: "text/html"))
        }
        try registrar.handler("no-result") { _ in .json(["value": 1]) }
        try registrar.handler("service-error") { _ in
            .json(["error": ["code": "quota_exceeded", "message": "You used all your credits"]])
        }
        try registrar.handler("flaky") { call in
            let count = flakyCalls.increment()
            let failures = call.body["failures"]?.intValue ?? 1
            if count <= failures {
                return HandlerResponse(
                    status: .serviceUnavailable, headers: [.retryAfterHeader: call.body["retry_after"]?.stringValue ?? "1"],
                    body: .json(["error": ["code": "busy", "message": "Try again soon"]]))
            }
            return .json(["attempts": .int(count)])
        }
    }
}

extension TestPlugin {
    /// The caller as JSON: `null` when anonymous.
    static func describe(_ caller: CallerIdentity?) -> JSONValue {
        guard let caller else { return .null }
        return [
            "user_id": caller.userID.map(JSONValue.string) ?? .null, "client_id": .string(caller.clientID),
            "scopes": .array(caller.scopes.map(JSONValue.string)),
        ]
    }
}

final class Counter: Sendable {
    private let value = Mutex(0)

    @discardableResult
    func increment() -> Int {
        value.withLock {
            $0 += 1; return $0
        }
    }

    var current: Int { value.withLock { $0 } }
}

/// Records every log line, to check that no secret reaches a log.
final class LogRecorder: Sendable {
    private let lines = Mutex<[String]>([])
    /// The recorded line of an event with the logger's metadata, or `nil` to skip it: by default
    /// its level, message and metadata.
    private let line: @Sendable (LogEvent, Logger.Metadata) -> String?

    init(line: @escaping @Sendable (LogEvent, Logger.Metadata) -> String? = LogRecorder.describe) {
        self.line = line
    }

    @Sendable static func describe(_ event: LogEvent, _ metadata: Logger.Metadata) -> String? {
        let merged = metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 })
        return
            "\(event.level) \(event.message) \(merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))"
    }

    var all: [String] { lines.withLock { $0 } }

    func logger(level: Logger.Level = .trace) -> Logger {
        var logger = Logger(label: "outpost.test") { _ in RecordingHandler(recorder: self) }
        logger.logLevel = level
        return logger
    }

    fileprivate func append(_ line: String) { lines.withLock { $0.append(line) } }

    struct RecordingHandler: LogHandler {
        let recorder: LogRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            if let line = recorder.line(event, metadata) { recorder.append(line) }
        }
    }
}
