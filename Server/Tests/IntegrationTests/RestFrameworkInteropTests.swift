import AsyncHTTPClient
import Foundation
import HTTPTypes
import Outpost
import OutpostTestSupport
import Synchronization
import Testing

/// A note of the interop project's `notes` app, as its ModelSerializer writes it.
struct DjangoNote: Entity, Equatable {
    static let resourcePath = "notes"
    var id: Int?
    var title: String
    var body: String = ""
    var done: Bool = false
    var tags: [String] = []
    var owner: String?
}

/// Plays the user in a browser on Django's own pages: signs in on `/accounts/login/`, then lets
/// the authorization endpoint redirect (the application skips the consent page) and follows the
/// redirect to the loopback listener.
struct DjangoBrowser: BrowserOpening {
    let browser: TestBrowser
    let server: DjangoServer

    func signIn() async throws {
        let login = server.baseURL.appendingPathComponent("accounts/login/").absoluteString
        let form = try await browser.get(login)
        var fields = form.hiddenFields
        fields["username"] = server.username
        fields["password"] = server.password
        let done = try await browser.postForm(login, fields)
        guard done.status == 302 else { throw DjangoServer.Failure("the Django sign-in answered \(done.status)") }
    }

    func open(_ url: URL) async throws {
        try await signIn()
        let page = try await browser.get(url.absoluteString)
        guard page.status == 302, let location = page.header("Location") else {
            throw DjangoServer.Failure("the authorization endpoint answered \(page.status), not a redirect")
        }
        _ = try await browser.get(location)
    }

    /// Enters `code` on the verification page and approves the device, as a user would.
    func approve(_ code: DeviceCode) async throws {
        try await signIn()
        let entry = try await browser.get(code.verificationURI.absoluteString)
        var fields = entry.hiddenFields
        fields["user_code"] = code.userCode
        let entered = try await browser.postForm(code.verificationURI.absoluteString, fields)
        guard entered.status == 302, let confirm = entered.header("Location") else {
            throw DjangoServer.Failure("the user-code page answered \(entered.status)")
        }
        let confirmURL = URL(string: confirm, relativeTo: server.baseURL)?.absoluteString ?? confirm
        var decision = try await browser.get(confirmURL).hiddenFields
        decision["action"] = "accept"
        let approved = try await browser.postForm(confirmURL, decision)
        guard approved.status == 302 else { throw DjangoServer.Failure("the confirmation page answered \(approved.status)") }
    }
}

@Suite(
    "The SDK against a stock Django REST framework + django-oauth-toolkit server",
    .enabled(if: DjangoServer.isEnabled, "set OUTPOST_INTEROP_PYTHON to the interop virtualenv's python"),
    .serialized, DjangoServerTrait(), .closesWhatItOpens)
struct RestFrameworkInteropTests {
    var server: DjangoServer {
        get throws { try #require(DjangoServer.current) }
    }

    /// Every client borrows the process-wide HTTP client, so none needs a shutdown, even when a test fails.
    static let transport = AsyncHTTPClientTransport(borrowing: HTTPClient.shared)

    /// The API under `/api`, configured as a Django REST framework backend.
    func apiClient(_ server: DjangoServer, middlewares: [any ClientMiddleware] = []) -> OutpostClient {
        OutpostClient(
            configuration: .init(baseURL: server.baseURL.appendingPathComponent("api"), errorFormat: .restFramework),
            transport: Self.transport, middlewares: middlewares)
    }

    /// The client that talks to django-oauth-toolkit at the server's root.
    func authClient(_ server: DjangoServer) -> OutpostClient {
        OutpostClient(configuration: .init(baseURL: server.baseURL), transport: Self.transport)
    }

    /// Signs in with the password grant through discovery; returns the authenticator and its client.
    func signedIn(_ server: DjangoServer, middlewares: [any ClientMiddleware] = []) async throws -> (Authenticator, OutpostClient)
    {
        let auth = try await Authenticator.discover(
            issuer: server.baseURL, client: authClient(server),
            registration: ClientRegistration(
                clientID: "interop-password", clientSecret: server.secrets["interop-password"], scopes: ["read", "write"]))
        try await auth.signIn(username: server.username, password: server.password)
        return (auth, apiClient(server, middlewares: [AuthMiddleware(authenticator: auth)] + middlewares))
    }

    @Test("entities: push, pull, partial patch (application/json), delete; writes need a user token")
    func entities() async throws {
        let server = try server
        let anonymous = apiClient(server).entities(.restFramework)
        let refused = await #expect(throws: OutpostError.self) { try await anonymous.push(DjangoNote(title: "anonymous")) }
        #expect(refused?.code == .unauthorized)
        #expect(refused?.serverMessage == "Authentication credentials were not provided.")
        #expect(refused?.path == "/api/notes/")

        let (_, client) = try await signedIn(server)
        let store = client.entities(.restFramework)
        var note = try await store.push(DjangoNote(title: "Ada's note", body: "first", tags: ["a"]))
        let id = try #require(note.id)
        #expect(note.owner == server.username)
        note.title = "Ada's final note"
        #expect(try store.changes(in: note) == ["title": "Ada's final note"])
        note = try await store.patch(note)
        #expect(note.title == "Ada's final note")
        let pulled = try await store.pull(DjangoNote.self, id: id)
        #expect(pulled.value == DjangoNote(id: id, title: "Ada's final note", body: "first", tags: ["a"], owner: "ada"))
        try await store.delete(pulled)
        let gone = await #expect(throws: OutpostError.self) { try await store.pull(DjangoNote.self, id: id) }
        #expect(gone?.status == 404)
        #expect(gone?.serverMessage == "No Note matches the given query.")
    }

    @Test("a 400 field map is read into OutpostError, through the entity store and through a plain client")
    func fieldErrors() async throws {
        let server = try server
        let (auth, client) = try await signedIn(server)
        let store = client.entities(.restFramework)
        let blank = await #expect(throws: OutpostError.self) { try await store.push(DjangoNote(title: "")) }
        #expect(blank?.status == 400)
        #expect(blank?.fieldErrors == ["title": ["This field may not be blank."]])
        #expect(blank?.description.contains("title: This field may not be blank.") == true)
        #expect(blank?.description.contains("..") == false)
        let repeated = await #expect(throws: OutpostError.self) { try await store.push(DjangoNote(title: "same", body: "same")) }
        #expect(repeated?.fieldErrors == ["non_field_errors": ["The body must not repeat the title."]])

        // A client with the default (Outpost) error format still reads the field map.
        let plain = OutpostClient(
            configuration: .init(baseURL: server.baseURL), transport: Self.transport,
            middlewares: [AuthMiddleware(authenticator: auth)])
        let thrown = await #expect(throws: OutpostError.self) {
            _ = try await plain.send(Request(method: .post, path: "api/notes/", body: .json(["title": "", "done": "maybe"])))
        }
        #expect(thrown?.fieldErrors == ["title": ["This field may not be blank."], "done": ["Must be a valid boolean."]])
    }

    @Test("lists: page numbers with count, cursor pages with opaque cursors, and a bare array")
    func lists() async throws {
        let server = try server
        let (_, client) = try await signedIn(server)
        let store = client.entities(.restFramework)
        var created: [Int] = []
        for index in 0..<9 { created.append(try #require(try await store.push(DjangoNote(title: "list \(index)")).id)) }

        var numbered: [Int] = []
        for try await note in store.items(ListRequest(DjangoNote.self, pageSize: 4)) { numbered.append(note.id ?? 0) }
        #expect(created.allSatisfy(numbered.contains))
        let first = try await store.page(ListRequest(DjangoNote.self, pageSize: 4))
        #expect(first.info.totalItems == numbered.count)
        #expect(first.info.numberOfPages == (numbered.count + 3) / 4)

        var cursorShape = EntityConfiguration.restFramework
        cursorShape.pagination = .restFrameworkCursor
        let cursorStore = client.entities(cursorShape)
        let cursorList = ListRequest(resourcePath: "cursor-notes", of: DjangoNote.self, pageSize: 3)
        var walked: [Int] = []
        var pages = 0
        for try await page in cursorStore.pages(cursorList) {
            walked += page.items.compactMap(\.id)
            pages += 1
        }
        #expect(walked == numbered)
        #expect(pages == (numbered.count + 2) / 3)
        let opening = try await cursorStore.page(cursorList)
        let cursor = try #require(opening.info.nextCursor)
        var resumed = cursorList
        resumed.cursor = cursor
        #expect(try await cursorStore.page(resumed).items.compactMap(\.id) == Array(numbered.dropFirst(3).prefix(3)))

        let bare = ListRequest(resourcePath: "all-notes", of: DjangoNote.self, shape: .bareArray)
        var all: [Int] = []
        for try await note in store.items(bare) { all.append(note.id ?? 0) }
        #expect(all == numbered)
        let wrongShape = await #expect(throws: OutpostError.self) {
            _ = try await store.page(ListRequest(resourcePath: "all-notes", of: DjangoNote.self))
        }
        #expect(wrongShape?.suggestion?.contains(".bareArray") == true)
    }

    @Test("every grant: authorization code + PKCE, password, client credentials, device code; discovery invents nothing")
    func grants() async throws {
        let server = try server
        let browser = TestBrowser()
        do {
            try await grants(server, browser: browser)
        } catch {
            try? await browser.shutdown()
            throw error
        }
        try await browser.shutdown()
    }

    func grants(_ server: DjangoServer, browser: TestBrowser) async throws {
        let django = DjangoBrowser(browser: browser, server: server)
        let authClient = authClient(server)
        let seen = Mutexed<[String]>([])
        let observer = ClosureMiddleware { request, body, _, next in
            let response = try await next(request, body)
            seen.mutate { $0.append("\(request.path ?? "") \(response.status)") }
            return response
        }
        let metadata = try await Endpoints.discover(issuer: server.baseURL, client: authClient)
        #expect(metadata.token == server.baseURL.appendingPathComponent("o/token/"))
        #expect(metadata.deviceAuthorization == nil)  // DOT does not list it, and nothing is made up
        #expect(metadata.providerLogin == nil)

        // Authorization code + PKCE, through the loopback listener.
        var browserConfiguration = Authenticator.Configuration(
            registration: ClientRegistration(
                clientID: "interop-browser", redirectURI: URL(string: "http://127.0.0.1/callback"), scopes: ["read", "write"]),
            endpoints: metadata, browser: django, middlewares: [observer])
        browserConfiguration.browserTimeout = .seconds(60)
        let browserAuth = Authenticator(configuration: browserConfiguration, client: authClient)
        let code = try await browserAuth.signInWithBrowser()
        #expect(code.refreshToken != nil)
        #expect(code.scopes == ["read", "write"])
        #expect(seen.value.contains("/o/token/ 200"))
        let api = apiClient(server, middlewares: [AuthMiddleware(authenticator: browserAuth)])
        #expect(try await api.entities(.restFramework).push(DjangoNote(title: "by code")).owner == server.username)

        // Client credentials: the application signs in as itself (and may read).
        let service = Authenticator(
            configuration: .init(
                registration: ClientRegistration(
                    clientID: "interop-service", clientSecret: server.secrets["interop-service"], scopes: ["read"]),
                endpoints: metadata),
            client: authClient)
        let serviceCredential = try await service.signInWithClientCredentials()
        #expect(serviceCredential.refreshToken == nil)
        let reader = apiClient(server, middlewares: [AuthMiddleware(authenticator: service)])
        _ = try await reader.entities(.restFramework).page(ListRequest(DjangoNote.self))

        // Device code, with the device endpoint given as a discovery override.
        let device = try await Authenticator.discover(
            issuer: server.baseURL, client: authClient,
            registration: ClientRegistration(clientID: "interop-device", scopes: ["read", "write"]),
            overrides: Endpoints.Overrides(deviceAuthorization: server.baseURL.appendingPathComponent("o/device-authorization/")))
        let approval = Mutexed<String?>(nil)
        let deviceCredential = try await device.signInWithDeviceCode { code in
            do {
                try await django.approve(code)
            } catch {
                approval.mutate { $0 = "\(error)" }
            }
        }
        #expect(approval.value == nil)
        #expect(deviceCredential.refreshToken != nil)

        // Password grant (with a client secret, through discovery).
        let (_, passwordClient) = try await signedIn(server)
        _ = try await passwordClient.entities(.restFramework).push(DjangoNote(title: "by password"))
    }

    @Test("refresh rotates the refresh token, the old one is refused, and revoked tokens stop working")
    func refreshAndRevocation() async throws {
        let server = try server
        let (auth, client) = try await signedIn(server)
        let first = try #require(try await auth.credential())
        let second = try await auth.refresh()
        #expect(second.accessToken != first.accessToken)
        #expect(second.refreshToken != first.refreshToken)
        _ = try await client.entities(.restFramework).push(DjangoNote(title: "after refresh"))

        // The spent refresh token is refused.
        let store = InMemoryCredentialStore()
        await store.save(first, account: "interop-password")
        let replay = Authenticator(
            configuration: .init(
                registration: ClientRegistration(clientID: "interop-password", clientSecret: server.secrets["interop-password"]),
                endpoints: auth.configuration.endpoints, store: store),
            client: authClient(server))
        let refused = await #expect(throws: AuthError.self) { try await replay.refresh() }
        #expect(refused?.code == .invalidGrant)

        // Sign-out revokes at the server: the old access token no longer opens the API.
        let (fresh, _) = try await signedIn(server)
        let token = try #require(try await fresh.credential()).accessToken
        try await fresh.signOut()
        let bearer = apiClient(server, middlewares: [HeaderMiddleware([.authorization: "Bearer \(token)"])])
        let revoked = await #expect(throws: OutpostError.self) {
            _ = try await bearer.entities(.restFramework).push(DjangoNote(title: "revoked"))
        }
        #expect(revoked?.code == .unauthorized)
    }
}

/// A value shared by concurrent closures of one test.
final class Mutexed<Value: Sendable>: Sendable {
    private let storage: Mutex<Value>
    init(_ value: Value) { storage = Mutex(value) }
    var value: Value { storage.withLock { $0 } }
    func mutate(_ body: (inout Value) -> Void) { storage.withLock { body(&$0) } }
}
