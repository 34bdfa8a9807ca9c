public import Foundation
public import Observation
public import OutpostCore
public import OutpostSync

/// The notes of one signed-in account: its synced store, the list's query, and the writes the
/// screens make. Everything the app's views do goes through here, so it is tested on Linux.
///
/// ```swift
/// let library = try NotesLibrary(folder: folder, client: signedInClient)
/// library.search = "Groc"            // the list now holds the notes whose title starts so
/// let id = try await library.save(draft)
/// await library.sync()               // push the local writes, then pull
/// ```
@MainActor
@Observable
public final class NotesLibrary {
    /// The account's synced store.
    public let store: SyncedStore
    /// The notes the list shows, newest first, live.
    public private(set) var notes: LiveQuery<Note>
    /// Only notes whose title starts with this (ignoring case is not possible in a local filter:
    /// the match is exact); empty for all.
    public var search: String = "" {
        didSet { if search != oldValue { requery() } }
    }
    /// Whether the list shows archived notes instead of the others.
    public var showsArchived = false {
        didSet { if showsArchived != oldValue { requery() } }
    }
    /// The last sync's failure, if any (the local writes stay queued).
    public private(set) var syncError: (any Error)?
    /// Whether a sync is running.
    public private(set) var isSyncing = false

    @ObservationIgnored private var live: LiveSync?

    /// Opens the account's store in `folder` (one folder per account).
    ///
    /// - Parameters:
    ///   - folder: the account's folder, e.g. from `SyncedStore.folder(for:application:account:)`.
    ///   - client: the signed-in client; `nil` to work offline only.
    /// - Throws: when the store cannot be opened.
    public init(folder: URL, client: OutpostClient?) throws {
        store = try SyncedStore(folder: folder, client: client, policies: ["notes": .merge(Self.merge)])
        notes = LiveQuery(store, Note.self, filter: Self.filter(search: "", archived: false), sort: "-updated_at,title")
    }

    /// Resolves a note changed here and on the server since: the local title, text and archived
    /// flag win, and the attachments are both sides' (a file added on one device is not lost to
    /// an edit on another).
    public nonisolated static func merge(
        base: [String: JSONValue], local: [String: JSONValue], server: [String: JSONValue]
    ) -> [String: JSONValue] {
        var merged = local
        var names = Set<String>()
        var attachments: [JSONValue] = []
        for attachment in (local["attachments"]?.arrayValue ?? []) + (server["attachments"]?.arrayValue ?? []) {
            guard let name = attachment["name"]?.stringValue, names.insert(name).inserted else { continue }
            attachments.append(attachment)
        }
        merged["attachments"] = .array(attachments)
        return merged
    }

    /// The list's filter: archived or not, and a title prefix when `search` is not empty.
    public nonisolated static func filter(search: String, archived: Bool) -> String {
        let trimmed = search.trimmingCharacters(in: .whitespacesAndNewlines)
        let state = archived ? "record.archived == true" : "record.archived != true"
        guard !trimmed.isEmpty else { return state }
        return state + " && record.title ^= " + JSONValue.string(trimmed).jsonString()
    }

    private func requery() {
        notes.stop()
        notes = LiveQuery(
            store, Note.self, filter: Self.filter(search: search, archived: showsArchived), sort: "-updated_at,title")
    }

    /// Saves `draft`: creates a note (pending at once) or patches the title and text of the one it edits.
    ///
    /// - Returns: the note's id (a local one for a new note until it is pushed).
    /// - Throws: a `SyncError` with the draft's ``NoteDraft/problem``, or the store's error.
    @discardableResult
    public func save(_ draft: NoteDraft) async throws -> String {
        if let problem = draft.problem { throw SyncError(problem) }
        guard let id = draft.id else {
            return try await store.create("notes", fields: Note(title: draft.trimmedTitle, text: draft.text).fields)
        }
        try await store.patch("notes", id: id, fields: ["title": .string(draft.trimmedTitle), "text": .string(draft.text)])
        return id
    }

    /// Archives the note with `id`, or brings it back.
    public func setArchived(_ archived: Bool, id: String) async throws {
        try await store.patch("notes", id: id, fields: ["archived": .bool(archived)])
    }

    /// Deletes the note with `id` (at once here; on the server at the next sync).
    public func delete(id: String) async throws {
        try await store.delete("notes", id: id)
    }

    /// A file name for an attachment that no other note's file takes: a UUID and the extension.
    public nonisolated static func attachmentName(for fileURL: URL) -> String {
        let ext = fileURL.pathExtension.filter { $0.isASCII && ($0.isLetter || $0.isNumber) }.prefix(10)
        return "note-" + UUID().uuidString.lowercased() + (ext.isEmpty ? "" : "." + ext)
    }

    /// Uploads `fileURL` and attaches it to the note with `id` (the note's change is pending until the next sync).
    ///
    /// - Parameters:
    ///   - fileURL: the file to attach.
    ///   - contentType: its media type.
    ///   - id: the note.
    ///   - files: the files API of the signed-in client (`client.files`).
    /// - Returns: the attachment.
    /// - Throws: the upload's error, or a `SyncError` when the store has no such note.
    @discardableResult
    public func attach(_ fileURL: URL, contentType: String, to id: String, files: OutpostFiles) async throws -> Attachment {
        let name = Self.attachmentName(for: fileURL)
        let uploaded = try await files.upload(from: fileURL, as: name, contentType: contentType).result
        let attachment = Attachment(
            name: name, title: fileURL.lastPathComponent, contentType: contentType, byteCount: uploaded.file.size)
        try await addAttachment(attachment, to: id)
        return attachment
    }

    /// Adds `attachment` (a file already on the server) to the note with `id`.
    public func addAttachment(_ attachment: Attachment, to id: String) async throws {
        guard let record = try await store.query("notes", filter: "record.id == " + JSONValue.string(id).jsonString()).first
        else { throw SyncError("This store holds no note \(id)") }
        let note = try record.decode(Note.self)
        try await store.patch(
            "notes", id: id, fields: ["attachments": .array((note.attachments + [attachment]).map(\.json))])
    }

    /// Sends the local writes, then brings the server's changes; a failure is kept in ``syncError``.
    public func sync() async {
        guard !isSyncing else { return }
        isSyncing = true
        defer { isSyncing = false }
        do {
            try await store.push()
            try await store.pull("notes")
            syncError = nil
        } catch {
            syncError = error
        }
    }

    /// Follows the server's changes to notes while the app is in the foreground.
    public func startFollowing() throws {
        guard live == nil else { return }
        live = try store.follow("notes")
    }

    /// Stops following (the app went to the background, or the user signed out).
    public func stopFollowing() async {
        await live?.stop()
        live = nil
    }

    /// Ends the list's query and stops following, before the library is dropped (on sign-out).
    public func close() async {
        notes.stop()
        await stopFollowing()
    }
}
