import Foundation

/// The editor's copy of a note: what the user types, checked before it is saved.
public struct NoteDraft: Sendable, Hashable {
    /// The most characters a title may have.
    public static let maxTitleLength = 200

    /// The note edited, `nil` for a new one.
    public var id: String?
    public var title: String
    public var text: String

    /// An empty draft for a new note.
    public init() {
        title = ""
        text = ""
    }

    /// A draft of `note`.
    public init(_ note: Note) {
        id = note.id
        title = note.title
        text = note.text
    }

    /// The title without leading and trailing white space.
    public var trimmedTitle: String { title.trimmingCharacters(in: .whitespacesAndNewlines) }

    /// Why the draft cannot be saved, or `nil` when it can.
    public var problem: String? {
        if trimmedTitle.isEmpty { return "Give the note a title." }
        if trimmedTitle.count > Self.maxTitleLength { return "Keep the title under \(Self.maxTitleLength) characters." }
        return nil
    }

    /// Whether saving would change `note` (always for a new note with a title).
    public func changes(_ note: Note?) -> Bool {
        guard let note else { return problem == nil }
        return trimmedTitle != note.title || text != note.text
    }
}
