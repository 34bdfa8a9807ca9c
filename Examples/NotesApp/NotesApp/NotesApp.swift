import NotesModel
import Outpost
import OutpostSync
import SwiftUI

/// The notes app: sign in, then the notes of the signed-in account, offline first.
@main
struct NotesApp: App {
    @State private var session = NotesSession()

    var body: some Scene {
        WindowGroup {
            RootView()
                .environment(session)
                .outpostStore(session.library?.store)
        }
    }
}

/// Sign-in until there is an account, then the notes.
struct RootView: View {
    @Environment(NotesSession.self) private var session
    @Environment(\.scenePhase) private var scenePhase

    var body: some View {
        Group {
            if let library = session.library {
                NavigationStack {
                    NotesListView(library: library)
                }
            } else {
                SignInView()
            }
        }
        .task { await session.restore() }
        .onChange(of: scenePhase) { _, phase in
            guard let library = session.library else { return }
            switch phase {
            case .active:
                try? library.startFollowing()
                Task { await library.sync() }
            case .background:
                Task { await library.stopFollowing() }
            default:
                break
            }
        }
    }
}
