/// An entity together with what the server last saw of it: the JSON of its last pull or push and
/// the server's `ETag`.
///
/// ``EntityStore/patch(_:)`` sends the difference between ``value`` and that snapshot, and push,
/// patch and delete send the ETag in `If-Match`. Read and change the entity's properties directly:
///
/// ```swift
/// var person = try await store.pull(Person.self, id: "42")
/// person.name = "Ada"                       // same as person.value.name = "Ada"
/// person = try await store.patch(person)    // PATCH {"name": "Ada"}
/// ```
///
/// The snapshot travels with the value rather than living in a cache inside the client: copies
/// diff independently, nothing grows without bound, and no lock is needed.
@dynamicMemberLookup
public struct Synced<Value: Entity>: Sendable {
    /// The entity, with any local changes.
    public var value: Value
    /// The server's `ETag` from the last pull or push, if it sent one.
    public internal(set) var etag: String?
    /// The entity's JSON as of the last pull or push, as the client's encoder writes it; `nil` when
    /// it was never synced.
    public internal(set) var snapshot: JSONValue?

    /// Wraps an entity that has not been synced yet (typically a new one).
    public init(_ value: Value) {
        self.value = value
        self.etag = nil
        self.snapshot = nil
    }

    /// Wraps an entity with a known snapshot and ETag, e.g. one restored from local storage.
    public init(_ value: Value, snapshot: JSONValue?, etag: String?) {
        self.value = value
        self.snapshot = snapshot
        self.etag = etag
    }

    /// The server's identifier, `nil` until the entity is pushed.
    public var id: Value.ID? { value.id }

    public subscript<T>(dynamicMember keyPath: WritableKeyPath<Value, T>) -> T {
        get { value[keyPath: keyPath] }
        set { value[keyPath: keyPath] = newValue }
    }
}

extension Synced: Equatable where Value: Equatable {}
