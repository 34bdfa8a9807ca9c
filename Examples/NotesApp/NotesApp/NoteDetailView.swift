import NotesModel
import Outpost
import OutpostSync
import SwiftUI
import UniformTypeIdentifiers

/// One note: its text, its attachments, and its state; Edit opens the editor.
struct NoteDetailView: View {
    let library: NotesLibrary
    let id: String
    @Environment(NotesSession.self) private var session
    @State private var editing = false
    @State private var importing = false
    @State private var attachError: String?

    var body: some View {
        if let record = library.notes.record(id: id) {
            List {
                Section {
                    Text(record.value.text.isEmpty ? "No text" : record.value.text)
                }
                Section("Attachments") {
                    ForEach(record.value.attachments) { attachment in
                        LabeledContent(
                            attachment.title,
                            value: ByteCountFormatter.string(fromByteCount: attachment.byteCount, countStyle: .file))
                    }
                    Button("Attach a File", systemImage: "paperclip") { importing = true }
                    if let attachError { Text(attachError).font(.footnote).foregroundStyle(.red) }
                }
                Section {
                    switch record.state {
                    case .pending: Label("Waiting to sync", systemImage: "icloud.and.arrow.up")
                    case .confirmed: Label("Synced", systemImage: "checkmark.icloud")
                    case .failed(let reason): Label("Not accepted: \(reason)", systemImage: "exclamationmark.triangle")
                    }
                }
            }
            .navigationTitle(record.value.title)
            .toolbar {
                Button("Edit") { editing = true }
            }
            .sheet(isPresented: $editing) {
                NavigationStack { NoteEditor(library: library, draft: NoteDraft(record.value)) }
            }
            .fileImporter(isPresented: $importing, allowedContentTypes: [.item]) { result in
                guard case .success(let url) = result else { return }
                Task { await attach(url) }
            }
        } else {
            // Deleted, archived, or pushed (its local id became the server's): back to the list.
            ContentUnavailableView("Note Unavailable", systemImage: "note.text")
        }
    }

    /// Uploads the picked file (a security-scoped URL from the importer) and attaches it.
    private func attach(_ url: URL) async {
        guard let client = session.client else { return }
        let scoped = url.startAccessingSecurityScopedResource()
        defer { if scoped { url.stopAccessingSecurityScopedResource() } }
        let type = UTType(filenameExtension: url.pathExtension)?.preferredMIMEType ?? "application/octet-stream"
        do {
            try await library.attach(url, contentType: type, to: id, files: client.files)
            attachError = nil
        } catch {
            attachError = "The file was not attached: \(error.localizedDescription)"
        }
    }
}

/// Edits a draft and saves it to the store (pending at once; sent at the next sync).
struct NoteEditor: View {
    let library: NotesLibrary
    @State var draft: NoteDraft
    @Environment(\.dismiss) private var dismiss
    @State private var saveError: String?

    var body: some View {
        Form {
            TextField("Title", text: $draft.title)
            TextField("Text", text: $draft.text, axis: .vertical)
                .lineLimit(5...20)
            if let problem = draft.problem ?? saveError {
                Text(problem).font(.footnote).foregroundStyle(.secondary)
            }
        }
        .navigationTitle(draft.id == nil ? "New Note" : "Edit Note")
        .toolbar {
            ToolbarItem(placement: .cancellationAction) {
                Button("Cancel") { dismiss() }
            }
            ToolbarItem(placement: .confirmationAction) {
                Button("Save") {
                    Task {
                        do {
                            try await library.save(draft)
                            dismiss()
                        } catch {
                            saveError = error.localizedDescription
                        }
                    }
                }
                .disabled(draft.problem != nil)
            }
        }
    }
}
