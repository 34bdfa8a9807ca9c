public import Foundation

/// One write waiting in an ``Outbox``: the request as it will be sent, the `Idempotency-Key` fixed
/// when it was queued, and the record it belongs to (writes to the same record go out in order).
public struct OutboxEntry: Sendable, Codable, Hashable, Identifiable {
    /// Where the entry is.
    public enum State: Sendable, Codable, Hashable {
        /// Waiting to be sent (or being sent).
        case pending
        /// Stopped: the server refused it (conflict, validation, authentication). It stays in the
        /// outbox, and holds back later writes to the same record, until it is retried or dropped.
        case failed(OutboxFailure)
    }

    /// A header kept with the entry.
    public struct Header: Sendable, Codable, Hashable {
        public var name: String
        public var value: String
    }

    /// A query item kept with the entry.
    public struct QueryItem: Sendable, Codable, Hashable {
        public var name: String
        public var value: String?
    }

    public let id: UUID
    /// The order of queueing, increasing.
    public internal(set) var sequence: UInt64
    /// What the write is, for people: `push Person`, `POST /records/notes`.
    public var label: String
    public var method: String
    /// The path relative to the client's base URL.
    public var path: String
    public var query: [QueryItem]
    /// The request's own headers. `Authorization`, `Cookie` and `Proxy-Authorization` are never
    /// written to disk: the client's middlewares add credentials when the entry is sent.
    public var headers: [Header]
    public var body: Data?
    public var contentType: String?
    /// Sent as `Idempotency-Key` on every attempt, so that the server applies a POST once however
    /// many times a lost reply makes the outbox send it.
    public var idempotencyKey: String
    /// Writes with the same key are sent one after another, in queue order; the item path of the
    /// record for entity writes.
    public var recordKey: String
    /// The `If-Match` the write is conditional on. When an earlier write to the same record that was
    /// conditional on the same ETag succeeds, this becomes the ETag that write produced.
    public var ifMatch: String?
    public var enqueuedAt: Date
    public var state: State

    /// The value the write carries (its JSON body), to show the user when it fails.
    public var value: JSONValue? {
        guard let body, !body.isEmpty else { return nil }
        return try? JSONValue(parsing: body)
    }

    /// The server's refusal, when the entry is ``State/failed(_:)``.
    public var failure: OutboxFailure? {
        if case .failed(let failure) = state { return failure }
        return nil
    }

    /// Headers that carry credentials: the outbox never writes them to its journal.
    static let secretHeaders: Set<String> = ["authorization", "cookie", "proxy-authorization"]
}

/// Why the server refused a queued write, kept with the entry so the app can show it later.
public struct OutboxFailure: Sendable, Codable, Hashable, CustomStringConvertible {
    /// The kind of refusal.
    public struct Kind: Sendable, Codable, Hashable, RawRepresentable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// 412: the record changed on the server since the write's `If-Match` ETag was read.
        public static let conflict = Kind(rawValue: "conflict")
        /// 401 or 403: the credentials were missing, expired or not enough.
        public static let authentication = Kind(rawValue: "authentication")
        /// Another 4xx: the server will not take this write as it is.
        public static let rejected = Kind(rawValue: "rejected")
    }

    public var kind: Kind
    public var status: Int?
    public var serverCode: String?
    public var serverMessage: String?
    public var details: JSONValue?
    /// The client's description of the error.
    public var message: String

    /// Keeps what the app needs of `error`.
    public init(kind: Kind, error: OutpostError) {
        self.kind = kind
        status = error.status
        serverCode = error.serverCode
        serverMessage = error.serverMessage
        details = error.details
        message = error.description
    }

    public var description: String { "\(kind): \(message)" }
}

/// Something the app may want to show about its ``Outbox``.
public enum OutboxEvent: Sendable {
    /// How many writes are waiting to be sent (failed ones not counted). Sent first to every new
    /// observer, then after every change.
    case pending(Int)
    /// A write reached the server and left the outbox.
    case completed(OutboxCompletion)
    /// The server refused a write; it waits in the outbox for ``Outbox/retry(_:ifMatch:)`` or ``Outbox/cancel(_:)``.
    case failed(OutboxEntry, OutboxFailure)
    /// A write failed in a way another try may cure (no connection, 5xx, 429); the next try is after `delay`.
    case retrying(OutboxEntry, error: OutpostError, attempt: Int, delay: Duration)
    /// The journal's tail could not be read when the outbox opened. Sent first to every observer.
    case corruption(OutboxCorruption)
}

/// A journal tail that could not be read: torn by a crash in the middle of a write, or damaged on disk.
public struct OutboxCorruption: Sendable, Hashable, CustomStringConvertible {
    /// Where the unreadable part starts in the journal.
    public var offset: Int
    /// How many bytes were set aside.
    public var byteCount: Int
    /// What was wrong with the first unreadable frame.
    public var reason: String
    /// The file that keeps the unreadable bytes, owner-only, for inspection.
    public var savedAt: URL

    public var description: String {
        "The outbox journal was unreadable from byte \(offset) (\(reason)); \(byteCount) bytes were kept in \(savedAt.path)"
    }
}

/// A queued write that reached the server.
public struct OutboxCompletion: Sendable {
    public var entry: OutboxEntry
    /// The status of the answer (for a write found already applied, of the check that found it).
    public var status: Int
    /// The record's ETag after the write, when the server sent one.
    public var etag: String?
    /// The answer's `Location`, e.g. the path of a record created by a queued POST.
    public var location: String?
    /// The answer's body (the created or updated record, for an Outpost server).
    public var body: Data
    /// True when the server had applied the write before and its reply was lost: a 412 whose record
    /// already shows the write, or a 404 to a `DELETE`. See <doc:DurableOutbox>.
    public var alreadyApplied: Bool
}
