public import Foundation
public import OutpostCore

extension LiveQuery where Item: Entity, Item.ID == String {
    /// The local records of `Item`'s type that `filter` selects, in `sort`'s order, kept current
    /// as local writes, pulls, pushes and live changes (``SyncedStore/follow(_:backoff:resume:)``)
    /// commit to `store`, each with its ``SyncState`` as `RecordState`.
    ///
    /// ```swift
    /// let notes = LiveQuery(store, Note.self, filter: "record.archived != true", sort: "-updated_at")
    /// ```
    ///
    /// The records' type is the last component of `Item.resourcePath` (`notes` for
    /// `records/notes`) unless `recordType` names it. Each record's fields, with its id (the
    /// server's, or the local one until the server accepts the create), are decoded as `Item` with
    /// the store's client's decoder; a record that does not decode is left out and its error shown
    /// in `error`. The query answers as ``SyncedStore/observe(_:filter:sort:)`` does, off the main
    /// actor; a filter or sort that does not parse ends it with that error.
    ///
    /// - Parameters:
    ///   - store: the synced store.
    ///   - type: the records' Swift type.
    ///   - filter: as for ``SyncedStore/query(_:filter:sort:)``.
    ///   - sort: as for ``SyncedStore/query(_:filter:sort:)``.
    ///   - recordType: the records' type in the store, when it is not the last component of
    ///     `Item.resourcePath`.
    public convenience init(
        _ store: SyncedStore, _ type: Item.Type, filter: String? = nil, sort: String? = nil, recordType: String? = nil
    ) {
        let name = recordType ?? SyncedStore.recordType(of: Item.self)
        let decoder = store.client?.configuration.decoder ?? JSONDecoder()
        self.init(source: { feed in
            do {
                for try await answer in try store.observe(name, filter: filter, sort: sort) {
                    var failure: (any Error)?
                    let records = answer.compactMap { record -> LiveRecord<Item>? in
                        do {
                            return LiveRecord(
                                id: record.id, value: try record.decode(Item.self, decoder: decoder),
                                state: record.state.recordState)
                        } catch {
                            failure = failure ?? error
                            return nil
                        }
                    }
                    feed.submit(records, error: failure)
                }
            } catch {
                if !Task.isCancelled { feed.fail(error) }
            }
        })
    }
}

extension SyncedStore {
    /// The record type of an entity: the last component of its resource path (`notes` for `records/notes`).
    public static func recordType<E: Entity>(of type: E.Type) -> String {
        String(E.resourcePath.split(separator: "/").last ?? Substring(E.resourcePath))
    }
}

extension SyncedRecord {
    /// The record's fields, with its ``id``, decoded as `type`.
    ///
    /// - Parameters:
    ///   - type: the type to decode.
    ///   - decoder: the decoder; its key and date strategies apply.
    /// - Returns: the decoded value.
    /// - Throws: the decoder's `DecodingError` when the fields do not fit the type.
    public func decode<T: Decodable>(_ type: T.Type, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        var object = fields
        object["id"] = .string(id)
        return try JSONValue.object(object).decode(T.self, decoder: decoder)
    }
}

extension SyncState {
    /// The state as a live query shows it.
    var recordState: RecordState {
        switch self {
        case .pending: .pending
        case .confirmed: .confirmed
        case .failed(let message): .failed(message)
        }
    }
}
