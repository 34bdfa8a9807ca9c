import ArgumentParser
import Foundation
import Logging
import Metrics
import OutpostServer
import Prometheus

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", abstract: "Run the reference server until Ctrl-C (SIGINT) or SIGTERM.")

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on (0 picks a free one).")
    var port = 8080

    @Option(
        help: """
            Where the data lives, created and migrated on start: a SQLite file, or a PostgreSQL database \
            (postgres://user:password@host:5432/database) that several instances can share.
            """)
    var database = "outpost.sqlite"

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel = "info"

    @Option(
        name: .customLong("public-url"),
        help: """
            The URL people and clients reach the server at (e.g. https://auth.example.com behind a proxy): \
            the OAuth issuer and every absolute URL the server writes. Default: http://HOST:PORT as bound.
            """)
    var publicURL: String?

    @Option(
        name: .customLong("files-directory"),
        help: """
            Where /files keeps files and pending uploads. Default: on SQLite, next to the database \
            (outpost.sqlite → outpost-files); on PostgreSQL, in the database, for every instance. A folder given with \
            PostgreSQL must be shared by every instance.
            """)
    var filesDirectory: String?

    @Option(
        name: .customLong("files-url"),
        help: """
            Serve file downloads from this other origin (e.g. https://files.example.net, a host name that reaches \
            this server but no other site of yours): GET /files/{name} answers 307 with a signed link there, valid \
            for 5 minutes, and that host serves nothing else. Default: files are served from the server's own origin.
            """)
    var filesURL: String?

    @Option(
        name: .customLong("max-connections"),
        help: """
            Connections held at once; one more gets 503 too_many_connections and is closed. \
            Default: the open-file limit (ulimit -n) less a quarter of it.
            """)
    var maxConnections: Int?

    @Option(name: .customLong("max-file-bytes"), help: "The largest file PUT /files/{name} accepts (413 beyond). Default: 1 GiB.")
    var maxFileBytes: Int64 = 1 << 30

    @Option(
        name: .customLong("changes-heartbeat"),
        help: "Seconds between heartbeat comments on an idle change stream (GET /records/{type}/changes). Default: 15.")
    var changesHeartbeat: Int = 15

    @Option(
        name: .customLong("changes-max-stream"),
        help:
            "End a change stream after this many seconds (at its next heartbeat); clients resume with Last-Event-ID. Default: no limit."
    )
    var changesMaxStream: Int?

    @Option(
        name: .customLong("refresh-reuse-grace"),
        help: """
            Seconds after a refresh token is exchanged during which exchanging it again returns the same new pair \
            (an app and its widget refreshing at once) instead of revoking the sign-in as theft; 0 turns it off. Default: 30.
            """)
    var refreshReuseGrace: Int = 30

    @Flag(
        name: .customLong("demo"),
        help: "Serve the demo plugin (lambda hello:someone, handler time). Off by default: a fresh server runs no plugin code.")
    var demo = false

    @Option(
        name: .customLong("rules"),
        help: """
            A JSON file of access rules, {"types": {"TYPE": {"read": "EXPR", "create": "EXPR", ...}, "*": {...}}}, written \
            to the database at start in place of the stored rules. Without it the stored rules (outpost rules) apply.
            """)
    var rulesFile: String?

    @Option(
        name: .customLong("signup"),
        help: """
            Who may sign up with POST /users: open (anyone), invite (with a one-time code from `outpost users invite`), \
            or closed (nobody; add users with `outpost users add`). Default: invite, or open with --demo.
            """)
    var signUp: String?

    @Option(
        name: .customLong("trusted-proxy"),
        help: """
            A reverse proxy in front of the server, as an IPv4 or IPv6 CIDR (127.0.0.1/32, 10.0.0.0/8, ::1/128); repeatable. \
            From those peers only, the client's address is read from --forwarded-header (the rightmost address that is not \
            a trusted proxy) for sign-in limits and the access log.
            """)
    var trustedProxies: [String] = []

    @Option(
        name: .customLong("forwarded-header"),
        help: """
            The header the trusted proxies write the client's address into: x-forwarded-for (nginx's \
            $proxy_add_x_forwarded_for) or forwarded (RFC 7239). Read from trusted proxies only.
            """)
    var forwardedHeader: String = ForwardedHeader.xForwardedFor.rawValue

    @Option(
        name: .customLong("on-account-deletion"),
        help: """
            What DELETE /me and `outpost users delete` do with the user's records and files: delete (each record shows \
            in the change feed as deleted), or transfer:USERNAME (they become that user's).
            """)
    var onAccountDeletion = "delete"

    @Option(
        name: .customLong("metrics-port"),
        help: """
            Serve Prometheus metrics (GET /metrics, no sign-in) on this port of --host, a listener of its own that \
            only the scraper should reach (0 picks a free one). Default: no metrics listener.
            """)
    var metricsPort: Int?
    @OptionGroup(title: "Mail (password reset, e-mail verification)") var mail: MailOptions

    func validate() throws {
        if let signUp, SignUpMode(rawValue: signUp) == nil {
            throw ValidationError("--signup must be open, invite or closed")
        }
        for proxy in trustedProxies where IPNetwork(proxy) == nil {
            throw ValidationError(
                "--trusted-proxy \(proxy) is not an IP address or CIDR; write e.g. 127.0.0.1/32, 10.0.0.0/8 or ::1/128")
        }
        guard AccountDeletionConfiguration.Data(argument: onAccountDeletion) != nil else {
            throw ValidationError("--on-account-deletion must be delete or transfer:USERNAME")
        }
        guard ForwardedHeader(rawValue: forwardedHeader.lowercased()) != nil else {
            throw ValidationError("--forwarded-header must be x-forwarded-for or forwarded")
        }
        guard (0...300).contains(refreshReuseGrace) else {
            throw ValidationError("--refresh-reuse-grace must be between 0 and 300 seconds")
        }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        if let metricsPort {
            guard (0...65535).contains(metricsPort) else {
                throw ValidationError("--metrics-port must be between 0 and 65535")
            }
            guard metricsPort == 0 || metricsPort != port else {
                throw ValidationError("--metrics-port must differ from --port")
            }
        }
        do {
            _ = try DatabaseLocation(database)
        } catch let error as ServerError {
            throw ValidationError("--database: \(error.message)")
        }
        if let publicURL {
            guard let url = URL(string: publicURL), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil,
                url.query == nil, url.fragment == nil
            else {
                throw ValidationError("--public-url must be an http or https URL without a query, like https://auth.example.com")
            }
        }
        if let filesURL {
            guard let url = URL(string: filesURL), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
                let host = url.host, url.query == nil, url.fragment == nil, url.path.isEmpty || url.path == "/"
            else {
                throw ValidationError(
                    "--files-url must be an http or https origin without a path, like https://files.example.net")
            }
            let ownHosts = [self.host, publicURL.flatMap { URL(string: $0)?.host }].compactMap { $0?.lowercased() }
            guard !ownHosts.contains(host.lowercased()) else {
                throw ValidationError(
                    "--files-url must name another host than the server's own (\(host)): files served from the server's "
                        + "origin could run as it")
            }
        }
        if let maxConnections, maxConnections < 1 { throw ValidationError("--max-connections must be at least 1") }
        guard changesHeartbeat >= 1 else { throw ValidationError("--changes-heartbeat must be at least 1 second") }
        if let changesMaxStream, changesMaxStream < 1 {
            throw ValidationError("--changes-max-stream must be at least 1 second")
        }
        try mail.validate()
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical")
        }
    }

    /// `--signup`, or by default `invite` (a fresh server on the internet takes sign-ups only with an
    /// invite), `open` with `--demo`.
    var signUpMode: SignUpMode { signUp.flatMap(SignUpMode.init(rawValue:)) ?? (demo ? .open : .invite) }

    func run() async throws {
        // Batched lines on stderr: the access log costs no system call per request (ServerLogHandler).
        var logger = Logger(label: "outpost.server") { ServerLogHandler(label: $0) }
        defer { ServerLogSink.standardError.flush() }
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        var configuration = ServerConfiguration(
            host: host, port: port, databasePath: database, logger: logger, publicURL: publicURL.flatMap(URL.init(string:)))
        configuration.filesDirectory = filesDirectory
        configuration.maxFileBytes = maxFileBytes
        configuration.filesURL = filesURL.flatMap(URL.init(string:))
        configuration.maxConnections = maxConnections
        configuration.auth.refreshReuseGrace = .seconds(refreshReuseGrace)
        configuration.changes.heartbeatInterval = .seconds(changesHeartbeat)
        configuration.changes.maxStreamDuration = changesMaxStream.map { .seconds($0) }
        configuration.signUp = signUpMode
        configuration.accountDeletion.data = AccountDeletionConfiguration.Data(argument: onAccountDeletion) ?? .delete
        // The demo's plugins are public knowledge: unknown names are answered with the list.
        configuration.listsPluginNames = demo
        configuration.trustedProxies = TrustedProxies(
            networks: trustedProxies.compactMap(IPNetwork.init),
            header: ForwardedHeader(rawValue: forwardedHeader.lowercased()) ?? .xForwardedFor)
        configuration.mail = try mail.configuration(logger: logger)
        if let rulesFile {
            // Every expression is checked before the server starts: a bad one stops it here.
            do {
                configuration.accessRules = try AccessRuleSet(contentsOf: rulesFile)
            } catch {
                FileHandle.standardError.write(Data("error: --rules \(error.message)\n".utf8))
                throw ExitCode.failure
            }
        }
        if let metricsPort {
            // The process's metrics system, bootstrapped once here (the server library never does).
            let registry = PrometheusCollectorRegistry()
            MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
            configuration.observability.prometheus = registry
            configuration.observability.metricsPort = metricsPort
        }
        let server = try OutpostServer(configuration: configuration, plugins: demo ? [DemoPlugin()] : [])
        let host = self.host
        let database = (try? DatabaseLocation(self.database).description) ?? self.database
        let publicURL = self.publicURL
        try await server.run(
            onRunning: { port in
                // Written unbuffered, so that a script reading our output sees it at once.
                var line = "Outpost server listening on http://\(host):\(port) (database: \(database)). Ctrl-C stops it.\n"
                if let publicURL {
                    line += "Public URL (issuer): \(publicURL)\n"
                } else if ["0.0.0.0", "::"].contains(host) {
                    let shown = host.contains(":") ? "[\(host)]" : host
                    line += "Note: the OAuth issuer is http://\(shown):\(port); pass --public-url with the address clients use.\n"
                }
                FileHandle.standardOutput.write(Data(line.utf8))
            },
            onMetricsRunning: { host, port in
                let shown = host.contains(":") ? "[\(host)]" : host
                FileHandle.standardOutput.write(Data("Outpost metrics listening on http://\(shown):\(port)/metrics\n".utf8))
            })
    }
}
