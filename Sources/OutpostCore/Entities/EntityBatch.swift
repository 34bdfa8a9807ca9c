import Foundation

/// Writes of one entity type that ``EntityStore/batch(_:idempotencyKey:_:)`` sends in one request
/// (`POST /records/batch` on an Outpost server), to be applied all together or not at all.
///
/// ```swift
/// let results = try await store.batch(Note.self) { batch in
///     batch.create(Note(title: "New"))
///     try batch.replace(draft)      // PUT, If-Match when its ETag is known
///     try batch.patch(edited)       // the changes since its last pull or push
///     try batch.delete(old)
/// }
/// let created = results[0].synced   // the new note, with its id and ETag
/// ```
///
/// Operations run on the server in the order they were added, each seeing the ones before it; when
/// one fails, none is applied and the error names it (``OutpostError/details`` `index`).
public struct EntityBatch<E: Entity>: Sendable {
    /// What one operation of a batch did, in the order the operations were added.
    public enum Result: Sendable {
        /// A new entity, with its server-assigned id, snapshot and ETag.
        case created(Synced<E>)
        /// An entity replaced with ``EntityBatch/replace(_:)``.
        case replaced(Synced<E>)
        /// An entity patched with ``EntityBatch/patch(_:)``.
        case patched(Synced<E>)
        /// The id of a deleted entity.
        case deleted(E.ID)

        /// The entity as the server stored it; `nil` for a delete.
        public var synced: Synced<E>? {
            switch self {
            case .created(let entity), .replaced(let entity), .patched(let entity): return entity
            case .deleted: return nil
            }
        }
    }

    enum Operation: Sendable {
        case create(E)
        case replace(E, id: E.ID, etag: String?)
        case patch(Synced<E>, id: E.ID)
        case delete(id: E.ID, etag: String?)
    }

    /// The most operations an Outpost server takes in one batch.
    public static var maxOperations: Int { 100 }

    private(set) var operations: [Operation] = []

    /// An empty batch; ``EntityStore/batch(_:idempotencyKey:_:)`` hands one to its closure.
    public init() {}

    /// How many operations the batch holds.
    public var count: Int { operations.count }

    /// Whether the batch holds no operation.
    public var isEmpty: Bool { operations.isEmpty }

    /// Adds a create of `entity` (its `id`, if any, is ignored: the server assigns one).
    ///
    /// - Parameter entity: The new entity.
    public mutating func create(_ entity: E) {
        operations.append(.create(entity))
    }

    /// Adds a replacement of the server's copy with `entity`, conditional on its ETag when one is
    /// known (`If-Match`).
    ///
    /// - Parameter entity: The entity, as pulled or pushed and then changed.
    /// - Throws: ``OutpostError/Code/missingIdentity`` when it has no id (use ``create(_:)``).
    public mutating func replace(_ entity: Synced<E>) throws {
        operations.append(.replace(entity.value, id: try Self.identity(of: entity.value, "replace"), etag: entity.etag))
    }

    /// Adds a merge patch of the changes made to `entity` since its last pull or push (as
    /// ``EntityStore/changes(in:)`` shows them), conditional on its ETag when one is known.
    ///
    /// - Parameter entity: The entity, as pulled or pushed and then changed.
    /// - Throws: ``OutpostError/Code/missingIdentity`` when it has no id.
    public mutating func patch(_ entity: Synced<E>) throws {
        operations.append(.patch(entity, id: try Self.identity(of: entity.value, "patch")))
    }

    /// Adds a delete of `entity`, conditional on its ETag when one is known.
    ///
    /// - Parameter entity: The entity to delete.
    /// - Throws: ``OutpostError/Code/missingIdentity`` when it has no id.
    public mutating func delete(_ entity: Synced<E>) throws {
        operations.append(.delete(id: try Self.identity(of: entity.value, "delete"), etag: entity.etag))
    }

    /// Adds a delete by id.
    ///
    /// - Parameters:
    ///   - id: The id of the entity to delete.
    ///   - etag: When given, the delete happens only if the entity's ETag still is this one.
    public mutating func delete(id: E.ID, ifMatch etag: String? = nil) {
        operations.append(.delete(id: id, etag: etag))
    }

    static func identity(of value: E, _ operation: String) throws -> E.ID {
        guard let id = value.id else {
            throw OutpostError(
                .missingIdentity, "Cannot \(operation) a \(E.self) that has no id in a batch",
                suggestion: "Create it in the batch instead; the server assigns the id", path: E.resourcePath)
        }
        return id
    }
}
