public import Logging

/// How the reference server runs. Every field has a default.
public struct ServerConfiguration: Sendable {
    /// The address to listen on. Default: `127.0.0.1` (loopback only).
    public var host: String
    /// The port to listen on; `0` picks a free one (see ``RunningServer/port``). Default: 8080.
    public var port: Int
    /// Where the SQLite database lives; created and migrated on start. Default: `./outpost.sqlite`.
    public var databasePath: String
    /// Larger request bodies are refused with 413. Default: 1 MiB.
    public var maxBodyBytes: Int
    /// A lambda or handler still running after this is abandoned with 504 `lambda_timeout`. Default: 10 s.
    public var lambdaTimeout: Duration
    /// Request logs go here at `info`, failures at `warning`/`error`. Default: a logger labelled `outpost.server` at `info`.
    public var logger: Logger
    /// OpenID Connect: ID tokens and their signing keys.
    public var openID = OpenIDConfiguration()
    /// Sign-in and tokens.
    public var auth: AuthConfiguration

    public init(
        host: String = "127.0.0.1",
        port: Int = 8080,
        databasePath: String = "outpost.sqlite",
        maxBodyBytes: Int = 1 << 20,
        lambdaTimeout: Duration = .seconds(10),
        logger: Logger = Logger(label: "outpost.server"),
        auth: AuthConfiguration = AuthConfiguration()
    ) {
        self.host = host
        self.port = port
        self.databasePath = databasePath
        self.maxBodyBytes = maxBodyBytes
        self.lambdaTimeout = lambdaTimeout
        self.logger = logger
        self.auth = auth
    }
}
