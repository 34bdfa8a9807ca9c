public import Foundation
package import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
package import NIOPosix
@_spi(OutpostInternal) import OutpostSupport
import ServiceLifecycle

/// The reference backend: lambdas, handlers and records over JSON, on an embedded SQLite database
/// or, for several instances, a shared PostgreSQL one (``ServerConfiguration/databasePath``).
///
/// ```swift
/// let server = try OutpostServer(configuration: .init(port: 0, databasePath: path))
/// let running = try await server.start()      // tests and demos: returns once listening
/// print(running.baseURL)
/// try await running.stop()                    // graceful: in-flight requests finish
/// ```
/// or `try await server.run()` to serve until SIGINT or SIGTERM.
public final class OutpostServer: Sendable {
    public let configuration: ServerConfiguration
    let lambdas: [String: LambdaBody]
    let handlers: [String: HandlerBody]
    let providers: [String: ProviderBody]
    let hooks: RecordHooks
    /// The identifiers of the plugins in use.
    public let pluginIdentifiers: [String]
    /// The metrics and tracer of ``ServerConfiguration/observability``.
    let instruments: ServerInstruments

    /// Prepares a server with the given plugins (none by default: a fresh server serves no lambda or
    /// handler until a plugin adds one; ``DemoPlugin`` is the one `outpost serve --demo` adds).
    ///
    /// - Throws: ``ServerError`` when a plugin fails to register or two plugins claim one name.
    public init(configuration: ServerConfiguration = ServerConfiguration(), plugins: [any ServerPlugin] = []) throws {
        self.configuration = configuration
        var registrar = PluginRegistrar()
        for plugin in plugins {
            registrar.currentPlugin = plugin.identifier
            try plugin.register(into: &registrar)
        }
        self.lambdas = registrar.lambdas
        self.handlers = registrar.handlers
        self.providers = registrar.providers
        self.hooks = registrar.hooks
        self.pluginIdentifiers = plugins.map(\.identifier)
        self.instruments = ServerInstruments(configuration.observability)
    }

    /// Builds the router over `storage`. Exposed to the package for route-coverage tests.
    ///
    /// - Parameters:
    ///   - publicBase: where absolute URLs start (``ServerConfiguration/publicURL`` or the bound address).
    ///   - passwordPool: the threads that run Bcrypt; the server gives it its own pool.
    ///   - changeFeed: the notifier of change streams; one is made when the storage keeps a feed.
    ///   - connections: the bound of connections, which `/health` reports.
    ///   - files: where `/files` keeps its bytes; opened by ``openFileStorage(storage:)`` when `nil`.
    ///   - mailDelivery: the runner of mail work, with ``ServerConfiguration/mail``; one that is
    ///     not run is made when `nil`.
    package func makeRouter(
        storage: any Storage, publicBase: PublicBase? = nil, passwordPool: NIOThreadPool = .singleton,
        changeFeed: ChangeFeed? = nil, connections: ConnectionGate? = nil, files: (any FileStorage)? = nil,
        mailDelivery: MailDelivery? = nil
    ) async throws -> Router<OutpostRequestContext> {
        let publicBase = publicBase ?? PublicBase(configuration: configuration)
        let router = Router(context: OutpostRequestContext.self, options: .autoGenerateHeadEndpoints)
        // First, so that they wrap every route and the answer to a request that matches none.
        let routes = RouteTableReference()
        if !configuration.trustedProxies.isEmpty {
            router.add(middleware: ClientAddressMiddleware(proxies: configuration.trustedProxies))
        }
        if instruments.records { router.add(middleware: RequestInstrumentsMiddleware(instruments: instruments)) }
        router.add(middleware: AccessLogMiddleware(logger: configuration.logger))
        router.add(middleware: ErrorEnvelopeMiddleware(routes: routes, logger: configuration.logger))
        let fileLinks = FileLinks(
            url: configuration.filesURL, key: try await storage.secret(named: "file_link_key"),
            lifetime: configuration.fileLinkLifetime)
        if let fileLinks { router.add(middleware: FilesOriginMiddleware(links: fileLinks)) }
        let bodyLimit = DeclaredLengthMiddleware.Limit(
            bytes: Int64(configuration.maxBodyBytes),
            refusal: ServerError(
                .contentTooLarge, code: "payload_too_large",
                message: "The request body may be at most \(configuration.maxBodyBytes) bytes; send a smaller body",
                headers: [.connection: "close"]))
        let fileLimit = DeclaredLengthMiddleware.Limit(
            bytes: configuration.maxFileBytes, refusal: FileRoutes.tooLarge(maxFileBytes: configuration.maxFileBytes))
        router.add(
            middleware: DeclaredLengthMiddleware { request in
                request.method == .put && request.uri.path.hasPrefix("/files/") ? fileLimit : bodyLimit
            })
        let auth = try await AuthService.make(
            storage: storage, configuration: configuration.auth, providers: providers, publicBase: publicBase,
            logger: configuration.logger, passwordPool: passwordPool)
        let listScans = ListScans(
            running: configuration.listScans, waiting: configuration.listScansWaiting, perAddress: ListScans.defaultPerAddress)
        ServiceRoutes(
            storage: storage,
            load: ServerLoad(listScans: listScans, connections: connections, passwordChecks: auth.passwordChecks)
        ).add(to: router)
        let feed = changeFeed ?? makeChangeFeed(storage: storage)
        let access = AccessControl(
            storage: storage, maxAge: configuration.accessRulesMaxAge, logger: configuration.logger)
        let actions = RecordActions(
            storage: storage, access: access, hooks: hooks, changes: feed, logger: configuration.logger)
        PluginRoutes(
            lambdas: lambdas, handlers: handlers, configuration: configuration, storage: storage, auth: auth,
            actions: actions
        ).add(to: router)
        let cursors = CursorCodec(secret: try await storage.secret(named: "cursor_key"))
        // Before the records' routes: `/records/{type}/changes` is not a record id.
        ChangeRoutes(feed: feed, auth: auth, access: access).add(to: router)
        RecordRoutes(
            storage: storage, auth: auth, access: access, cursors: cursors, maxBodyBytes: configuration.maxBodyBytes,
            maxJSONDepth: configuration.maxJSONDepth, maxJSONKeys: configuration.maxJSONKeys, actions: actions,
            unindexedListLimit: configuration.unindexedListLimit, maxPageBytes: configuration.maxPageBytes,
            listScans: listScans
        ).add(to: router)
        UserRoutes(auth: auth, configuration: configuration).add(to: router)
        let openID = OpenIDProvider(auth: auth, configuration: configuration.openID)
        let federation = IDTokenExchange(auth: auth, configuration: configuration.federation)
        let oauth = OAuthRoutes(
            auth: auth, maxBodyBytes: configuration.maxBodyBytes, openID: openID, federation: federation,
            webSignIn: UpstreamWebSignIn(exchange: federation, configuration: configuration.federation),
            passwordResetEnabled: configuration.mail != nil, instruments: instruments)
        oauth.add(to: router)
        let mailStorage = storage as? any MailStorage
        var mailService: MailService?
        if let mail = configuration.mail {
            guard let mailStorage else {
                throw ServerError(
                    .internalServerError, code: "mail_unsupported",
                    message: "Mail is configured, and this storage keeps no e-mail addresses; use SQLite or PostgreSQL")
            }
            let delivery = mailDelivery ?? MailDelivery(capacity: mail.queueCapacity, logger: configuration.logger)
            mailService = try MailService(auth: auth, storage: mailStorage, configuration: mail, delivery: delivery)
        }
        MailRoutes(mail: mailService, storage: mailStorage, pages: oauth, maxBodyBytes: configuration.maxBodyBytes)
            .add(to: router)
        IdentityRoutes(auth: auth, federation: federation, maxBodyBytes: configuration.maxBodyBytes).add(to: router)
        AdminConsole(auth: auth, pages: oauth, storage: storage, maxBodyBytes: configuration.maxBodyBytes).add(to: router)
        OpenIDRoutes(provider: openID, maxBodyBytes: configuration.maxBodyBytes).add(to: router)
        let fileStorage: any FileStorage
        if let files {
            fileStorage = files
        } else {
            fileStorage = try await openFileStorage(storage: storage)
        }
        FileRoutes(
            files: fileStorage, auth: auth, access: access, maxFileBytes: configuration.maxFileBytes,
            downloadObserver: configuration.downloadObserver, links: fileLinks,
            quotas: FileQuotas(defaults: configuration.quotas, storage: storage as? any QuotaStorage),
            uploadsInFlight: instruments.uploadsInFlight
        ).add(to: router)
        AccountRoutes(
            auth: auth,
            deleter: AccountDeleter(
                storage: storage, files: fileStorage, configuration: configuration.accountDeletion, changes: feed,
                federation: configuration.federation, logger: configuration.logger)
        ).add(to: router)
        routes.fill(from: router, generatesHead: true)
        return router
    }

    /// Where `/files` keeps its bytes: the PostgreSQL database the server runs on, unless
    /// ``ServerConfiguration/filesDirectory`` names a folder; on any other storage, a folder
    /// (``ServerConfiguration/resolvedFilesDirectory``).
    package func openFileStorage(storage: any Storage) async throws -> any FileStorage {
        if configuration.filesDirectory == nil, let postgres = storage as? PostgresStorage {
            return PostgresFileStorage(
                storage: postgres, uploadLifetime: configuration.uploadLifetime, now: configuration.uploadClock)
        }
        return try await FolderFileStorage.open(
            directory: configuration.resolvedFilesDirectory ?? "outpost-files", uploadLifetime: configuration.uploadLifetime,
            now: configuration.uploadClock)
    }

    /// The runner of plugins' after hooks and jobs; `nil` when no plugin registered any.
    ///
    /// - Throws: ``ServerError`` when there are some and `storage` cannot keep their leases or change feed.
    func backgroundWork(storage: any Storage, changeFeed: ChangeFeed?) throws -> BackgroundWork? {
        guard !hooks.after.isEmpty || !hooks.jobs.isEmpty else { return nil }
        guard let leases = storage as? any LeaseStorage, let changes = storage as? any ChangeFeedStorage else {
            throw ServerError(
                .internalServerError, code: "background_work_unsupported",
                message: "The plugins register after hooks or jobs, and this storage keeps no leases or change feed; "
                    + "use SQLite or PostgreSQL")
        }
        let access = AccessControl(storage: storage, maxAge: configuration.accessRulesMaxAge, logger: configuration.logger)
        let actions = RecordActions(
            storage: storage, access: access, hooks: hooks, changes: changeFeed, logger: configuration.logger)
        return BackgroundWork(
            hooks: hooks, changes: changes, leases: leases, actions: actions, configuration: configuration.background,
            logger: configuration.logger)
    }

    /// The change feed's notifier over `storage`, or `nil` when the storage keeps no change feed.
    func makeChangeFeed(storage: any Storage) -> ChangeFeed? {
        guard let feedStorage = storage as? any ChangeFeedStorage else { return nil }
        return ChangeFeed(
            storage: feedStorage, configuration: configuration.changes, logger: configuration.logger,
            subscribers: instruments.liveSubscribers)
    }

    /// The services to run: the HTTP server, and after it the change feed, which shuts down first
    /// (ending every stream) so that the HTTP server's graceful shutdown is not held up by them,
    /// and the sweep of expired uploads.
    func makeServices(
        storage: any Storage, passwordPool: NIOThreadPool,
        onRunning: @escaping @Sendable (_ host: String, _ port: Int) async -> Void,
        onMetricsRunning: @escaping @Sendable (_ host: String, _ port: Int) async -> Void = { _, _ in }
    ) async throws -> [any Service] {
        let feed = makeChangeFeed(storage: storage)
        let files = try await openFileStorage(storage: storage)
        let mail = configuration.mail.map { MailDelivery(capacity: $0.queueCapacity, logger: configuration.logger) }
        let app = try await makeApplication(
            storage: storage, passwordPool: passwordPool, changeFeed: feed, files: files, mailDelivery: mail,
            onRunning: onRunning)
        var services: [any Service] = [app]
        if let mail { services.append(mail) }
        let observability = configuration.observability
        if let registry = observability.prometheus, let port = observability.metricsPort {
            services.append(
                MetricsListener.application(
                    registry: registry, host: observability.metricsHost ?? configuration.host, port: port,
                    logger: configuration.logger, onRunning: onMetricsRunning))
        }
        if let feed { services.append(feed) }
        if let work = try backgroundWork(storage: storage, changeFeed: feed) { services.append(work) }
        services.append(
            UploadSweeper(
                files: files, interval: UploadSweeper.interval(lifetime: configuration.uploadLifetime),
                logger: configuration.logger))
        return services
    }

    func makeApplication(
        storage: any Storage, passwordPool: NIOThreadPool, changeFeed: ChangeFeed?, files: any FileStorage,
        mailDelivery: MailDelivery? = nil, onRunning: @escaping @Sendable (_ host: String, _ port: Int) async -> Void
    ) async throws -> some ApplicationProtocol {
        let publicBase = PublicBase(configuration: configuration)
        let gate = ConnectionGate(
            limit: configuration.maxConnections ?? ConnectionGate.defaultLimit(), refused: instruments.connectionsRefused)
        let router = try await makeRouter(
            storage: storage, publicBase: publicBase, passwordPool: passwordPool, changeFeed: changeFeed,
            connections: gate, files: files, mailDelivery: mailDelivery)
        // The configured host, unless `application.address` was set apart from it: then what was bound.
        let configuredHost = configuration.bindsHostAndPort ? configuration.host : nil
        let fallbackHost = configuration.host
        let responder = router.buildResponder()
        let http1 = HTTP1Channel.Configuration(idleTimeout: TimeAmount(configuration.idleTimeout))
        let headerTimeout = TimeAmount(configuration.headerReadTimeout)
        let bodyTimeout = TimeAmount(configuration.bodyReadTimeout)
        let onEventLoop = storage is PostgresStorage
        return Application(
            responder: responder,
            server: HTTPServerBuilder { responder in
                TimedHTTP1Channel(
                    inner: HTTP1Channel(responder: responder, configuration: http1), headerTimeout: headerTimeout,
                    bodyTimeout: bodyTimeout, onEventLoop: onEventLoop, gate: gate)
            },
            configuration: configuration.application,
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                let host = configuredHost ?? channel.localAddress?.ipAddress ?? fallbackHost
                publicBase.listening(host: host, port: port)
                await onRunning(host, port)
            },
            logger: configuration.logger)
    }

    func openStorage() async throws -> any Storage {
        let storage = try await DatabaseLocation.migrated(try await configuration.openStorage())
        if instruments.records { (storage as? any InstrumentedStorage)?.instrumentsSlot.install(instruments.storage) }
        if let quotas = storage as? any QuotaStorage {
            do {
                try await quotas.setDefaultQuotas(configuration.quotas)
            } catch {
                try? await storage.close()
                throw error
            }
        }
        if let rules = configuration.accessRules {
            do {
                try await rules.store(in: storage)
                try await rules.buildIndexes(in: storage)
            } catch {
                try? await storage.close()
                throw error
            }
        }
        return storage
    }

    /// Bcrypt's own threads, so password hashing never holds the threads that run queries.
    func startPasswordPool() -> NIOThreadPool {
        let pool = NIOThreadPool(numberOfThreads: max(1, configuration.passwordHashingThreads))
        pool.start()
        return pool
    }

    /// The public client the `outpost` CLI signs in with, created once by migration 3: loopback
    /// redirects (any port), the authorization code and device grants, and refresh (migration 4 took
    /// the password grant away from it). Remove it with `outpost clients remove outpost-cli` to turn
    /// CLI sign-in off; it is not recreated.
    public static let cliClientID = "outpost-cli"

    /// The client id `outpost login --password` uses. No server has it until an operator registers
    /// it, since the password grant is legacy and opt-in per client (RFC 9700 §2.4):
    /// `outpost clients add "Outpost CLI (password)" --id outpost-cli-password --grant password --grant refresh_token`.
    public static let cliPasswordClientID = "outpost-cli-password"

    /// Serves until the process receives SIGINT or SIGTERM, then shuts down gracefully.
    ///
    /// Shutdown goes in order: the change feed ends its streams and its background reads, the HTTP
    /// server stops accepting and lets the requests in flight finish, and only then do the password
    /// threads stop and the storage close (a query after that fails, it never runs).
    ///
    /// - Parameters:
    ///   - onRunning: told the port once the server listens.
    ///   - onMetricsRunning: told the address of the metrics listener once it listens
    ///     (``ObservabilityConfiguration/metricsPort``).
    public func run(
        onRunning: @escaping @Sendable (Int) async -> Void = { _ in },
        onMetricsRunning: @escaping @Sendable (_ host: String, _ port: Int) async -> Void = { _, _ in }
    ) async throws {
        let counted = OpenResources.opened()
        defer { counted.close() }
        let storage = try await openStorage()
        let pool = startPasswordPool()
        do {
            let services = try await makeServices(
                storage: storage, passwordPool: pool, onRunning: { _, port in await onRunning(port) },
                onMetricsRunning: onMetricsRunning)
            let group = ServiceGroup(
                configuration: .init(
                    services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: configuration.logger))
            try await group.run()
        } catch {
            await Self.release(pool: pool, storage: storage)
            throw error
        }
        try? await pool.shutdownGracefully()
        try await storage.close()
    }

    /// Stops the password threads and closes the storage, ignoring their errors (the caller has one).
    private static func release(pool: NIOThreadPool, storage: any Storage) async {
        try? await pool.shutdownGracefully()
        try? await storage.close()
    }

    /// Starts serving in the background and returns once the server listens.
    ///
    /// - Throws: when the database cannot be opened or the address cannot be bound (the storage is
    ///   closed again before it throws).
    public func start() async throws -> RunningServer {
        // The server (its storage, threads and listening socket) in the count of open resources,
        // until its task has closed everything.
        let counted = OpenResources.opened()
        let storage: any Storage
        do {
            storage = try await openStorage()
        } catch {
            counted.close()
            throw error
        }
        let pool = startPasswordPool()
        let (ports, portSink) = AsyncThrowingStream.makeStream(of: (host: String, port: Int).self)
        let (metricsPorts, metricsSink) = AsyncStream.makeStream(of: Int.self)
        let services: [any Service]
        do {
            services = try await makeServices(
                storage: storage, passwordPool: pool, onRunning: { host, port in portSink.yield((host, port)) },
                onMetricsRunning: { _, port in metricsSink.yield(port) })
        } catch {
            await Self.release(pool: pool, storage: storage)
            counted.close()
            throw error
        }
        let group = ServiceGroup(configuration: .init(services: services, logger: configuration.logger))
        let task = Task {
            do {
                try await group.run()
                portSink.finish()
            } catch {
                portSink.finish(throwing: error)
            }
            metricsSink.finish()
            // After every service has returned: no stream, request or feed read uses them any more.
            await Self.release(pool: pool, storage: storage)
            counted.close()
        }
        var iterator = ports.makeAsyncIterator()
        let listening: (host: String, port: Int)?
        do {
            listening = try await iterator.next()
        } catch {
            await group.triggerGracefulShutdown()
            await task.value
            throw error
        }
        guard let (host, port) = listening else {
            // The group stopped, or the caller was cancelled while it started: stop it either way.
            await group.triggerGracefulShutdown()
            await task.value
            throw ServerError(
                .internalServerError, code: "server_stopped",
                message: "The server stopped before it listened on \(configuration.host):\(configuration.port)")
        }
        var metricsPort: Int?
        if configuration.observability.prometheus != nil, configuration.observability.metricsPort != nil {
            var metricsIterator = metricsPorts.makeAsyncIterator()
            metricsPort = await metricsIterator.next()
            if metricsPort == nil {
                await group.triggerGracefulShutdown()
                await task.value
                throw ServerError(
                    .internalServerError, code: "server_stopped",
                    message: "The server stopped before its metrics listener listened on port "
                        + "\(configuration.observability.metricsPort ?? 0); choose another --metrics-port")
            }
        }
        return RunningServer(host: host, port: port, metricsPort: metricsPort, group: group, task: task)
    }
}

/// A server started with ``OutpostServer/start()``.
public final class RunningServer: Sendable {
    public let host: String
    /// The port actually bound (useful with port 0).
    public let port: Int
    /// The port of the metrics listener actually bound; `nil` without one
    /// (``ObservabilityConfiguration/metricsPort``).
    public let metricsPort: Int?
    let group: ServiceGroup
    let task: Task<Void, Never>

    init(host: String, port: Int, metricsPort: Int? = nil, group: ServiceGroup, task: Task<Void, Never>) {
        self.host = host
        self.port = port
        self.metricsPort = metricsPort
        self.group = group
        self.task = task
    }

    /// `http://host:port`.
    public var baseURL: URL {
        var components = URLComponents()
        components.scheme = "http"
        components.host = host.contains(":") ? "[\(host)]" : host
        components.port = port
        return components.url ?? URL(fileURLWithPath: "/")
    }

    /// Stops accepting connections, lets in-flight requests finish, closes the database; returns
    /// once all of that is done.
    public func stop() async {
        await group.triggerGracefulShutdown()
        await task.value
    }
}
