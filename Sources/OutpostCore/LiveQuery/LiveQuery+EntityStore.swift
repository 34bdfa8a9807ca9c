extension LiveQuery where Item: Entity {
    /// The first `limit` entities of `type` that `filter` selects on the server, in `sort`'s order,
    /// read again whenever the type's change feed reports a change (and whenever `outbox` records
    /// one), with each entity's state from `outbox`.
    ///
    /// ```swift
    /// let open = LiveQuery(client.entities(), Task.self, filter: "record.done == false", sort: "-priority", outbox: outbox)
    /// ```
    ///
    /// The list is read at once, and again at each connection of the change feed (so that changes
    /// made while it was connecting are not missed) and after each change it delivers. An entity
    /// with writes queued in `outbox` for its path is ``RecordState/pending``, one whose write the
    /// server refused is ``RecordState/failed(_:)``; the values shown are the server's. A create
    /// queued in the outbox shows once the server has it. Without a network the first read fails
    /// into ``error``, and the change feed keeps trying to connect (``EntityChanges/defaultRetry``).
    ///
    /// - Parameters:
    ///   - store: the entity store that lists and follows the changes.
    ///   - type: the entities' type.
    ///   - filter: an expression over `record`, as lists take it (docs/PROTOCOL.md, "Expressions");
    ///     `nil` selects all.
    ///   - sort: the list's order as `sort` takes it, e.g. `-views,title`; `nil` for the server's.
    ///   - limit: the most entities held, one list page.
    ///   - outbox: the outbox the app queues its writes of `type` in, if any.
    public convenience init(
        _ store: EntityStore, _ type: Item.Type, filter: String? = nil, sort: String? = nil, limit: Int = 100,
        outbox: Outbox? = nil
    ) {
        let source = EntityQuerySource<Item>(store: store, filter: filter, sort: sort, limit: max(1, limit), outbox: outbox)
        self.init(source: { feed in await source.run(feed) })
    }
}

/// Feeds a ``LiveQuery`` from an ``EntityStore``'s list, change feed and outbox.
struct EntityQuerySource<E: Entity>: Sendable {
    let store: EntityStore
    let filter: String?
    let sort: String?
    let limit: Int
    let outbox: Outbox?

    func run(_ feed: LiveQueryFeed<E>) async {
        // One read at a time; triggers while one runs make one more read after it.
        let (triggers, trigger) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        var changes = filter.map { store.changes(of: E.self, filter: $0) } ?? store.changes(of: E.self)
        changes.onReady = { trigger.yield() }
        let feedChanges = changes
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    for try await _ in feedChanges { trigger.yield() }
                } catch {
                    if !Task.isCancelled { feed.fail(error) }
                }
            }
            if let outbox {
                group.addTask {
                    for await event in outbox.events() {
                        if case .retrying = event { continue }
                        trigger.yield()
                    }
                }
            }
            group.addTask {
                trigger.yield()
                for await _ in triggers {
                    if Task.isCancelled || feed.isStopped { break }
                    await read(into: feed)
                }
            }
        }
    }

    /// Reads the list and the outbox's entries, and hands the result to `feed`.
    func read(into feed: LiveQueryFeed<E>) async {
        var request = ListRequest(E.self, pageSize: limit)
        if let filter { request = request.filter(filter) }
        if let sort, !sort.isEmpty { request = request.sorted(by: sort) }
        do {
            let page = try await store.page(request)
            let states = Self.states(of: try await outbox?.entries ?? [])
            let records = page.items.prefix(limit).compactMap { item -> LiveRecord<E>? in
                guard let id = item.id else { return nil }
                let path = store.configuration.itemPath(resource: E.resourcePath, id: id)
                return LiveRecord(id: id.pathSegment, value: item, state: states[path] ?? .confirmed)
            }
            feed.submit(records)
        } catch {
            if !Task.isCancelled { feed.fail(error) }
        }
    }

    /// The state of each record key with entries: failed when one of its writes was refused, else pending.
    static func states(of entries: [OutboxEntry]) -> [String: RecordState] {
        var states: [String: RecordState] = [:]
        for entry in entries {
            if let failure = entry.failure {
                if states[entry.recordKey]?.failure == nil {
                    states[entry.recordKey] = .failed(failure.serverMessage ?? failure.message)
                }
            } else if states[entry.recordKey] == nil {
                states[entry.recordKey] = .pending
            }
        }
        return states
    }
}
