public import OutpostCore

/// A note: a title, a text, files attached to it, and whether it is archived. Stored as a record
/// of type `notes`.
public struct Note: Entity, Hashable {
    public static let resourcePath = "records/notes"

    /// The server's id, or the synced store's local id until the server has the note.
    public var id: String?
    public var title: String
    public var text: String
    public var archived: Bool
    /// The files attached, uploaded with `OutpostFiles` under ``Attachment/name``.
    public var attachments: [Attachment]
    /// When the server last changed the note (ISO 8601, the server's `updated_at`); `nil` until it has it.
    public var updatedAt: String?

    public init(
        id: String? = nil, title: String, text: String = "", archived: Bool = false, attachments: [Attachment] = [],
        updatedAt: String? = nil
    ) {
        self.id = id
        self.title = title
        self.text = text
        self.archived = archived
        self.attachments = attachments
        self.updatedAt = updatedAt
    }

    enum CodingKeys: String, CodingKey {
        case id, title, text, archived, attachments
        case updatedAt = "updated_at"
    }

    /// Reads a note, taking missing fields as empty: records written by other clients may lack some.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decodeIfPresent(String.self, forKey: .id)
        title = try container.decodeIfPresent(String.self, forKey: .title) ?? ""
        text = try container.decodeIfPresent(String.self, forKey: .text) ?? ""
        archived = try container.decodeIfPresent(Bool.self, forKey: .archived) ?? false
        attachments = try container.decodeIfPresent([Attachment].self, forKey: .attachments) ?? []
        updatedAt = try container.decodeIfPresent(String.self, forKey: .updatedAt)
    }

    /// The fields a local write sends: everything but the server-owned `id` and `updated_at`.
    public var fields: [String: JSONValue] {
        [
            "title": .string(title), "text": .string(text), "archived": .bool(archived),
            "attachments": .array(attachments.map(\.json)),
        ]
    }
}

/// A file attached to a note.
public struct Attachment: Codable, Sendable, Hashable, Identifiable {
    /// The file's name on the server (`OutpostFiles`): unique, made by ``NotesLibrary/attachmentName(for:)``.
    public var name: String
    /// The name the user knows it by.
    public var title: String
    public var contentType: String
    public var byteCount: Int64

    public var id: String { name }

    public init(name: String, title: String, contentType: String, byteCount: Int64) {
        self.name = name
        self.title = title
        self.contentType = contentType
        self.byteCount = byteCount
    }

    var json: JSONValue {
        ["name": .string(name), "title": .string(title), "contentType": .string(contentType), "byteCount": .int(Int(byteCount))]
    }
}
