import Foundation
public import Logging

/// Where the server keeps its data: an embedded SQLite file, or a PostgreSQL database that several
/// server instances can share.
///
/// Parsed from the `--database` option and ``ServerConfiguration/databasePath``: a
/// `postgres://` or `postgresql://` URL selects PostgreSQL, anything else is a SQLite file path.
///
/// ```
/// outpost serve --database outpost.sqlite
/// outpost serve --database 'postgres://outpost:secret@db.internal:5432/outpost?sslmode=require'
/// ```
public enum DatabaseLocation: Sendable, Hashable, CustomStringConvertible {
    /// A SQLite file, created when missing.
    case sqlite(path: String)
    /// A PostgreSQL database, which must exist; its tables are created by the migrations.
    case postgres(PostgresLocation)

    /// URLs longer than this are refused before parsing.
    static let maxLength = 4096

    /// Reads a SQLite path or a PostgreSQL URL.
    ///
    /// - Throws: ``ServerError`` `invalid_database` with what to write instead.
    public init(_ text: String) throws {
        guard text.utf8.count <= Self.maxLength else {
            throw Self.invalid(
                "The database setting is longer than \(Self.maxLength) bytes; give a file path or a postgres:// URL")
        }
        guard Self.isPostgresURL(text) else {
            guard !text.isEmpty else {
                throw Self.invalid("The database setting is empty; give a file path or a postgres:// URL")
            }
            self = .sqlite(path: text)
            return
        }
        self = .postgres(try PostgresLocation(url: text))
    }

    /// Whether `text` names PostgreSQL (a `postgres://` or `postgresql://` URL, in any case).
    static func isPostgresURL(_ text: String) -> Bool {
        let lower = text.prefix(13).lowercased()
        return lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://")
    }

    /// The location without its password, fit for logs.
    public var description: String {
        switch self {
        case .sqlite(let path): path
        case .postgres(let location): location.description
        }
    }

    /// Opens the storage (not yet migrated). The caller closes it.
    ///
    /// - Parameters:
    ///   - busyTimeout: How long a statement waits for a lock held by someone else before the
    ///     request fails with 503 `storage_busy`.
    ///   - logger: Receives the storage's own messages.
    public func open(busyTimeout: Duration = .seconds(5), logger: Logger) async throws -> any Storage {
        switch self {
        case .sqlite(let path):
            return try await SQLiteStorage.open(path: path, busyTimeout: busyTimeout, logger: logger)
        case .postgres(let location):
            return try await PostgresStorage.open(location, busyTimeout: busyTimeout, logger: logger)
        }
    }

    /// Opens and migrates the storage; on a failed migration it is closed again.
    public func openMigrated(busyTimeout: Duration = .seconds(5), logger: Logger) async throws -> any Storage {
        try await Self.migrated(try await open(busyTimeout: busyTimeout, logger: logger))
    }

    /// `storage`, migrated; closed when the migration fails.
    static func migrated(_ storage: any Storage) async throws -> any Storage {
        do {
            try await storage.migrate()
        } catch {
            try? await storage.close()
            throw error
        }
        return storage
    }

    static func invalid(_ message: String) -> ServerError {
        ServerError(.internalServerError, code: "invalid_database", message: message)
    }
}

/// A PostgreSQL database named by a URL: `postgres://user[:password]@host[:port]/database[?sslmode=…]`.
public struct PostgresLocation: Sendable, Hashable, CustomStringConvertible {
    /// How the connection uses TLS (libpq's `sslmode` names).
    public enum TLSMode: String, Sendable, Hashable {
        /// Plain TCP (a loopback or private network).
        case disable
        /// TLS when the server offers it (libpq's default).
        case prefer
        /// TLS or no connection, with the server's certificate verified.
        case require
    }

    public var host: String
    public var port: Int
    public var username: String
    /// Never logged: ``description`` leaves it out.
    public var password: String?
    public var database: String
    public var tls: TLSMode

    /// Parses a `postgres://` or `postgresql://` URL.
    ///
    /// - Throws: ``ServerError`` `invalid_database` naming the part that is wrong.
    public init(url text: String) throws {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            scheme == "postgres" || scheme == "postgresql"
        else {
            throw DatabaseLocation.invalid(
                "The database URL is not a valid URL; write it as postgres://user:password@host:5432/database")
        }
        guard let host = components.host, !host.isEmpty else {
            throw DatabaseLocation.invalid("The database URL names no host; write it as postgres://user@host:5432/database")
        }
        guard let user = components.user, !user.isEmpty else {
            throw DatabaseLocation.invalid("The database URL names no user; write it as postgres://user@\(host)/database")
        }
        let name = String(components.path.drop(while: { $0 == "/" }))
        guard !name.isEmpty, !name.contains("/") else {
            throw DatabaseLocation.invalid("The database URL names no database; write it as postgres://\(user)@\(host)/database")
        }
        var tls = TLSMode.prefer
        for item in components.queryItems ?? [] {
            switch item.name {
            case "sslmode":
                switch item.value ?? "" {
                case "disable", "allow": tls = .disable
                case "prefer": tls = .prefer
                case "require", "verify-ca", "verify-full": tls = .require
                default:
                    throw DatabaseLocation.invalid("sslmode in the database URL must be disable, prefer or require")
                }
            default:
                throw DatabaseLocation.invalid(
                    "The database URL has the unknown parameter '\(item.name)'; only sslmode (disable, prefer, require) is read")
            }
        }
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        self.port = components.port ?? 5432
        self.username = components.percentEncodedUser?.removingPercentEncoding ?? user
        self.password = components.percentEncodedPassword?.removingPercentEncoding
        self.database = name.removingPercentEncoding ?? name
        self.tls = tls
    }

    /// `postgres://user@host:port/database`, without the password.
    public var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "postgres://\(username)@\(shownHost):\(port)/\(database)"
    }
}
