import Foundation
import HTTPTypes

/// One change to an entity, as ``EntityStore/changes(of:after:retry:limits:)`` delivers it.
public struct EntityChange<E: Entity>: Sendable {
    /// What happened.
    public enum Kind: String, Sendable, Hashable {
        case created, updated, deleted
        /// The entity stopped matching the stream's filter
        /// (``EntityStore/changes(of:filter:after:retry:limits:)-(_,String,_,_,_)``): it still exists, but is no
        /// longer part of what the stream follows. ``EntityChange/entity`` is `nil`.
        case left
    }

    public var kind: Kind
    /// The entity's id.
    public var id: E.ID
    /// The entity's version after the change (for a deletion, the version that was deleted).
    public var version: Int
    /// The entity after the change, ready to patch (its ETag is the version's); `nil` for a deletion
    /// and for ``Kind/left``.
    public var entity: Synced<E>?
    /// Where the feed stands after this change. Pass it as `after:` to a later
    /// ``EntityStore/changes(of:after:retry:limits:)`` to continue from here.
    public var position: String

    public init(kind: Kind, id: E.ID, version: Int, entity: Synced<E>?, position: String) {
        self.kind = kind
        self.id = id
        self.version = version
        self.entity = entity
        self.position = position
    }
}

/// The changes to one entity type, live: an `AsyncSequence` that connects to the server's change
/// feed (`GET <collection>/changes`, Server-Sent Events), reconnects after a failure with the
/// ``RetryPolicy``'s backoff, and resumes after the last change it delivered, so that across a
/// reconnect no change is missed or delivered twice.
///
/// It ends (returns `nil`) when its task is cancelled. It throws when the server refuses the
/// subscription (401, 403, 404, or 410 when the resume position is older than the server keeps:
/// reload, then subscribe again without `after`), when the stream breaks the parser's
/// ``ServerSentEventParser/Limits``, when a change does not decode, or when reconnecting failed
/// ``RetryPolicy/maxAttempts`` times in a row.
public struct EntityChanges<E: Entity>: AsyncSequence, Sendable {
    public typealias Element = EntityChange<E>
    public typealias Failure = any Error

    let store: EntityStore
    let after: String?
    let retry: RetryPolicy
    let limits: ServerSentEventParser.Limits
    /// The stream's filter expression (`?filter=`), if any.
    var filter: String? = nil
    /// Why the stream's typed filter could not be rendered: the sequence throws it instead of connecting.
    var filterError: OutpostError? = nil
    /// Called at each connection's `ready` event: from then on, no change is missed.
    var onReady: (@Sendable () -> Void)? = nil

    /// Reconnects without end, after 250 ms at first and at most every 15 s.
    public static var defaultRetry: RetryPolicy {
        RetryPolicy(maxAttempts: Int.max, baseDelay: .milliseconds(250), maxDelay: .seconds(15))
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(sequence: self, position: after)
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let sequence: EntityChanges
        /// The last event id received: where a reconnect resumes.
        var position: String?
        /// The position of the last change delivered, to drop repeats.
        var delivered: Int64?
        var connection: ByteStream.AsyncIterator?
        var parser: ServerSentEventParser
        var pending: [EntityChange<E>] = []
        var pendingIndex = 0
        /// Failed connections in a row.
        var failures = 0

        init(sequence: EntityChanges, position: String?) {
            self.sequence = sequence
            self.position = position
            self.delivered = position.flatMap { Int64($0) }
            self.parser = ServerSentEventParser(limits: sequence.limits)
        }

        public mutating func next() async throws -> EntityChange<E>? {
            while true {
                if pendingIndex < pending.count {
                    defer { pendingIndex += 1 }
                    return pending[pendingIndex]
                }
                pending.removeAll(keepingCapacity: true)
                pendingIndex = 0
                if Task.isCancelled { return nil }
                do {
                    if connection == nil {
                        connection = try await open()
                    }
                    guard let chunk = try await connection?.next() else {
                        // The server ended the stream (it shuts down): connect again.
                        connection = nil
                        if Task.isCancelled { return nil }
                        try await backOff(after: OutpostError(.connectionLost, "The server ended the change stream"))
                        continue
                    }
                    do {
                        for event in try parser.parse(chunk) { try receive(event) }
                    } catch {
                        // A stream beyond the parser's limits, or a change that does not decode:
                        // connecting again would meet the same, so it ends here.
                        throw StreamEnded(error: error)
                    }
                    if let id = parser.lastEventID { position = id }
                } catch let ended as StreamEnded {
                    connection = nil
                    throw ended.error
                } catch {
                    connection = nil
                    if Task.isCancelled || error is CancellationError { return nil }
                    if let outpost = error as? OutpostError, outpost.code == .cancelled { return nil }
                    do {
                        try await backOff(after: error)
                    } catch is CancellationError {
                        return nil
                    }
                }
            }
        }

        /// Opens the stream, resuming after ``position``; a fresh parser per connection.
        mutating func open() async throws -> ByteStream.AsyncIterator {
            let store = sequence.store
            let path = store.configuration.collectionPath(resource: E.resourcePath) + "/changes"
            if var error = sequence.filterError {
                error.method = "GET"
                error.path = OutpostError.normalizedPath(path)
                throw StreamEnded(error: error)
            }
            var request = Request.get(path, query: sequence.filter.map { [URLQueryItem(name: "filter", value: $0)] } ?? [])
            request.headers[.accept] = "text/event-stream"
            if let position { request.headers[HTTPField.Name("Last-Event-ID")!] = position }
            let (_, stream) = try await store.client.prepare(request, operationName: "changes \(E.self)").startStream()
            parser = ServerSentEventParser(limits: sequence.limits)
            return stream.makeAsyncIterator()
        }

        /// Waits before the next connection, or rethrows `error` when it is not worth retrying or
        /// the attempts are used up.
        mutating func backOff(after error: any Error) async throws {
            let policy = sequence.retry
            guard let outpost = error as? OutpostError else { throw error }
            let retryable: Bool
            switch outpost.code {
            case .cannotConnect, .connectionLost, .timeout, .malformedResponse: retryable = true
            case .httpStatus: retryable = outpost.status.map { policy.retryableStatuses.contains($0) } ?? false
            default: retryable = false
            }
            failures += 1
            guard retryable, failures < policy.maxAttempts else { throw error }
            try await policy.sleep(policy.backoff(afterAttempt: failures))
        }

        mutating func receive(_ event: ServerSentEvent) throws {
            if let id = event.id { position = id }
            guard let kind = EntityChange<E>.Kind(rawValue: event.event) else {
                // `ready` (and any event this client does not know): the connection works.
                failures = 0
                if event.event == "ready" { sequence.onReady?() }
                return
            }
            let number = event.id.flatMap { Int64($0) }
            if let number, let delivered, number <= delivered { return }  // already delivered
            let store = sequence.store
            let path = store.configuration.collectionPath(resource: E.resourcePath) + "/changes"
            let wire = try OutpostClient.decode(
                ChangeWire<E>.self, from: ClientResponse(response: .init(status: .ok), body: Data(event.data.utf8)),
                decoder: store.client.configuration.decoder, method: "GET", path: path)
            var synced: Synced<E>?
            if kind == .created || kind == .updated, let value = wire.record {
                synced = Synced(value, snapshot: try store.encode(value, method: "GET", path: path), etag: "\"v\(wire.version)\"")
            }
            if let number { delivered = number }
            failures = 0
            pending.append(
                EntityChange(kind: kind, id: wire.id, version: wire.version, entity: synced, position: event.id ?? position ?? "")
            )
        }
    }
}

/// A failure that ends a change sequence without reconnecting.
struct StreamEnded: Error {
    var error: any Error
}

/// The data of one change event: `{"id", "change", "version", "record"}`.
struct ChangeWire<E: Entity>: Decodable {
    var id: E.ID
    var version: Int
    var record: E?
}

extension EntityStore {
    /// The changes to `type` from now on (or after `position`, a ``EntityChange/position`` from
    /// an earlier sequence), as they happen: see ``EntityChanges``.
    ///
    /// ```swift
    /// for try await change in store.changes(of: Person.self) {
    ///     switch change.kind {
    ///     case .created, .updated: show(change.entity!.value)
    ///     case .deleted, .left: remove(change.id)  // `left` comes only on a filtered stream
    ///     }
    /// }
    /// ```
    ///
    /// The client's middlewares (an `AuthMiddleware`, say) apply to every connection; its
    /// transport streams the response through ``ClientTransport/stream(_:body:options:)``.
    ///
    /// - Parameters:
    ///   - type: the entity type whose changes to watch.
    ///   - position: where to resume; `nil` starts at the server's newest change.
    ///   - retry: how to reconnect; by default without end, with backoff (``EntityChanges/defaultRetry``).
    ///   - limits: how large a line and an event of the stream may be.
    public func changes<E: Entity>(
        of type: E.Type, after position: String? = nil, retry: RetryPolicy = EntityChanges<E>.defaultRetry,
        limits: ServerSentEventParser.Limits = .init()
    ) -> EntityChanges<E> {
        EntityChanges(store: self, after: position, retry: retry, limits: limits)
    }

    /// The changes to the entities of `type` that match `filter`, as they happen: a change whose
    /// entity matches after it is delivered as usual; an update that makes a matching entity stop
    /// matching is delivered once as ``EntityChange/Kind/left``.
    ///
    /// ```swift
    /// for try await change in store.changes(of: Task.self, filter: #"record.status == "open""#) {
    ///     switch change.kind {
    ///     case .created, .updated: show(change.entity!.value)
    ///     case .deleted, .left: remove(change.id)
    ///     }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - type: the entity type whose changes to watch.
    ///   - filter: an expression over `record.*`, as lists take it (docs/PROTOCOL.md, "Expressions");
    ///     one that does not parse is refused with 400 `invalid_filter` when the stream opens.
    ///   - position: where to resume; `nil` starts at the server's newest change.
    ///   - retry: how to reconnect; by default without end, with backoff (``EntityChanges/defaultRetry``).
    ///   - limits: how large a line and an event of the stream may be.
    public func changes<E: Entity>(
        of type: E.Type, filter: String, after position: String? = nil, retry: RetryPolicy = EntityChanges<E>.defaultRetry,
        limits: ServerSentEventParser.Limits = .init()
    ) -> EntityChanges<E> {
        var changes = EntityChanges<E>(store: self, after: position, retry: retry, limits: limits)
        changes.filter = filter
        return changes
    }

    /// The changes to the entities of `type` that match the typed `filter`, as they happen: as
    /// ``changes(of:filter:after:retry:limits:)-(_,String,_,_,_)`` with the filter's
    /// ``RecordFilter/expression()``.
    ///
    /// ```swift
    /// for try await change in store.changes(of: Article.self, filter: Article.title.hasPrefix("Intro")) {
    ///     switch change.kind {
    ///     case .created, .updated: show(change.entity!.value)
    ///     case .deleted, .left: remove(change.id)
    ///     }
    /// }
    /// ```
    ///
    /// A filter that cannot be rendered (a field name the language cannot write, a NaN) ends the
    /// sequence with ``OutpostError/Code/invalidRequest`` at its first element, without connecting.
    ///
    /// - Parameters:
    ///   - type: the entity type whose changes to watch.
    ///   - filter: the condition on the entities, typed by `type`.
    ///   - position: where to resume; `nil` starts at the server's newest change.
    ///   - retry: how to reconnect; by default without end, with backoff (``EntityChanges/defaultRetry``).
    ///   - limits: how large a line and an event of the stream may be.
    public func changes<E: Entity>(
        of type: E.Type, filter: RecordFilter<E>, after position: String? = nil,
        retry: RetryPolicy = EntityChanges<E>.defaultRetry, limits: ServerSentEventParser.Limits = .init()
    ) -> EntityChanges<E> {
        var changes = EntityChanges<E>(store: self, after: position, retry: retry, limits: limits)
        do {
            changes.filter = try filter.expression()
        } catch {
            changes.filterError = error
        }
        return changes
    }
}
