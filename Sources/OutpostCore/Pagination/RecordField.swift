/// A field of the records a list or a change stream of `Record` selects, with the type of the
/// values it holds: the operand of a typed ``RecordFilter`` or ``RecordSortKey``.
///
/// Declare the fields next to the type, by name as the record stores them, or from a key path that
/// fixes the value type to the property's:
///
/// ```swift
/// extension Article {
///     static let views = RecordField(\Article.views, "views")      // RecordField<Article, Int>
///     static let title = RecordField<Article, String>("title")
///     static let city = RecordField<Article, String>("address", "city")  // record.address.city
/// }
/// let popular = ListRequest(Article.self)
///     .filter(Article.views > 10 && Article.title.hasPrefix("Intro"))
///     .sorted(by: Article.views.descending, Article.title.ascending)
/// ```
///
/// Names are checked when a filter or a sort is rendered: in a filter each name is a letter or
/// `_` followed by letters, digits or `_` (1 to 7 names, for `record.a.b`); a sort key is one
/// top-level name of 1–64 letters, digits, `_` or `-`. A name outside that is an
/// ``OutpostError/Code/invalidRequest`` when the list or the stream is requested.
public struct RecordField<Record, Value: RecordFieldValue>: Sendable {
    /// The names from the record down: `["views"]`, or `["address", "city"]` for `record.address.city`.
    public let names: [String]

    /// A field by its name in the stored record, and the names of nested fields within it.
    ///
    /// - Parameters:
    ///   - name: The top-level field's name, e.g. `views`.
    ///   - nestedNames: Names of fields nested in it, outermost first (`"address", "city"`).
    public init(_ name: String, _ nestedNames: String...) {
        names = [name] + nestedNames
    }

    /// A field whose value type is that of the property `keyPath` names.
    ///
    /// The key path fixes the type only: `name` says how the record stores the field (its coding key).
    ///
    /// - Parameters:
    ///   - keyPath: The property the field holds, e.g. `\Article.views`.
    ///   - name: The top-level field's name in the stored record.
    ///   - nestedNames: Names of fields nested in it, outermost first.
    public init(_ keyPath: KeyPath<Record, Value>, _ name: String, _ nestedNames: String...) {
        names = [name] + nestedNames
    }
}

/// A type whose values a typed ``RecordFilter`` compares a ``RecordField`` with: `Bool`, `Int`,
/// `Int64`, `Double`, `String`, an optional of one (`nil` is `null`), or a `RawRepresentable`
/// type whose raw value is one, once it declares the conformance (`extension Status: RecordFieldValue {}`).
///
/// `Date` is not one: the server compares numbers and strings, and how a date is stored depends on
/// the encoder's `dateEncodingStrategy`. Compare a date field as what it stores, e.g. a
/// `RecordField<Article, String>` holding ISO 8601 text, with `date.formatted(.iso8601)`.
public protocol RecordFieldValue: Sendable {
    /// The JSON value a record holds for this value: `null`, a boolean, a number or a string.
    /// Arrays and objects cannot be compared in a filter.
    var recordFieldValue: JSONValue { get }
}

/// A ``RecordFieldValue`` that the server orders, so `<`, `<=`, `>` and `>=` apply: numbers, and
/// strings by Unicode code point. A comparison with a value of another type is false.
public protocol ComparableRecordFieldValue: RecordFieldValue {}

extension RecordFieldValue where Self: RawRepresentable, RawValue: RecordFieldValue {
    /// The raw value's JSON value.
    public var recordFieldValue: JSONValue { rawValue.recordFieldValue }
}

extension Bool: RecordFieldValue {
    /// `true` or `false`.
    public var recordFieldValue: JSONValue { .bool(self) }
}

extension Int: ComparableRecordFieldValue {
    /// The number, written with all its digits.
    public var recordFieldValue: JSONValue { .int(self) }
}

extension Int64: ComparableRecordFieldValue {
    /// The number, written with all its digits.
    public var recordFieldValue: JSONValue { Int(exactly: self).map(JSONValue.int) ?? .largeInteger(String(self)) }
}

extension Double: ComparableRecordFieldValue {
    /// The number; NaN and the infinities have no literal, and a filter holding one is an
    /// ``OutpostError/Code/invalidRequest``.
    public var recordFieldValue: JSONValue { .double(self) }
}

extension String: ComparableRecordFieldValue {
    /// The string.
    public var recordFieldValue: JSONValue { .string(self) }
}

extension Optional: RecordFieldValue where Wrapped: RecordFieldValue {
    /// The wrapped value's, or `null` for `nil`.
    public var recordFieldValue: JSONValue { self?.recordFieldValue ?? .null }
}

extension Optional: ComparableRecordFieldValue where Wrapped: ComparableRecordFieldValue {}
