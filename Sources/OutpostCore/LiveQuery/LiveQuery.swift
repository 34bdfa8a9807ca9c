public import Observation

/// The records a query selects, kept current as local writes, pulls and live changes land: an
/// `@Observable` model for a list on screen.
///
/// ```swift
/// let query = LiveQuery(store, Note.self, filter: "record.done == false", sort: "-updated_at")
/// // query.items: the notes, in order; query.records: with each one's state
/// // query.isLoading: true until the first answer; query.error: the last failure, if any
/// ```
///
/// `OutpostSync`'s `SyncedStore` answers from its local database as each write commits, with each
/// record pending, confirmed or failed as its outbox knows it. An ``EntityStore`` answers from
/// the server's list, read again at each change of the type's change feed; an ``Outbox`` given to
/// it says which records have writes waiting (see <doc:LiveQueries>).
///
/// The query lives on the main actor. A result replaces the one before (the query holds only the
/// current result), and results that arrive between two turns of the main actor are applied once,
/// the newest: observers (SwiftUI, `withObservationTracking`) see one change per turn at most.
/// The query stops following its store when ``stop()`` is called or when it is deinitialised.
@MainActor
@Observable
public final class LiveQuery<Item: Sendable> {
    /// The records selected, in the query's order, each with its id and state.
    public private(set) var records: [LiveRecord<Item>] = []
    /// Whether the first result has yet to arrive (`false` after it, after a failure, and once stopped).
    public private(set) var isLoading = true
    /// The last failure: a filter or sort that does not parse, a record that does not decode as
    /// `Item` (left out of ``records``), a list the server refused, a lost store. `nil` after a
    /// result read without one.
    public private(set) var error: (any Error)?
    /// Whether ``stop()`` was called: the query no longer changes.
    public private(set) var isStopped = false

    @ObservationIgnored private var indexes: [String: Int] = [:]
    @ObservationIgnored private let feed: LiveQueryFeed<Item>

    /// A query fed by `source`, which runs off the main actor until it returns or the query stops,
    /// handing each result to the feed.
    package init(source: @escaping @Sendable (LiveQueryFeed<Item>) async -> Void) {
        let box = WeakQuery<Item>()
        feed = LiveQueryFeed { update in box.query?.apply(update) }
        box.query = self
        feed.start(source)
    }

    deinit { feed.stop() }

    /// The records' values, in the query's order.
    public var items: [Item] { records.map(\.value) }

    /// The state of the record with `id`, or `nil` when the query does not select it.
    public func state(of id: String) -> RecordState? {
        indexes[id].map { records[$0].state }
    }

    /// The record with `id`, or `nil` when the query does not select it.
    public func record(id: String) -> LiveRecord<Item>? {
        indexes[id].map { records[$0] }
    }

    /// Stops following the store: the query keeps its last result and changes no more.
    public func stop() {
        guard !isStopped else { return }
        feed.stop()
        isStopped = true
        if isLoading { isLoading = false }
    }

    private func apply(_ update: LiveQueryFeed<Item>.Update) {
        if let records = update.records {
            self.records = records
            indexes = Dictionary(records.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { first, _ in first })
        }
        if update.error != nil || error != nil { error = update.error }
        if isLoading { isLoading = false }
    }
}

/// The query a feed applies to, held weakly so that the feed's task does not keep it alive.
@MainActor
private final class WeakQuery<Item: Sendable>: Sendable {
    weak var query: LiveQuery<Item>?
}
