/// One key of a list's order, for `ListRequest.sorted(by:)`: a
/// top-level field of `Record`, or the record's creation time, update time or id, ascending or
/// descending.
///
/// ```swift
/// ListRequest(Article.self).sorted(by: Article.views.descending, Article.title.ascending)  // sort=-views,title
/// ListRequest(Article.self).sorted(by: .created.reversed)                                 // sort=-created
/// ```
///
/// An Outpost server ends every order with `id`, so no two records tie, and reads at most 3 keys.
public struct RecordSortKey<Record>: Sendable, Hashable, CustomStringConvertible {
    /// The name sent in `sort`: a field's name, or `created`, `updated` or `id`.
    public let name: String
    /// Whether the key orders from the largest value down.
    public let isDescending: Bool

    init(name: String, isDescending: Bool) {
        self.name = name
        self.isDescending = isDescending
    }

    /// The records' creation time, oldest first (`created`).
    public static var created: RecordSortKey { RecordSortKey(name: "created", isDescending: false) }

    /// The records' last update time, oldest first (`updated`).
    public static var updated: RecordSortKey { RecordSortKey(name: "updated", isDescending: false) }

    /// The records' ids, ascending (`id`).
    public static var id: RecordSortKey { RecordSortKey(name: "id", isDescending: false) }

    /// The same key in the other direction.
    public var reversed: RecordSortKey { RecordSortKey(name: name, isDescending: !isDescending) }

    /// The key as `sort` takes it: the name, with `-` first when descending (`-views`).
    public var description: String { (isDescending ? "-" : "") + name }

    /// The key as `sort` takes it, once the name is checked.
    func parameter() throws(OutpostError) -> String {
        guard Self.isValidName(name) else {
            throw OutpostError(
                .invalidRequest,
                "'\(name)' cannot be a sort key: a key is one top-level field named by 1–64 letters, digits, '_' or '-' "
                    + "(not starting with '-'), or created, updated or id",
                suggestion:
                    "Sort by a top-level field with such a name, or with ListRequest.sorted(by:) and the server's own key text")
        }
        return description
    }

    static func isValidName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...64).contains(bytes.count), bytes.first != UInt8(ascii: "-") else { return false }
        return bytes.allSatisfy {
            RecordFilterText.isLetter($0) || RecordFilterText.isDigit($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-")
        }
    }
}

extension RecordField {
    /// The field as a sort key, smallest value first. Only top-level fields sort; a field named
    /// `created` or `updated` is read by an Outpost server as the record's own time.
    public var ascending: RecordSortKey<Record> { sortKey(descending: false) }

    /// The field as a sort key, largest value first (`-name`).
    public var descending: RecordSortKey<Record> { sortKey(descending: true) }

    private func sortKey(descending: Bool) -> RecordSortKey<Record> {
        // A nested field cannot sort: its dotted name fails the key's check when the list is requested.
        RecordSortKey(name: names.joined(separator: "."), isDescending: descending)
    }
}
