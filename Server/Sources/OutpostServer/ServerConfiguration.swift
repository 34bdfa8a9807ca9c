public import Foundation
public import Hummingbird
public import Logging

/// How the reference server runs. Every field has a default.
public struct ServerConfiguration: Sendable {
    /// The default of ``maxJSONDepth``.
    public static let defaultMaxJSONDepth = 64
    /// The default of ``maxJSONKeys``.
    public static let defaultMaxJSONKeys = 1000
    /// Hummingbird's own settings of the listening server: the bind address (kept equal to
    /// ``host`` and ``port``, which set it), the `Server` header's value (default `Outpost`), the
    /// accept backlog, address reuse, and a limit on open connections (`availableConnectionsDelegate`).
    ///
    /// Setting `application.address` to another host name or a Unix domain socket works too: the
    /// server then reports the address it actually bound (set ``publicURL`` for a socket path).
    public var application: ApplicationConfiguration
    /// The address to listen on; sets ``application``'s address. Default: `127.0.0.1` (loopback only).
    public var host: String {
        didSet { application.address = .hostname(host, port: port) }
    }
    /// The port to listen on; `0` picks a free one (see ``RunningServer/port``). Sets
    /// ``application``'s address. Default: 8080.
    public var port: Int {
        didSet { application.address = .hostname(host, port: port) }
    }
    /// Where the data lives (see ``DatabaseLocation``): a SQLite file path, created when missing, or
    /// a `postgres://user:password@host:port/database` URL, for several instances on one database.
    /// Migrated on start. Ignored when ``storageFactory`` is set. Default: `./outpost.sqlite`.
    public var databasePath: String
    /// Larger request bodies are refused with 413. Default: 1 MiB.
    public var maxBodyBytes: Int
    /// A lambda or handler still running after this is abandoned with 504 `lambda_timeout`. Default: 10 s.
    public var lambdaTimeout: Duration
    /// Request logs go here at `info`, failures at `warning`/`error`. Default: a logger labelled `outpost.server` at `info`.
    public var logger: Logger
    /// Sign-in and tokens.
    public var auth: AuthConfiguration
    /// The URL people and clients reach the server at, e.g. `https://auth.example.com` behind a
    /// proxy. The issuer, every endpoint in the metadata, the device flow's `verification_uri` and
    /// list links start with it, and the sign-in pages accept form posts from its origin only.
    /// Default `nil`: the address the server actually bound, `http://host:port`.
    public var publicURL: URL?
    /// OpenID Connect: ID tokens and their signing keys.
    public var openID = OpenIDConfiguration()
    /// Upstream OpenID Connect providers: key fetching and token checks.
    public var federation = FederationConfiguration()
    /// The folder `/files` keeps files and pending uploads in, created on start (owner-only).
    /// Default `nil`: on SQLite, next to the database, its path without the extension plus `-files`
    /// (`outpost.sqlite` → `outpost-files`); on PostgreSQL, no folder: files live in the database,
    /// where every instance reads them. Set on PostgreSQL, every instance must share this folder.
    public var filesDirectory: String? = nil
    /// The default of ``uploadLifetime``: 6 hours.
    public static let defaultUploadLifetime: Duration = .seconds(6 * 3600)
    /// A pending resumable upload that nobody wrote to for this long is gone: asking for its offset
    /// or sending more is answered as for an unknown upload, and a sweep every tenth of this (at
    /// most every 10 minutes) removes its bytes while the server runs. Default: 6 hours.
    public var uploadLifetime: Duration = ServerConfiguration.defaultUploadLifetime
    /// The clock pending uploads expire by (tests move it forward). Default: the system's.
    package var uploadClock: @Sendable () -> Date = { Date() }
    /// The largest file `PUT /files/{name}` stores; a larger one is refused with 413
    /// `file_too_large`. ``maxBodyBytes`` does not apply to files. Default: 1 GiB.
    public var maxFileBytes: Int64 = 1 << 30
    /// Another origin to serve file downloads from, e.g. `https://files.example.net`: a host name
    /// that reaches this same server (every instance) but no other site of the deployment, so that
    /// nothing a user uploads is ever opened as the server's own origin. When set, `GET /files/{name}`
    /// checks the caller as always and answers `307` with a signed link to that origin, valid for
    /// ``fileLinkLifetime``; requests whose `Host` is that origin's get the file behind a valid link
    /// and `404` for everything else. Default `nil`: files are served from the server's own origin,
    /// with the same headers that keep them from running there.
    public var filesURL: URL? = nil
    /// How long a signed link to ``filesURL`` stays valid. Default: 5 minutes.
    public var fileLinkLifetime: Duration = .seconds(300)
    /// Told, after each piece of a file download, how much the connection holds unsent, for the
    /// file names it watches: how the tests and the benchmark measure a download's memory bound.
    /// Default `nil`.
    package var downloadObserver: (any DownloadObserver)? = nil
    /// Mail for password reset and e-mail verification; `nil` (the default) sends none.
    public var mail: MailConfiguration? = nil
    /// The change feed (`GET /records/{type}/changes`): retention, subscriber limit, heartbeats.
    public var changes = ChangeFeedConfiguration()
    /// How after hooks and scheduled jobs run.
    public var background = BackgroundWorkConfiguration()
    /// How long an instance keeps the access rules and users' roles it read from storage before
    /// reading them again: a rule changed in storage applies to every instance within this long.
    /// Default: 1 s.
    public var accessRulesMaxAge: Duration = .seconds(1)
    /// Access rules written to storage at start, replacing the stored ones (`outpost serve
    /// --rules FILE`). Default `nil`: the stored rules stay as they are.
    public var accessRules: AccessRuleSet? = nil
    /// JSON request bodies with arrays and objects nested deeper than this are refused with 400
    /// `json_too_deep` before any parsing. Default: 64.
    public var maxJSONDepth: Int
    /// A JSON request body with an object of more keys than this (a repeated key counts each
    /// time) is refused with 400 `too_many_keys`, while it is parsed. Default: 1,000.
    public var maxJSONKeys: Int = ServerConfiguration.defaultMaxJSONKeys
    /// Whether 404 `unknown_lambda`, `unknown_handler` and `unknown_provider` list the names the
    /// server has to every caller (`outpost serve --demo` sets it). Default `false`: they are
    /// listed to signed-in callers with the role `admin` only.
    public var listsPluginNames = false
    /// A connection that completes no request part for this long is closed: idle keep-alive
    /// connections, and requests that stall. Default: 30 s.
    public var idleTimeout: Duration
    /// Connections the server holds at once; one more is answered 503 `too_many_connections` with
    /// `Retry-After: 1` and closed before its request is read. Default `nil`: the process's soft
    /// limit of open files less a quarter of it (at least 256), so descriptors remain for the
    /// database, files and streams.
    public var maxConnections: Int? = nil
    /// A request's head (request line and header fields) must arrive within this long of its first
    /// byte, or the server answers 408 and closes the connection. Default: 10 s.
    public var headerReadTimeout: Duration
    /// A request's body must arrive within this long of its head, or the server answers 408
    /// `request_timeout` and closes the connection. Default: 30 s. For a file upload
    /// (`PUT /files/…`) it is the longest silence between two pieces of the body instead.
    public var bodyReadTimeout: Duration
    /// A list with `filter` or `sort` that no declared index serves (``RecordIndex``) runs only on a
    /// type of at most this many records, counted by a query that stops one record past it; on a
    /// larger type it is answered 400 `index_required`, naming the index to declare. Default: 10,000.
    public var unindexedListLimit: Int = 10_000
    /// The most bytes of records one list page answers: a keyset page ends before the record that
    /// would pass it (and its `next_cursor` continues there); a page by number that would pass it is
    /// 400 `page_too_large`. A page always holds at least one record. Default: 4 MiB.
    public var maxPageBytes: Int = 4 << 20
    /// What each user may store (records, bytes of records, bytes of files, pending uploads), unless
    /// the operator set a user's own (`outpost users quota`). Written to the database at start; the
    /// database checks every record write against them, `PUT /files/…` checks files. Past a bound:
    /// 507 `quota_exceeded` naming it. Default: ``Quotas/standard``.
    public var quotas: Quotas = .standard
    /// What `DELETE /me` and `outpost users delete` do with a deleted user's records and files
    /// (delete them, or give them to another user: `outpost serve --on-account-deletion`), and the
    /// hooks told first (``AccountDeletionHook``). Default: delete, no hooks.
    public var accountDeletion = AccountDeletionConfiguration()
    /// How many lists that no declared index serves (a filter or a sort by fields, up to
    /// ``unindexedListLimit`` rows a page) run at once per instance; more wait in arrival order, up
    /// to ``listScansWaiting``, and at most 2 of one client address run or wait. One past a bound is
    /// 503 `server_busy` with `Retry-After: 1`, and `/health/ready` reports `list_scans` while every
    /// place is taken and the queue is half full. Default: half the processors, at least 1.
    public var listScans: Int = max(1, ProcessInfo.processInfo.activeProcessorCount / 2)
    /// How many lists wait for a place of ``listScans``. Default: 16.
    public var listScansWaiting: Int = 16
    /// How long a query waits for another process's lock on the database before the request is
    /// answered 503 `storage_busy` with `Retry-After`. Default: 5 s.
    public var storageBusyTimeout: Duration
    /// Who may sign up with `POST /users`: anyone (`open`, the default), holders of a one-time
    /// invite code from `outpost users invite` (`invite`), or nobody (`closed`). Users added by the
    /// operator (`outpost users add`) and first sign-ins through a provider are not affected.
    public var signUp: SignUpMode = .open
    /// The reverse proxies in front of the server (`outpost serve --trusted-proxy CIDR`): from
    /// those peers only, the client's address is read from the header they write, for the sign-in
    /// and sign-up limits and the access log. Default: none; the socket's peer is the client.
    public var trustedProxies = TrustedProxies()
    /// Sign-ups (`POST /users`) allowed per client address within ``signUpWindow``; more are 429
    /// with `Retry-After`. Default: 10.
    public var signUpsPerAddress: Int
    /// The sliding window of ``signUpsPerAddress``. Default: 1 hour.
    public var signUpWindow: Duration
    /// Threads that hash and check passwords (Bcrypt), apart from the threads that run queries, so
    /// sign-ups never starve storage. Default: 1.
    public var passwordHashingThreads: Int
    /// Where metrics and spans go, and the Prometheus listener (`outpost serve --metrics-port`).
    /// Default: the process's metrics factory and tracer (no-op unless bootstrapped), no listener.
    public var observability = ObservabilityConfiguration()
    /// Opens the server's storage instead of ``databasePath``: inject any ``Storage``. The server
    /// migrates what it returns and closes it when it stops. Default: `nil`.
    public var storageFactory: StorageFactory?

    /// Makes the storage a server runs on (see ``storageFactory``).
    public typealias StorageFactory = @Sendable () async throws -> any Storage

    /// The storage this configuration names: ``storageFactory`` when set, else ``databasePath``.
    /// Not migrated.
    public func openStorage() async throws -> any Storage {
        if let storageFactory { return try await storageFactory() }
        return try await DatabaseLocation(databasePath).open(busyTimeout: storageBusyTimeout, logger: logger)
    }

    public init(
        host: String = "127.0.0.1",
        port: Int = 8080,
        databasePath: String = "outpost.sqlite",
        maxBodyBytes: Int = 1 << 20,
        lambdaTimeout: Duration = .seconds(10),
        logger: Logger = Logger(label: "outpost.server"),
        auth: AuthConfiguration = AuthConfiguration(),
        publicURL: URL? = nil,
        maxJSONDepth: Int = ServerConfiguration.defaultMaxJSONDepth,
        idleTimeout: Duration = .seconds(30),
        headerReadTimeout: Duration = .seconds(10),
        bodyReadTimeout: Duration = .seconds(30),
        storageBusyTimeout: Duration = .seconds(5),
        signUpsPerAddress: Int = 10,
        signUpWindow: Duration = .seconds(3600),
        passwordHashingThreads: Int = 1
    ) {
        self.host = host
        self.port = port
        self.application = ApplicationConfiguration(address: .hostname(host, port: port), serverName: "Outpost")
        self.databasePath = databasePath
        self.maxBodyBytes = maxBodyBytes
        self.lambdaTimeout = lambdaTimeout
        self.logger = logger
        self.auth = auth
        self.publicURL = publicURL
        self.maxJSONDepth = maxJSONDepth
        self.idleTimeout = idleTimeout
        self.headerReadTimeout = headerReadTimeout
        self.bodyReadTimeout = bodyReadTimeout
        self.storageBusyTimeout = storageBusyTimeout
        self.signUpsPerAddress = signUpsPerAddress
        self.signUpWindow = signUpWindow
        self.passwordHashingThreads = passwordHashingThreads
    }
}

extension ServerConfiguration {
    /// Whether ``application``'s address is still ``host`` and ``port`` (not set apart from them).
    var bindsHostAndPort: Bool { application.address == .hostname(host, port: port) }

    /// The folder files are kept in: ``filesDirectory``, or next to an SQLite database (see there);
    /// `nil` for a PostgreSQL database URL without ``filesDirectory``, whose files live in the
    /// database. A database URL is never made into a path: it may hold a password.
    public var resolvedFilesDirectory: String? {
        if let filesDirectory { return filesDirectory }
        if DatabaseLocation.isPostgresURL(databasePath) { return nil }
        return URL(fileURLWithPath: databasePath).deletingPathExtension().path + "-files"
    }
}
