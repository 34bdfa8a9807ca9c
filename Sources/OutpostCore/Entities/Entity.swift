public import Foundation

/// A `Codable` model that lives on a server as a REST resource.
///
/// ```swift
/// struct Person: Entity {
///     static let resourcePath = "records/people"
///     var id: String?
///     var name: String
///     var address: Address?          // nested values and entities encode as nested JSON
///     @Transient var isSelected = false  // never sent, never required
/// }
/// ```
///
/// The `id` is `nil` until the server assigns one on the first push (``EntityStore``).
/// Operations live on ``EntityStore`` (`client.entities()`), which wraps a pulled or pushed entity in
/// ``Synced`` to remember what the server last saw.
public protocol Entity: Codable, Sendable {
    /// The type of the server-assigned identifier: `String`, `Int`, `Int64` or `UUID`, or your own
    /// ``EntityIdentifier``.
    associatedtype ID: EntityIdentifier

    /// The server's identifier, `nil` while the entity has never been pushed.
    var id: ID? { get set }

    /// The path of the collection, relative to the client's base URL, e.g. `records/people`.
    /// ``EntityConfiguration/collectionPathTemplate`` and ``EntityConfiguration/itemPathTemplate``
    /// turn it into request paths.
    static var resourcePath: String { get }

    /// The name used by ``EntityConfiguration/Envelope/entityName`` envelopes (`{"person": {...}}`).
    /// Default: the type's name with its first letter lowercased.
    static var entityName: String { get }
}

extension Entity {
    public static var entityName: String {
        let name = String(describing: Self.self)
        guard let first = name.first else { return name }
        return first.lowercased() + name.dropFirst()
    }
}

/// A value that identifies an entity and fits in a URL path segment.
public protocol EntityIdentifier: Hashable, Sendable, Codable {
    /// The identifier as it appears in a path, before percent-encoding.
    var pathSegment: String { get }
    /// Reads an identifier from a path segment (e.g. the last segment of a `Location` header).
    init?(pathSegment: String)
}

extension String: EntityIdentifier {
    public var pathSegment: String { self }
    public init?(pathSegment: String) { self = pathSegment }
}

extension Int: EntityIdentifier {
    public var pathSegment: String { String(self) }
    public init?(pathSegment: String) { self.init(pathSegment) }
}

extension Int64: EntityIdentifier {
    public var pathSegment: String { String(self) }
    public init?(pathSegment: String) { self.init(pathSegment) }
}

extension UUID: EntityIdentifier {
    public var pathSegment: String { uuidString.lowercased() }
    public init?(pathSegment: String) { self.init(uuidString: pathSegment) }
}
