#if canImport(SwiftUI)
    public import OutpostCore
    public import SwiftUI

    extension EnvironmentValues {
        /// The synced store that ``OutpostQuery`` properties read, set with `outpostStore(_:)`; `nil`
        /// by default.
        @Entry public var outpostStore: SyncedStore? = nil
    }

    extension View {
        /// Makes `store` the synced store of this view and the views inside it: each ``OutpostQuery``
        /// there queries it, and `@Environment(\.outpostStore)` reads it (to write, say).
        ///
        /// - Parameter store: the store, or `nil` (after signing out) to empty the queries.
        /// - Returns: the view with the store in its environment.
        public func outpostStore(_ store: SyncedStore?) -> some View {
            environment(\.outpostStore, store)
        }
    }

    /// The records of a ``SyncedStore`` that a filter selects, in order, kept current in a SwiftUI
    /// view: a `LiveQuery` over the store that `outpostStore(_:)` put in the environment.
    ///
    /// ```swift
    /// struct NotesList: View {
    ///     @OutpostQuery(Note.self, filter: "record.archived != true", sort: "-updated_at") var notes
    ///
    ///     var body: some View {
    ///         List(notes, id: \.id) { note in Text(note.title) }
    ///             .overlay { if $notes?.isLoading == true { ProgressView() } }
    ///     }
    /// }
    /// ```
    ///
    /// The wrapped value is the items, empty until the first answer and while the environment holds
    /// no store. The projected value (`$notes`) is the `LiveQuery` itself, for the records' states,
    /// `isLoading` and `error`; `nil` without a store. The query starts the first time the view reads
    /// it, and is replaced when the store in the environment changes.
    @MainActor
    @propertyWrapper
    public struct OutpostQuery<Item: Entity>: DynamicProperty where Item.ID == String {
        @Environment(\.outpostStore) private var store
        @State private var holder = LiveQueryHolder<Item>()
        private let filter: String?
        private let sort: String?
        private let recordType: String?

        /// A query of the store's records of `type`.
        ///
        /// - Parameters:
        ///   - type: the records' Swift type; the record type is the last component of its
        ///     `resourcePath` unless `recordType` names it.
        ///   - filter: as for ``SyncedStore/query(_:filter:sort:)``.
        ///   - sort: as for ``SyncedStore/query(_:filter:sort:)``.
        ///   - recordType: the records' type in the store, when it differs.
        public init(_ type: Item.Type, filter: String? = nil, sort: String? = nil, recordType: String? = nil) {
            self.filter = filter
            self.sort = sort
            self.recordType = recordType
        }

        /// The records' values, in the query's order.
        public var wrappedValue: [Item] { projectedValue?.items ?? [] }

        /// The live query, with each record's state, `isLoading` and `error`; `nil` while the
        /// environment holds no store.
        public var projectedValue: LiveQuery<Item>? {
            holder.query(in: store, filter: filter, sort: sort, recordType: recordType)
        }
    }

    /// Keeps an ``OutpostQuery``'s live query across the view's updates (in its `State`).
    @MainActor
    final class LiveQueryHolder<Item: Entity> where Item.ID == String {
        private struct Key: Equatable {
            var store: ObjectIdentifier
            var filter: String?
            var sort: String?
            var recordType: String?
        }

        private var current: (key: Key, query: LiveQuery<Item>)?

        /// The query for these arguments: the one made before when they have not changed.
        func query(in store: SyncedStore?, filter: String?, sort: String?, recordType: String?) -> LiveQuery<Item>? {
            guard let store else {
                current?.query.stop()
                current = nil
                return nil
            }
            let key = Key(store: ObjectIdentifier(store), filter: filter, sort: sort, recordType: recordType)
            if let current, current.key == key { return current.query }
            current?.query.stop()
            let query = LiveQuery(store, Item.self, filter: filter, sort: sort, recordType: recordType)
            current = (key, query)
            return query
        }
    }
#endif
