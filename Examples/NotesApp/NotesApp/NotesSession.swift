import Foundation
import NotesModel
import Observation
import Outpost
import OutpostSync

/// The app's account: the authenticator (its credential in the Keychain), the signed-in client,
/// and the library of the account's notes.
@MainActor
@Observable
final class NotesSession {
    static let server = URL(string: "https://notes.example.com")!
    static let registration = ClientRegistration(
        clientID: "notes-ios", redirectURI: URL(string: "com.example.notes:/oauth/callback"), scopes: ["openid"])

    private(set) var library: NotesLibrary?
    private(set) var client: OutpostClient?
    var signInError: String?
    private var authenticator: Authenticator?

    /// Opens the library when the Keychain still holds a credential.
    func restore() async {
        do {
            let auth = try await authenticator()
            if try await auth.credential() != nil { try await openLibrary(auth) }
        } catch {
            // Locked before the first unlock, or no network for discovery: stay on the sign-in screen.
        }
    }

    /// Signs in with the system's web authentication session, then opens the library.
    func signIn(anchor: @escaping SystemWebAuthenticator.AnchorProvider) async {
        do {
            let auth = try await authenticator()
            _ = try await auth.signInWithWebAuthentication(SystemWebAuthenticator(anchor: anchor))
            try await openLibrary(auth)
            signInError = nil
        } catch let error as AuthError where error.code == .cancelled {
            signInError = nil
        } catch {
            signInError = "\(error)"
        }
    }

    /// Closes the library and forgets the credential; the account's store stays on the device.
    func signOut() async {
        await library?.close()
        library = nil
        try? await authenticator?.signOut()
        try? await client?.shutdown()
        client = nil
    }

    private func authenticator() async throws -> Authenticator {
        if let authenticator { return authenticator }
        let discovery = OutpostClient(configuration: .init(baseURL: Self.server))
        let auth = try await Authenticator.discover(
            issuer: Self.server, client: discovery, registration: Self.registration,
            store: KeychainCredentialStore(service: "com.example.notes"))
        authenticator = auth
        return auth
    }

    private func openLibrary(_ auth: Authenticator) async throws {
        let client = OutpostClient(
            configuration: .init(baseURL: Self.server), middlewares: [AuthMiddleware(authenticator: auth)])
        let account = try await auth.credential()?.idToken?.claims.subject ?? Self.registration.clientID
        let folder = try SyncedStore.folder(for: .standard, application: "notes", account: account)
        let library = try NotesLibrary(folder: folder, client: client)
        self.client = client
        self.library = library
        try library.startFollowing()
        await library.sync()
    }
}
