import NotesModel
import Outpost
import OutpostSync
import SwiftUI

/// The notes, newest first, live: local edits show at once (marked until the server has them),
/// and changes from other devices arrive while the app is open.
struct NotesListView: View {
    @Bindable var library: NotesLibrary
    @Environment(NotesSession.self) private var session
    @State private var composing = false

    var body: some View {
        let query = library.notes
        List {
            ForEach(query.records) { record in
                NavigationLink(value: record.id) {
                    NoteRow(note: record.value, state: record.state)
                }
                .swipeActions {
                    Button("Archive") { Task { try? await library.setArchived(true, id: record.id) } }
                    Button("Delete", role: .destructive) { Task { try? await library.delete(id: record.id) } }
                }
            }
            NavigationLink("Archive") { ArchivedNotesView(library: library) }
        }
        .overlay {
            if query.isLoading {
                ProgressView()
            } else if query.records.isEmpty {
                ContentUnavailableView("No Notes", systemImage: "note.text", description: Text("Tap + to write one."))
            }
        }
        .searchable(text: $library.search, prompt: "Title starts with")
        .refreshable { await library.sync() }
        .navigationTitle("Notes")
        .navigationDestination(for: String.self) { id in
            NoteDetailView(library: library, id: id)
        }
        .toolbar {
            ToolbarItem(placement: .primaryAction) {
                Button("New Note", systemImage: "plus") { composing = true }
            }
            ToolbarItem(placement: .navigation) {
                Button("Sign Out") { Task { await session.signOut() } }
            }
        }
        .sheet(isPresented: $composing) {
            NavigationStack { NoteEditor(library: library, draft: NoteDraft()) }
        }
        .safeAreaInset(edge: .bottom) {
            if let error = library.syncError ?? query.error {
                Text("Not synced: \(error.localizedDescription)")
                    .font(.footnote)
                    .padding(8)
                    .frame(maxWidth: .infinity)
                    .background(.bar)
            }
        }
    }
}

/// One note in the list, with a mark while its changes wait for the server or were refused.
struct NoteRow: View {
    let note: Note
    let state: RecordState

    var body: some View {
        HStack {
            VStack(alignment: .leading) {
                Text(note.title).font(.headline)
                Text(note.text).lineLimit(1).foregroundStyle(.secondary)
            }
            Spacer()
            if !note.attachments.isEmpty { Image(systemName: "paperclip") }
            switch state {
            case .pending: Image(systemName: "icloud.and.arrow.up").foregroundStyle(.secondary)
            case .failed: Image(systemName: "exclamationmark.triangle").foregroundStyle(.red)
            case .confirmed: EmptyView()
            }
        }
    }
}

/// The archived notes: an `@OutpostQuery` over the store in the environment.
struct ArchivedNotesView: View {
    let library: NotesLibrary
    @OutpostQuery(Note.self, filter: "record.archived == true", sort: "title") private var archived

    var body: some View {
        List(archived, id: \.id) { note in
            Text(note.title)
                .swipeActions {
                    Button("Restore") { Task { try? await library.setArchived(false, id: note.id ?? "") } }
                }
        }
        .overlay {
            if $archived?.isLoading == false, archived.isEmpty {
                ContentUnavailableView("Nothing Archived", systemImage: "archivebox")
            }
        }
        .navigationTitle("Archive")
    }
}
