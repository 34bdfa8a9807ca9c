import HTTPTypes
@_spi(OutpostInternal) import OutpostCore

/// What one user may store: records, bytes of their records' fields (the stored JSON text), bytes
/// of their files, and uploads pending at once. `nil` bounds nothing.
public struct Quotas: Sendable, Equatable, Codable {
    public var records: Int64?
    public var recordBytes: Int64?
    public var fileBytes: Int64?
    public var pendingUploads: Int64?

    public init(records: Int64? = nil, recordBytes: Int64? = nil, fileBytes: Int64? = nil, pendingUploads: Int64? = nil) {
        self.records = records
        self.recordBytes = recordBytes
        self.fileBytes = fileBytes
        self.pendingUploads = pendingUploads
    }

    /// The server's defaults: 100,000 records, 256 MiB of records, 1 GiB of files, 8 pending uploads.
    public static let standard = Quotas(
        records: 100_000, recordBytes: 256 << 20, fileBytes: 1 << 30, pendingUploads: 8)

    /// These defaults with a user's ``QuotaOverrides`` applied.
    public func applying(_ overrides: QuotaOverrides) -> Quotas {
        Quotas(
            records: overrides.records.resolve(records), recordBytes: overrides.recordBytes.resolve(recordBytes),
            fileBytes: overrides.fileBytes.resolve(fileBytes), pendingUploads: overrides.pendingUploads.resolve(pendingUploads))
    }
}

/// One bound of a user's own: the operator's default, none, or a number.
public enum QuotaBound: Sendable, Equatable, Codable {
    case standard
    case unlimited
    case limit(Int64)

    /// The bound in force, given the default.
    func resolve(_ standard: Int64?) -> Int64? {
        switch self {
        case .standard: return standard
        case .unlimited: return nil
        case .limit(let value): return value
        }
    }

    /// As stored: `NULL` for the default, -1 for none, the number otherwise.
    var stored: Int64? {
        switch self {
        case .standard: return nil
        case .unlimited: return -1
        case .limit(let value): return value
        }
    }

    init(stored: Int64?) {
        switch stored {
        case nil: self = .standard
        case let value? where value < 0: self = .unlimited
        case let value?: self = .limit(value)
        }
    }
}

/// A user's own bounds, each ``QuotaBound/standard`` unless the operator set it
/// (`outpost users quota`).
public struct QuotaOverrides: Sendable, Equatable, Codable {
    public var records: QuotaBound = .standard
    public var recordBytes: QuotaBound = .standard
    public var fileBytes: QuotaBound = .standard
    public var pendingUploads: QuotaBound = .standard

    public init() {}
}

/// What one user's records take: kept by the database itself on every write.
public struct RecordUsage: Sendable, Equatable {
    public var records: Int64
    public var recordBytes: Int64

    public init(records: Int64, recordBytes: Int64) {
        self.records = records
        self.recordBytes = recordBytes
    }
}

/// Quotas kept with the data. The database checks every record write against them inside the
/// write's own statement (triggers, on any connection or instance): a create past the records or
/// bytes bound of its owner, or an update that grows a record past the bytes bound, fails and is
/// answered 507 `quota_exceeded`, naming the bound.
public protocol QuotaStorage: Sendable {
    /// Stores the operator's defaults, which the database's checks read. Every instance writes its
    /// configuration's at start.
    func setDefaultQuotas(_ quotas: Quotas) async throws
    /// The defaults the database holds.
    func defaultQuotas() async throws -> Quotas
    /// The user's own bounds (all ``QuotaBound/standard`` when none was set).
    func quotaOverrides(user: String) async throws -> QuotaOverrides
    func setQuotaOverrides(_ overrides: QuotaOverrides, user: String) async throws
    /// What the user's records take now.
    func recordUsage(owner: String) async throws -> RecordUsage
}

/// A write past its owner's quota: what the database's check raised, as the 507 a client gets.
enum QuotaExceeded {
    /// The text the checks raise: this prefix, then the bound's name (`records`, `record_bytes`).
    static let prefix = "quota_exceeded:"

    /// The 507 for an error of either database that a quota check raised; `nil` for any other.
    static func serverError(for error: any Error) -> ServerError? {
        fromSQLite(error) ?? fromPostgres(error)
    }

    /// The answer for a storage error whose message is a raised quota check; `nil` for any other.
    static func serverError(forStorageMessage message: String) -> ServerError? {
        guard let range = message.range(of: prefix) else { return nil }
        let bound = message[range.upperBound...].prefix { $0.isLetter || $0 == "_" }
        return error(String(bound))
    }

    /// 507 `quota_exceeded` naming `bound` (`records`, `record_bytes`, `file_bytes`, `pending_uploads`).
    static func error(_ bound: String, limit: Int64? = nil) -> ServerError {
        let words =
            switch bound {
            case "records": "as many records as their quota allows"
            case "record_bytes": "as many bytes of records as their quota allows"
            case "file_bytes": "as many bytes of files as their quota allows"
            default: "as many unfinished uploads as their quota allows"
            }
        var details: [String: JSONValue] = ["quota": .string(bound)]
        if let limit { details["limit"] = .int(Int(limit)) }
        return ServerError(
            HTTPResponse.Status(code: 507, reasonPhrase: "Insufficient Storage"), code: "quota_exceeded",
            message: "The owner holds \(words); delete some, or ask the server's operator for a larger quota "
                + "(outpost users quota)",
            details: .object(details))
    }
}
