import Synchronization

/// Marks a stored property of a `Codable` type as transient: it is never encoded, and decoding
/// neither requires nor reads it (the property gets ``TransientDefault/transientDefault``).
///
/// ```swift
/// struct Post: Entity {
///     static let resourcePath = "records/posts"
///     var id: String?
///     var title: String
///     @Transient var isExpanded = false          // UI state
///     @Transient var thumbnail: Data? = nil      // a cache
/// }
/// ```
///
/// ``EntityStore`` keeps transient values across push, pull and patch: the entity that comes back
/// has the server's fields and the local transient values.
///
/// It works with synthesized `Codable`: Outpost adds overloads of `KeyedEncodingContainer.encode` and
/// `KeyedDecodingContainer.decode` for `Transient`, which the compiler picks for wrapped properties.
/// A type with a hand-written `encode(to:)`/`init(from:)` simply leaves the property out instead.
@propertyWrapper
public struct Transient<Value: TransientDefault & Sendable>: Sendable {
    public var wrappedValue: Value

    public init(wrappedValue: Value) {
        self.wrappedValue = wrappedValue
    }
}

extension Transient: Equatable where Value: Equatable {}
extension Transient: Hashable where Value: Hashable {}

extension Transient: Codable {
    /// Gives the default value; the decoder's content is not read.
    public init(from decoder: any Decoder) throws {
        self.init(wrappedValue: Value.transientDefault)
    }

    /// Encodes nothing. (Synthesized conformances do not even get here: they skip the key.)
    public func encode(to encoder: any Encoder) throws {}
}

extension KeyedEncodingContainer {
    /// Skips transient properties: their key is not written.
    public mutating func encode<Value>(_ value: Transient<Value>, forKey key: Key) throws {
        TransientValues.recorder?.record(value.wrappedValue, at: codingPath, key: key)
    }
}

extension KeyedDecodingContainer {
    /// Transient properties are not read, so they need not be present.
    public func decode<Value>(_ type: Transient<Value>.Type, forKey key: Key) throws -> Transient<Value> {
        if let kept = TransientValues.restoring?.value(at: codingPath, key: key) as? Value {
            return Transient(wrappedValue: kept)
        }
        return Transient(wrappedValue: Value.transientDefault)
    }
}

/// The transient values of one entity, recorded while it is encoded and handed back while the
/// server's copy of it is decoded, so that push, pull and patch keep them.
struct TransientValues: Sendable {
    /// Set while a local entity is encoded.
    @TaskLocal static var recorder: Recorder?
    /// Set while the server's copy is decoded.
    @TaskLocal static var restoring: TransientValues?

    final class Recorder: Sendable {
        private let values = Mutex<[String: any Sendable]>([:])

        func record(_ value: any Sendable, at codingPath: [any CodingKey], key: some CodingKey) {
            values.withLock { $0[TransientValues.path(codingPath, key, dropping: 0)] = value }
        }

        var recorded: [String: any Sendable] { values.withLock { $0 } }
    }

    var values: [String: any Sendable]
    /// Leading coding-path components of the decoded document that the encoded one lacks (an envelope key).
    var droppedComponents: Int

    func value(at codingPath: [any CodingKey], key: some CodingKey) -> (any Sendable)? {
        guard codingPath.count >= droppedComponents else { return nil }
        return values[Self.path(codingPath, key, dropping: droppedComponents)]
    }

    static func path(_ codingPath: [any CodingKey], _ key: some CodingKey, dropping count: Int) -> String {
        (codingPath.dropFirst(count) + [key as any CodingKey]).map { $0.intValue.map { "[\($0)]" } ?? "." + $0.stringValue }
            .joined()
    }
}

/// The value a ``Transient`` property gets when its owner is decoded.
///
/// Optionals (`nil`), `Bool` (`false`), numbers (`0`), strings, arrays, sets and dictionaries (empty)
/// conform; conform your own types to mark them transient.
public protocol TransientDefault {
    static var transientDefault: Self { get }
}

extension Optional: TransientDefault {
    public static var transientDefault: Self { nil }
}

extension Bool: TransientDefault {
    public static var transientDefault: Bool { false }
}

extension Int: TransientDefault {
    public static var transientDefault: Int { 0 }
}

extension Double: TransientDefault {
    public static var transientDefault: Double { 0 }
}

extension String: TransientDefault {
    public static var transientDefault: String { "" }
}

extension Array: TransientDefault {
    public static var transientDefault: Self { [] }
}

extension Set: TransientDefault {
    public static var transientDefault: Self { [] }
}

extension Dictionary: TransientDefault {
    public static var transientDefault: Self { [:] }
}
