import ArgumentParser
import Foundation
import Logging
import Outpost
import OutpostServer
import Synchronization

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Start the server on a free loopback port with a temporary database, tour the SDK, and stop.",
        discussion: """
            With --keep-serving the server stays up after the tour, with everything the tour wrote, until Ctrl-C:
            open the console address it prints and sign in as operator with the password it prints.
            """)

    @Flag(name: .customLong("keep-serving"), help: "After the tour, keep the server running for a browser until Ctrl-C.")
    var keepServing = false

    /// Anonymous writes, which the tour makes, and records with an owner changed by that owner only;
    /// a diary whose entries only their owner reads, and a guestbook anyone signs (``RulesTour``).
    static let demoRules: [String: [String: String]] = [
        "*": [
            "create": "true",
            "update": "record.owner == null || record.owner == caller.user",
            "delete": "record.owner == null || record.owner == caller.user",
        ],
        "diary": [
            "create": "caller.user != null",
            "read": "record.owner == caller.user",
            "list": "record.owner == caller.user",
            "subscribe": "record.owner == caller.user",
        ],
        "guestbook": ["create": "request.body.message != null", "update": "false", "delete": "false"],
    ]

    func run() async throws {
        let log = TourLog()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-demo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let databasePath = folder.appendingPathComponent("demo.sqlite").path

        var serverLogger = Logger(label: "outpost.server")
        serverLogger.logLevel = .warning
        // A fresh secret for the built-in test provider, and a lower Bcrypt cost so the tour is quick.
        let providerSecret = UUID().uuidString
        let auth = AuthConfiguration(passwordCost: 8, testProviderSecret: providerSecret)
        var configuration = ServerConfiguration(
            host: "127.0.0.1", port: 0, databasePath: databasePath, logger: serverLogger, auth: auth)
        // The tour writes records without signing in, which a server allows only by rule.
        configuration.accessRules = try AccessRuleSet(Self.demoRules)
        let server = try OutpostServer(configuration: configuration, plugins: [DemoPlugin()])
        let running = try await server.start()
        log.section("Outpost demo")
        log.step("Server listening on \(running.baseURL) with database \(databasePath)")
        log.detail(
            "access rules for every type (*): create \(Self.demoRules["*"]!["create"]!); update and delete "
                + "\(Self.demoRules["*"]!["update"]!) (a fresh `outpost serve` needs a signed-in caller to write)")

        let client = OutpostClient(configuration: .init(baseURL: running.baseURL))
        do {
            try await FoundationTour.run(client: client, baseURL: running.baseURL, log: log)
            try await RecordsTour.run(client: client, log: log)
            try await AuthTour.run(baseURL: running.baseURL, databasePath: databasePath, providerSecret: providerSecret, log: log)
            try await RulesTour.run(baseURL: running.baseURL, log: log)
            try await PluginsTour.run(baseURL: running.baseURL, databasePath: databasePath, log: log)
            try await CallbacksTour.run(log: log)
            try await OutboxTour.run(client: client, databasePath: databasePath, log: log)
            try await SyncTour.run(client: client, databasePath: databasePath, folder: folder, log: log)
            try await CacheTour.run(databasePath: databasePath, folder: folder, log: log)
            try await AccountsTour.run(baseURL: running.baseURL, folder: folder, log: log)
            try await FilesTour.run(baseURL: running.baseURL, providerSecret: providerSecret, log: log)
            try await ChangesTour.run(baseURL: running.baseURL, log: log)
            try await AccountDeletionTour.run(baseURL: running.baseURL, log: log)
            try await FederationTour.run(baseURL: running.baseURL, databasePath: databasePath, folder: folder, log: log)
            try await MailTour.run(folder: folder, log: log)
            let operatorPassword = try await ConsoleTour.run(baseURL: running.baseURL, databasePath: databasePath, log: log)
            if keepServing {
                log.section("Serving until Ctrl-C")
                log.step("Console: \(running.baseURL.absoluteString)/admin — sign in as operator, password \(operatorPassword)")
                await Self.interrupted()
            }
        } catch {
            try? await client.shutdown()
            await running.stop()
            throw error
        }
        try await client.shutdown()
        await running.stop()
        log.section("Done")
        log.step("Server stopped; temporary database removed.")
    }

    /// Returns at the first SIGINT (Ctrl-C), which it handles instead of the default ending.
    static func interrupted() async {
        fflush(nil)  // every stream: the address shows even when the output is a pipe or a file
        signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT)
        let resumed = Mutex(false)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            source.setEventHandler {
                if resumed.withLock({
                    let first = !$0; $0 = true; return first
                }) {
                    continuation.resume()
                }
            }
            source.resume()
        }
        source.cancel()
        signal(SIGINT, SIG_DFL)
    }
}
