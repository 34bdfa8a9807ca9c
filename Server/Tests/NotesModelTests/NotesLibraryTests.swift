import Foundation
import NotesModel
import OutpostCore
import OutpostSync
import OutpostTestSupport
import Testing

/// The example app's model on a real store in a temporary folder, offline: saving, editing,
/// archiving and searching show in the live list; drafts are checked; conflicts merge attachments.
@Suite(.timeLimit(.minutes(2))) struct NotesLibraryTests {
    @MainActor
    static func withLibrary(_ body: @MainActor (NotesLibrary) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "outpost-notes-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let library = try NotesLibrary(folder: folder, client: nil)
        try await body(library)
        await library.close()
    }

    /// Waits until the library's list satisfies `done`.
    @MainActor
    static func wait(_ library: NotesLibrary, until done: () -> Bool) async {
        _ = await changes(
            of: {
                _ = library.notes
                _ = library.notes.records
                _ = library.notes.isLoading
            }, until: done)
    }

    @Test @MainActor func savedNotesShowPendingAndEditsFollow() async throws {
        try await Self.withLibrary { library in
            var draft = NoteDraft()
            draft.title = "  Groceries "
            draft.text = "milk"
            let id = try await library.save(draft)
            await Self.wait(library) { library.notes.records.count == 1 }
            let saved = try #require(library.notes.record(id: id))
            #expect(saved.value.title == "Groceries" && saved.value.text == "milk" && saved.state == .pending)

            var edit = NoteDraft(saved.value)
            #expect(!edit.changes(saved.value))
            edit.text = "milk, eggs"
            #expect(edit.changes(saved.value))
            try await library.save(edit)
            await Self.wait(library) { library.notes.record(id: id)?.value.text == "milk, eggs" }
            #expect(try await library.store.status()["notes"] == SyncTypeStatus(pending: 2, failed: 0))

            try await library.setArchived(true, id: id)
            await Self.wait(library) { library.notes.records.isEmpty }
            library.showsArchived = true
            await Self.wait(library) { library.notes.records.count == 1 }
            #expect(library.notes.items.map(\.archived) == [true])
        }
    }

    @Test @MainActor func searchKeepsNotesWhoseTitleStartsWithIt() async throws {
        try await Self.withLibrary { library in
            for title in ["Groceries", "Gift ideas", "Books \"to read\""] {
                var draft = NoteDraft()
                draft.title = title
                try await library.save(draft)
            }
            await Self.wait(library) { library.notes.records.count == 3 }
            library.search = "G"
            await Self.wait(library) { !library.notes.isLoading && library.notes.records.count == 2 }
            #expect(Set(library.notes.items.map(\.title)) == ["Groceries", "Gift ideas"])
            library.search = "Books \"to"
            await Self.wait(library) { !library.notes.isLoading && library.notes.records.count == 1 }
            #expect(library.notes.items.map(\.title) == ["Books \"to read\""] && library.notes.error == nil)
        }
    }

    @Test @MainActor func draftsWithoutATitleAreRefused() async throws {
        try await Self.withLibrary { library in
            var draft = NoteDraft()
            draft.title = "   "
            #expect(draft.problem != nil)
            await #expect(throws: SyncError.self) { try await library.save(draft) }
            draft.title = String(repeating: "x", count: NoteDraft.maxTitleLength + 1)
            #expect(draft.problem != nil)
            let status = try await library.store.status()
            #expect(status.isEmpty)
        }
    }

    @Test @MainActor func attachmentsAreAddedToTheNote() async throws {
        try await Self.withLibrary { library in
            var draft = NoteDraft()
            draft.title = "Trip"
            let id = try await library.save(draft)
            let ticket = Attachment(name: "note-1.pdf", title: "ticket.pdf", contentType: "application/pdf", byteCount: 10)
            try await library.addAttachment(ticket, to: id)
            await Self.wait(library) { library.notes.record(id: id)?.value.attachments == [ticket] }
            #expect(NotesLibrary.attachmentName(for: URL(filePath: "/tmp/ticket 1.PDF")).hasSuffix(".PDF"))
        }
    }

    @Test func aConflictKeepsTheLocalTextAndBothSidesAttachments() {
        let a: JSONValue = ["name": "a", "title": "a", "contentType": "text/plain", "byteCount": 1]
        let b: JSONValue = ["name": "b", "title": "b", "contentType": "text/plain", "byteCount": 1]
        let merged = NotesLibrary.merge(
            base: ["title": "old"], local: ["title": "mine", "attachments": [a]],
            server: ["title": "theirs", "attachments": [b, a]])
        #expect(merged["title"] == "mine")
        #expect(merged["attachments"] == [a, b])
    }

    @Test func theFilterQuotesTheSearch() {
        #expect(NotesLibrary.filter(search: "", archived: false) == "record.archived != true")
        #expect(
            NotesLibrary.filter(search: " a\"b ", archived: true) == #"record.archived == true && record.title ^= "a\"b""#)
    }
}
