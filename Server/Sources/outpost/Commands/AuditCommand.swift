import ArgumentParser
import Foundation
import OutpostServer

/// `outpost audit`: the audit log as JSON lines; `outpost audit prune`: its retention.
struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Print audit events as JSON lines, oldest first, or prune them (works on the database directly).",
        discussion: """
            Each line has the keys id, time (ISO 8601, UTC), actor (a user id, "operator" for these commands, or \
            null), action, subject, client_address and detail (an object of strings).
              outpost audit --since 2026-11-01 --action sign_in.
              outpost audit prune --before 2026-01-01
            """,
        subcommands: [Prune.self])

    /// `2026-11-29`, `2026-11-29T10:00:00Z` (or with fractional seconds) as milliseconds since 1970.
    static func milliseconds(_ text: String) -> Int64? { AuditQuery.time(text) }

    static let dateHelp = "a date (2026-11-29, midnight UTC) or a time (2026-11-29T10:00:00Z)"

    @Option(help: "Events at or after this time: \(AuditCommand.dateHelp).") var since: String?
    @Option(help: "Events whose action starts with this, e.g. sign_in. or user.deleted.") var action = ""
    @Option(help: "At most this many events (1 to 100000).") var limit = 1000
    @OptionGroup var options: DatabaseOptions

    func validate() throws {
        if let since, AuditCommand.milliseconds(since) == nil {
            throw ValidationError("--since takes \(AuditCommand.dateHelp)")
        }
        guard (1...100_000).contains(limit) else { throw ValidationError("--limit takes a number from 1 to 100000") }
        guard action.utf8.count <= 64 else { throw ValidationError("--action takes at most 64 characters") }
    }

    func run() async throws {
        let query = AuditQuery(
            since: since.flatMap(AuditCommand.milliseconds) ?? 0, actionPrefix: action, limit: limit)
        let events = try await options.withStorage { storage in
            guard let audit = storage as? any AuditStorage else {
                throw ValidationError("This database keeps no audit log; use SQLite or PostgreSQL")
            }
            return try await audit.auditEvents(query)
        }
        for event in events { print(AuditLine(event).text) }
    }

    struct Prune: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove the audit events older than a date (the log's retention).",
            discussion: "  outpost audit prune --before 2026-01-01")
        @Option(help: "Remove the events before this: \(AuditCommand.dateHelp).") var before: String
        @OptionGroup var options: DatabaseOptions

        func validate() throws {
            guard AuditCommand.milliseconds(before) != nil else {
                throw ValidationError("--before takes \(AuditCommand.dateHelp)")
            }
        }

        func run() async throws {
            let cutoff = AuditCommand.milliseconds(before) ?? 0
            let removed = try await options.withStorage { storage in
                guard let audit = storage as? any AuditStorage else {
                    throw ValidationError("This database keeps no audit log; use SQLite or PostgreSQL")
                }
                return try await audit.pruneAuditEvents(before: cutoff)
            }
            print("removed \(removed) audit events before \(before)")
        }
    }
}

/// One audit event as a line of JSON with the same keys every time (`null` for what it lacks).
struct AuditLine: Encodable {
    let event: AuditEvent

    init(_ event: AuditEvent) { self.event = event }

    enum CodingKeys: String, CodingKey {
        case id, time, actor, action, subject
        case clientAddress = "client_address"
        case detail
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(event.id, forKey: .id)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        try container.encode(
            formatter.string(from: Date(timeIntervalSince1970: Double(event.time) / 1000)), forKey: .time)
        try container.encode(event.actor, forKey: .actor)
        try container.encode(event.action, forKey: .action)
        try container.encode(event.subject, forKey: .subject)
        try container.encode(event.clientAddress, forKey: .clientAddress)
        try container.encode(event.detail, forKey: .detail)
    }

    var text: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
