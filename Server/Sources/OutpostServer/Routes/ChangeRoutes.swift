import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// `GET /records/{type}/changes`: the record changes of one type as Server-Sent Events. See
/// docs/PROTOCOL.md ("Live changes").
///
/// Each change is one event: `id:` its position, `event:` `created`, `updated` or `deleted`, and
/// `data:` `{"id", "change", "version", "record"}`. With `?filter=EXPR` (a list filter), only
/// changes whose record matches go out, and `left` when an update makes a record stop matching. The stream starts with a `ready` event whose
/// `id:` is the starting position, and resumes after `Last-Event-ID` (or `?after=`). Heartbeat
/// comments keep idle connections alive; they carry an `id:` when the position moved past changes
/// this subscriber does not see.
struct ChangeRoutes: Sendable {
    /// `nil` when the storage keeps no change feed (every route then answers 501).
    let feed: ChangeFeed?
    let auth: AuthService
    /// Each change goes out only when the subscribe and read rules in force at that moment grant it.
    let access: AccessControl
    /// Changes read per step, and so per write to the connection at most.
    static let batchSize = 100
    /// `Last-Event-ID` and `?after=` are decimal positions of at most this many digits.
    static let maxPositionDigits = 18

    func add(to router: Router<OutpostRequestContext>) {
        let router = router.group().add(middleware: AuthenticationMiddleware(auth: auth))
        router.get("/records/{type}/changes") { request, context in try await stream(request, context) }
    }

    func stream(_ request: Request, _ context: OutpostRequestContext) async throws -> Response {
        let type = try RecordRoutes.type(context)
        let caller = try context.caller(requiring: Scope.recordsRead)
        guard let feed else {
            throw ServerError(
                .notImplemented, code: "changes_unsupported",
                message: "This server's storage keeps no change feed; poll GET /records/\(type) instead")
        }
        let filter = try request.queryFields()["filter"].map { try ListFilter(parsing: $0) }
        let bounds = try await feed.storage.changeBounds()
        let start: Int64
        if let requested = try Self.requestedPosition(request) {
            try Self.check(requested, against: bounds, type: type)
            start = requested
        } else {
            start = bounds.latest
        }
        let headers: HTTPFields = [
            .contentType: "text/event-stream", .cacheControl: "no-cache", HTTPField.Name("X-Accel-Buffering")!: "no",
        ]
        // HEAD runs no body: take no place among the subscribers.
        if request.method == .head { return Response(status: .ok, headers: headers) }
        let holder: ChangeFeed.Holder =
            if let caller { .signedIn(caller.userID ?? "client:\(caller.clientID)") } else {
                .anonymous(address: context.clientAddress)
            }
        let ticket = try feed.join(holder)
        let access = self.access
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                defer { feed.leave(ticket) }
                let auth = self.auth
                try await Self.pump(
                    feed: feed, ticket: ticket, type: type, caller: caller, access: access, filter: filter, from: start,
                    until: feed.configuration.maxStreamDuration.map { ContinuousClock.now + $0 },
                    tokenCheck: caller?.tokenHash == nil ? .always : TokenCheck { try await auth.isStillValid(caller) },
                    into: &writer)
                try await writer.finish(nil)
            })
    }

    /// Whether the token a stream was opened with still holds, read from storage before each batch
    /// of events goes out and at every heartbeat. A token revoked (on any instance) or expired ends
    /// the stream: no event goes out after the revocation, and an idle stream ends at its next
    /// heartbeat. Anonymous streams have no token and read nothing.
    struct TokenCheck: Sendable {
        var isValid: @Sendable () async throws -> Bool
        init(_ isValid: @escaping @Sendable () async throws -> Bool) { self.isValid = isValid }
        static let always = TokenCheck { true }
    }

    /// Writes events until the feed closes (shutdown), the stream's time is up (checked at each
    /// heartbeat), its token stops being valid (``TokenCheck``) or a write fails (the client left).
    static func pump(
        feed: ChangeFeed, ticket: ChangeFeed.Ticket, type: String, caller: AuthenticatedCaller?, access: AccessControl,
        filter: ListFilter? = nil, from start: Int64,
        until deadline: ContinuousClock.Instant?, tokenCheck: TokenCheck = .always, into writer: inout any ResponseBodyWriter
    ) async throws {
        let ended = ": the access token is no longer valid (revoked or expired); sign in again and reconnect\n\n"
        var position = start
        // Sent: the position the client knows (its last event id).
        var sent = start
        var outside = FilterOutside()
        try await writer.write(ByteBuffer(string: "retry: 1000\nid: \(start)\nevent: ready\ndata: {\"position\":\(start)}\n\n"))
        while true {
            let seen = feed.seen
            let (changes, through) = try await feed.read(type: type, after: position, limit: batchSize)
            var text = ""
            // The rules and roles in force now (kept up to a second), so a changed rule applies to
            // streams already open.
            var rules = AccessRules()
            var ruleCaller = RuleCaller.anonymous
            if !changes.isEmpty {
                rules = try await access.current()
                ruleCaller = try await access.caller(caller)
            }
            for change in changes where change.isVisible(to: ruleCaller, under: rules) {
                var event = change.kind.rawValue
                if let filter {
                    guard let filtered = outside.event(for: change, filter: filter) else { continue }
                    event = filtered
                }
                let data = event == "left" ? change.leftEventData : change.eventData
                text += "id: \(change.position)\nevent: \(event)\ndata: \(data)\n\n"
                sent = change.position
            }
            position = max(position, through)
            if !text.isEmpty {
                guard try await tokenCheck.isValid() else {
                    try await writer.write(ByteBuffer(string: ended))
                    return
                }
                try await writer.write(ByteBuffer(string: text))
            }
            if changes.count == batchSize { continue }
            switch await feed.wait(ticket, seen: seen, type: type) {
            case .changes:
                continue
            case .heartbeat:
                guard try await tokenCheck.isValid() else {
                    try await writer.write(ByteBuffer(string: ended))
                    return
                }
                // The id moves the client past changes it may not see, so a resume starts later.
                let id = position > sent ? "id: \(position)\n" : ""
                sent = position
                try await writer.write(ByteBuffer(string: ": heartbeat\n\(id)\n"))
                if let deadline, ContinuousClock.now >= deadline {
                    try await writer.write(ByteBuffer(string: ": stream time is up; reconnect with Last-Event-ID\n\n"))
                    return
                }
            case .closed:
                try await writer.write(ByteBuffer(string: ": server closing; reconnect with Last-Event-ID\n\n"))
                return
            }
        }
    }

    /// `Last-Event-ID` (what an EventSource sends when it reconnects) or else `?after=`.
    static func requestedPosition(_ request: Request) throws -> Int64? {
        // Both are checked when both are sent; the header (what an EventSource resends) wins.
        let after = try request.queryFields()["after"].map { try position(from: $0) }
        guard let header = request.headers[HTTPField.Name("Last-Event-ID")!] else { return after }
        return try position(from: header.trimmingCharacters(in: .whitespaces))
    }

    /// A position as sent in `Last-Event-ID` or `?after=`: up to ``maxPositionDigits`` digits.
    static func position(from text: String) throws -> Int64 {
        guard (1...maxPositionDigits).contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let position = Int64(text)
        else {
            throw ServerError.badRequest(
                "invalid_position",
                "Last-Event-ID and after take a position the server sent (the id of an event): up to \(maxPositionDigits) digits")
        }
        return position
    }

    /// 410 when the changes after `position` are no longer all kept, or when the position was never
    /// handed out (the database was replaced): the client must reload and subscribe afresh.
    static func check(_ position: Int64, against bounds: ChangeBounds, type: String) throws {
        if position < bounds.prunedThrough {
            throw ServerError(
                .gone, code: "changes_expired",
                message:
                    "Changes after position \(position) are no longer kept; reload /records/\(type) and subscribe again without Last-Event-ID",
                details: ["oldest_position": .int(Int(bounds.prunedThrough))])
        }
        if position > bounds.latest {
            throw ServerError(
                .gone, code: "unknown_position",
                message:
                    "Position \(position) is ahead of this server's feed (at \(bounds.latest)); the data was replaced: reload /records/\(type) and subscribe again",
                details: ["latest_position": .int(Int(bounds.latest))])
        }
    }
}

/// What a filtered stream knows of records that do not match its filter, so it sends one `left`
/// per record leaving, not one per change of a record outside.
///
/// A stream cannot know whether a record it never saw matched before an update (the change holds
/// the record after it only), so an update of a record it holds no knowledge of that does not
/// match is sent as `left`: a client drops the id if it has it and ignores it otherwise. Bounded:
/// past ``capacity`` ids it forgets them all, which only sends some `left` events again.
struct FilterOutside {
    static let capacity = 10_000
    private var ids: Set<String> = []

    /// The event to send for `change` under `filter`, or `nil` to send none.
    mutating func event(for change: RecordChange, filter: ListFilter) -> String? {
        let id = change.record.id
        switch change.kind {
        case .deleted:
            // A record known not to match was never the client's.
            return ids.remove(id) == nil ? RecordChange.Kind.deleted.rawValue : nil
        case .created, .updated:
            if change.matches(filter) {
                ids.remove(id)
                return change.kind.rawValue
            }
            let known = ids.contains(id)
            if ids.count >= Self.capacity { ids.removeAll(keepingCapacity: true) }
            ids.insert(id)
            return change.kind == .created || known ? nil : "left"
        }
    }
}
