import Foundation
@_spi(OutpostInternal) import OutpostCore
import OutpostTestSupport
import OutpostTesting
import Testing

@testable import OutpostAuth

/// A store whose reads fail as the Keychain does before the device's first unlock.
struct LockedCredentialStore: CredentialStore {
    func load(account: String) async throws -> Credential? {
        throw AuthError(.credentialStoreLocked, "locked until the first unlock")
    }
    func save(_ credential: Credential, account: String) async throws {
        throw AuthError(.credentialStoreLocked, "locked until the first unlock")
    }
    func remove(account: String) async throws {
        throw AuthError(.credentialStoreLocked, "locked until the first unlock")
    }
}

@Suite("Refresh races: a refresh commits only while its credential is current")
struct RefreshRaceTests {
    static let user1 = Credential(accessToken: "at-user1", refreshToken: "rt-user1", expiresAt: Date().addingTimeInterval(3600))
    static let user2 = Credential(accessToken: "at-user2", refreshToken: "rt-user2", expiresAt: Date().addingTimeInterval(3600))

    /// A token endpoint that holds each refresh at `gate` and then answers `reply`.
    static func gatedServer(_ gate: Gate, reply: Reply) -> ScriptedTransport {
        authServer { request in
            switch request.path {
            case "/oauth/token":
                await gate.wait()
                return reply
            case "/oauth/revoke":
                return Reply(status: 200, body: Data())
            default:
                return .json(200, ["ok": true])
            }
        }
    }

    /// Starts a refresh of user 1 and returns once its token request waits at the gate.
    static func refreshInFlight(_ auth: Authenticator, gate: Gate) async -> Task<Credential, any Error> {
        var arrivals = gate.arrivals.makeAsyncIterator()
        let refresh = Task { try await auth.refresh() }
        _ = await arrivals.next()
        return refresh
    }

    @Test("signed out (signOut or setCredential(nil)) while a refresh is in flight: the store stays empty afterwards")
    func signOutDuringRefresh() async throws {
        for useSignOut in [true, false] {
            let gate = Gate()
            let store = InMemoryCredentialStore()
            await store.save(Self.user1, account: "cli")
            let auth = makeAuthenticator(Self.gatedServer(gate, reply: .token("at-fresh", refresh: "rt-fresh")), store: store)
            let refresh = await Self.refreshInFlight(auth, gate: gate)
            let signOut = Task {
                if useSignOut { try await auth.signOut(revoke: false) } else { try await auth.setCredential(nil) }
            }
            if !useSignOut { try await signOut.value }  // setCredential does not wait for the refresh
            gate.open()
            _ = try? await refresh.value
            try await signOut.value
            #expect(await store.load(account: "cli") == nil, "signOut: \(useSignOut)")
            #expect(try await auth.credential() == nil)
        }
    }

    @Test("another user's credential set while a refresh of the first is in flight is neither overwritten nor deleted")
    func switchDuringRefresh() async throws {
        for reply in [Reply.token("at-fresh1", refresh: "rt-fresh1"), Reply.oauthError("invalid_grant")] {
            let gate = Gate()
            let store = InMemoryCredentialStore()
            await store.save(Self.user1, account: "cli")
            let auth = makeAuthenticator(Self.gatedServer(gate, reply: reply), store: store)
            let refresh = await Self.refreshInFlight(auth, gate: gate)
            try await auth.setCredential(Self.user2)
            gate.open()
            await #expect(throws: AuthError.self) { try await refresh.value }
            #expect(await store.load(account: "cli") == Self.user2, "reply \(reply.status)")
            #expect(try await auth.credential() == Self.user2)
            #expect(try await auth.validCredential() == Self.user2)
        }
    }

    @Test("accounts: switching and removing an account during its refresh leaves the next account's credential as it was")
    func accountSwitchDuringRefresh() async throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "outpost-race-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let gate = Gate()
        let transport = authServer { request in
            switch request.path {
            case "/oauth/token":
                if request.form["grant_type"] == "refresh_token" {
                    await gate.wait()
                    return .token("fresh-\(request.form["refresh_token"] ?? "")", refresh: "rt-fresh")
                }
                let user = request.form["username"] ?? "?"
                return .token("\(user)-access", refresh: "\(user)-refresh")
            default:
                return Reply(status: 200, body: Data())
            }
        }
        let store = InMemoryCredentialStore()
        let client = OutpostClient(configuration: .init(baseURL: testBase, retry: .none), transport: transport)
        let accounts = AccountManager(listFile: folder.appending(path: "accounts.json"), credentials: store) { account, store in
            Authenticator(
                configuration: .init(
                    registration: ClientRegistration(clientID: "app"), endpoints: .outpost(base: account.server), store: store),
                client: client)
        }
        let ada = try await accounts.add(server: testBase, name: "ada") { try await $0.signIn(username: "ada", password: "pw") }
        let bob = try await accounts.add(server: testBase, name: "bob") { try await $0.signIn(username: "bob", password: "pw") }
        let bobBefore = try await accounts.authenticator(for: bob.id).credential()

        let adaAuth = try await accounts.authenticator(for: ada.id)
        let refresh = await Self.refreshInFlight(adaAuth, gate: gate)
        try await accounts.use(bob.id)
        let removal = Task { try await accounts.remove(ada.id, revoke: false) }
        gate.open()
        _ = try? await refresh.value
        try await removal.value

        #expect(try await accounts.activeAccount() == bob)
        let bobAuth = try #require(try await accounts.activeAuthenticator())
        #expect(try await bobAuth.credential() == bobBefore)
        #expect(await store.load(account: "account:\(bob.id)#app") == bobBefore)
        #expect(await store.load(account: "account:\(ada.id)#app") == nil)
    }

    @Test("a locked credential store surfaces as credentialStoreLocked, never as signed out; nothing is sent unsigned")
    func lockedStore() async throws {
        let transport = authServer { _ in .json(200, ["ok": true]) }
        let auth = makeAuthenticator(transport, store: LockedCredentialStore())
        await #expect { _ = try await auth.credential() } throws: { ($0 as? AuthError)?.code == .credentialStoreLocked }
        await #expect { _ = try await auth.validCredential() } throws: { ($0 as? AuthError)?.code == .credentialStoreLocked }
        await #expect { try await auth.refresh() } throws: { ($0 as? AuthError)?.code == .credentialStoreLocked }

        let client = makeClient(transport, middlewares: [AuthMiddleware(authenticator: auth)])
        await #expect {
            _ = try await client.send(.get("/me"))
        } throws: { error in
            guard let error = error as? OutpostError else { return false }
            let cause = error.underlying as? AuthError ?? (error.underlying as? OutpostError)?.underlying as? AuthError
            return error.code == .unauthorized && cause?.code == .credentialStoreLocked
        }
        #expect(transport.requests.isEmpty, "no request went out unsigned")
    }
}
