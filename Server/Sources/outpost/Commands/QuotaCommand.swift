import ArgumentParser
import OutpostServer

/// `outpost users quota USERNAME [--records N] [--record-bytes SIZE] [--file-bytes SIZE] [--pending-uploads N]`.
struct QuotaCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "quota",
        abstract: "Show a user's quotas and what their records take; set their own bounds.",
        discussion: """
            Each bound is a number (sizes may end in k, m or g: 1024-based), `default` (the server's, from
            ServerConfiguration.quotas, written to the database at every start) or `none`. Without options it only shows.
            A write past a bound is answered 507 quota_exceeded.
              outpost users quota ada --records 50000 --file-bytes 5g
              outpost users quota ada --records default
            """)

    @Argument var username: String
    @Option(help: "Records the user may own.") var records: String?
    @Option(name: .customLong("record-bytes"), help: "Bytes of their records' fields.") var recordBytes: String?
    @Option(name: .customLong("file-bytes"), help: "Bytes of their files.") var fileBytes: String?
    @Option(name: .customLong("pending-uploads"), help: "Unfinished uploads at once.") var pendingUploads: String?
    @OptionGroup var options: DatabaseOptions

    /// `default`, `none`, or a number with an optional k, m or g (1024-based) suffix.
    static func bound(_ text: String, option: String) throws -> QuotaBound {
        guard let bound = QuotaBound(parsing: text) else {
            throw ValidationError("--\(option) takes \(QuotaBound.parsingHelp); '\(text)' is none of them")
        }
        return bound
    }

    func validate() throws {
        for (text, option) in [
            (records, "records"), (recordBytes, "record-bytes"), (fileBytes, "file-bytes"), (pendingUploads, "pending-uploads"),
        ] {
            if let text { _ = try Self.bound(text, option: option) }
        }
    }

    func run() async throws {
        try await options.withStorage { storage in
            guard let user = try await storage.user(username: username) else {
                throw ValidationError("No user '\(username)'; add one with `outpost users add`")
            }
            guard let quotas = storage as? any QuotaStorage else {
                throw ValidationError("This database keeps no quotas; use SQLite or PostgreSQL")
            }
            var overrides = try await quotas.quotaOverrides(user: user.id)
            if let records { overrides.records = try Self.bound(records, option: "records") }
            if let recordBytes { overrides.recordBytes = try Self.bound(recordBytes, option: "record-bytes") }
            if let fileBytes { overrides.fileBytes = try Self.bound(fileBytes, option: "file-bytes") }
            if let pendingUploads { overrides.pendingUploads = try Self.bound(pendingUploads, option: "pending-uploads") }
            if records != nil || recordBytes != nil || fileBytes != nil || pendingUploads != nil {
                try await quotas.setQuotaOverrides(overrides, user: user.id)
                var detail: [String: String] = [:]
                for (name, value) in [
                    ("records", records), ("record_bytes", recordBytes), ("file_bytes", fileBytes),
                    ("pending_uploads", pendingUploads),
                ] {
                    if let value { detail[name] = value }
                }
                await OperatorAudit.record(storage, AuditAction.userQuotaChanged, subject: user.id, detail: detail)
            }
            let defaults = try await quotas.defaultQuotas()
            let usage = try await quotas.recordUsage(owner: user.id)
            func line(_ name: String, _ bound: QuotaBound, _ standard: Int64?, used: Int64?) -> String {
                let limit: String
                switch bound {
                case .standard: limit = (standard.map(String.init) ?? "none") + " (default)"
                case .unlimited: limit = "none (own)"
                case .limit(let value): limit = "\(value) (own)"
                }
                return "  \(name): " + (used.map { "\($0) of " } ?? "") + limit
            }
            print("\(user.username) (\(user.id))")
            print(line("records", overrides.records, defaults.records, used: usage.records))
            print(line("record bytes", overrides.recordBytes, defaults.recordBytes, used: usage.recordBytes))
            print(line("file bytes", overrides.fileBytes, defaults.fileBytes, used: nil))
            print(line("pending uploads", overrides.pendingUploads, defaults.pendingUploads, used: nil))
        }
    }
}
