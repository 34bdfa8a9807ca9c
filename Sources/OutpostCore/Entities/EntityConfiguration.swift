import Foundation

/// The shape of a backend's REST resources: where entities live, how bodies are wrapped, which key
/// holds list items, how lists are paginated, how partial updates are sent and how errors look.
///
/// Use a preset (``outpost``, ``restFramework``, ``nationBuilder``) or describe your own backend:
///
/// ```swift
/// var shape = EntityConfiguration.restFramework
/// shape.itemEnvelope = .entityName       // {"person": {...}}
/// shape.listItemsKey = "data"
/// shape.patchStyle = .putWholeObject     // the server has no PATCH (.partialUpdate: PATCH with plain JSON)
/// let store = client.entities(shape)
/// ```
public struct EntityConfiguration: Sendable {
    /// How a single entity is wrapped in request and response bodies.
    public enum Envelope: Sendable, Hashable {
        /// The body is the entity itself.
        case none
        /// The body is `{"<key>": entity}`.
        case key(String)
        /// The body is `{"<Entity.entityName>": entity}`, e.g. `{"person": {...}}`.
        case entityName
    }

    /// How ``EntityStore/patch(_:)`` sends changes.
    public enum PatchStyle: Sendable, Hashable {
        /// `PATCH` with an RFC 7396 merge patch of the changed fields (`application/merge-patch+json`).
        case mergePatch
        /// `PATCH` with the changed top-level fields as plain JSON (`application/json`), each with its
        /// whole new value and `null` for a field that became `nil`: a partial update, as Django REST
        /// framework's `partial_update` and most JSON APIs without merge-patch support take it.
        case partialUpdate
        /// `PUT` of the whole entity, for servers without `PATCH`.
        case putWholeObject
    }

    /// The path of a collection; `{resource}` is replaced by ``Entity/resourcePath`` (or
    /// ``ListRequest/resourcePath``). Default: `{resource}`.
    public var collectionPathTemplate: String
    /// The path of one entity; `{resource}` as above, `{id}` by the percent-encoded identifier.
    /// Default: `{resource}/{id}`.
    public var itemPathTemplate: String
    /// How single entities are wrapped. Default: ``Envelope/none``.
    public var itemEnvelope: Envelope
    /// The key of a list response that holds the items (`results`, `items`, `data`), or `nil` when
    /// the body is a bare array.
    public var listItemsKey: String?
    /// How lists are paginated, unless a ``ListRequest`` says otherwise.
    public var pagination: PaginationStyle
    /// The largest page size the server accepts, used to size pages when only an item limit is given.
    public var maxPageSize: Int?
    /// How partial updates are sent.
    public var patchStyle: PatchStyle
    /// How the backend writes errors, or `nil` to keep the client's ``OutpostClient/Configuration/errorFormat``.
    public var errorFormat: OutpostClient.ErrorFormat?
    /// Where ``EntityStore/batch(_:idempotencyKey:_:)`` posts a batch of writes (Outpost's
    /// `records/batch`), or `nil` when the backend takes none. A batch names each entity's type by
    /// the last component of its ``Entity/resourcePath``.
    public var batchPath: String?

    public init(
        collectionPathTemplate: String = "{resource}",
        itemPathTemplate: String = "{resource}/{id}",
        itemEnvelope: Envelope = .none,
        listItemsKey: String? = "results",
        pagination: PaginationStyle = .outpostCursor,
        maxPageSize: Int? = nil,
        patchStyle: PatchStyle = .mergePatch,
        errorFormat: OutpostClient.ErrorFormat? = nil
    ) {
        self.collectionPathTemplate = collectionPathTemplate
        self.itemPathTemplate = itemPathTemplate
        self.itemEnvelope = itemEnvelope
        self.listItemsKey = listItemsKey
        self.pagination = pagination
        self.maxPageSize = maxPageSize
        self.patchStyle = patchStyle
        self.errorFormat = errorFormat
        self.batchPath = nil
    }

    /// The Outpost server: `/records/{type}` paths (give entities `resourcePath = "records/<type>"`),
    /// bare JSON bodies, `results` lists with opaque cursors (``PaginationStyle/outpostCursor``; use
    /// ``PaginationStyle/outpostPageNumbers`` for `?page=&per_page=`), pages of at most 100, merge patches,
    /// `{"error": {...}}` errors, batches of writes at `records/batch`.
    public static let outpost: EntityConfiguration = {
        var configuration = EntityConfiguration(
            listItemsKey: "results", pagination: .outpostCursor, maxPageSize: 100, patchStyle: .mergePatch,
            errorFormat: .outpost)
        configuration.batchPath = "records/batch"
        return configuration
    }()

    /// The common REST shape of Django REST framework: trailing slashes (`people/`, `people/42/`),
    /// bare bodies, lists as `{"count", "next", "previous", "results"}` with `?page=N` (use
    /// ``PaginationStyle/restFrameworkCursor`` for `CursorPagination`), `PATCH` with the changed fields
    /// as `application/json` (``PatchStyle/partialUpdate``; DRF answers 415 to a merge patch), and
    /// `{"detail": "..."}` or field-map errors (``OutpostError/fieldErrors``).
    public static let restFramework = EntityConfiguration(
        collectionPathTemplate: "{resource}/", itemPathTemplate: "{resource}/{id}/", listItemsKey: "results",
        pagination: .restFramework, patchStyle: .partialUpdate, errorFormat: .restFramework)

    /// NationBuilder's API v1 style: `{"person": {...}}` envelopes, `results` lists with `next`/`prev`
    /// token links, `PUT` of the whole object, and top-level `code`/`message` errors.
    public static let nationBuilder = EntityConfiguration(
        itemEnvelope: .entityName, listItemsKey: "results", pagination: .nationBuilder, maxPageSize: 100,
        patchStyle: .putWholeObject, errorFormat: .nationBuilder)

    // MARK: Paths

    /// The collection path of a resource.
    public func collectionPath(resource: String) -> String {
        collectionPathTemplate.replacingOccurrences(of: "{resource}", with: Self.trimmed(resource))
    }

    /// The path of one entity.
    public func itemPath(resource: String, id: some EntityIdentifier) -> String {
        itemPathTemplate
            .replacingOccurrences(of: "{resource}", with: Self.trimmed(resource))
            .replacingOccurrences(of: "{id}", with: Request.pathSegment(id.pathSegment))
    }

    func envelopeKey<E: Entity>(for type: E.Type) -> String? {
        switch itemEnvelope {
        case .none: return nil
        case .key(let key): return key
        case .entityName: return E.entityName
        }
    }

    private static func trimmed(_ resource: String) -> String {
        var path = Substring(resource)
        while path.hasSuffix("/") { path = path.dropLast() }
        return String(path)
    }
}
