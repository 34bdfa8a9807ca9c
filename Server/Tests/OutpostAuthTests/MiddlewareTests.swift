import Foundation
import HTTPTypes
import Logging
@_spi(OutpostInternal) import OutpostCore
import OutpostTesting
import Testing

@testable import OutpostAuth

/// A server with a token endpoint that issues `at-N`/`rt-N` (rotating) and a `/me` that accepts
/// only the newest, unexpired access token.
final class TokenServer: Sendable {
    let issued = Box(0)
    let valid = Box<Set<String>>([])
    let refreshDelay: Duration
    let expiresIn: Int

    init(valid: Set<String> = [], refreshDelay: Duration = .milliseconds(20), expiresIn: Int = 3600) {
        self.valid.mutate { $0 = valid }
        self.refreshDelay = refreshDelay
        self.expiresIn = expiresIn
    }

    func handle(_ request: Recorded) async throws -> Reply {
        switch request.path {
        case "/oauth/revoke":
            return Reply(status: 200, body: Data())
        case "/oauth/token":
            try await Task.sleep(for: refreshDelay)
            let number = issued.mutate {
                $0 += 1; return $0
            }
            valid.mutate { $0.insert("at-\(number)") }
            return .token("at-\(number)", refresh: "rt-\(number)", expiresIn: expiresIn)
        default:
            let token =
                request.header(.authorization).map { String($0.dropFirst("Bearer ".count)) } ?? request.query["access_token"]
            guard let token, valid.value.contains(token) else {
                return .json(
                    401, ["error": ["code": "unauthorized", "message": "invalid_token"]],
                    headers: ["WWW-Authenticate": "Bearer error=\"invalid_token\""])
            }
            return .json(200, ["id": "u1", "token": .string(token)])
        }
    }
}

@Suite("Auth middleware")
struct MiddlewareTests {
    static func setUp(
        server: TokenServer, credential: Credential?, store: any CredentialStore = InMemoryCredentialStore(),
        placement: AuthMiddleware.Placement = .authorizationHeader, logger: Logger? = nil
    ) async throws -> (OutpostClient, Authenticator, ScriptedTransport) {
        let transport = authServer { try await server.handle($0) }
        if let credential { try await store.save(credential, account: "cli") }
        let auth = makeAuthenticator(transport, store: store, logger: logger)
        let client = makeClient(
            transport, logger: logger, middlewares: [AuthMiddleware(authenticator: auth, placement: placement)])
        return (client, auth, transport)
    }

    @Test("attaches the token in the Authorization header")
    func header() async throws {
        let (client, _, transport) = try await Self.setUp(
            server: TokenServer(valid: ["at-0"]),
            credential: Credential(accessToken: "at-0", expiresAt: Date().addingTimeInterval(3600)))
        let reply = try await client.send(.get("/me")).json()
        #expect(reply["token"] == "at-0")
        #expect(transport.requests.first?.header(.authorization) == "Bearer at-0")
    }

    @Test("attaches the token as an access_token query parameter, keeping the request's own query")
    func query() async throws {
        let (client, _, transport) = try await Self.setUp(
            server: TokenServer(valid: ["at+0"]), credential: Credential(accessToken: "at+0"),
            placement: .queryParameter("access_token"))
        _ = try await client.send(.get("/me", query: [URLQueryItem(name: "page", value: "2")]))
        let request = try #require(transport.requests.first)
        #expect(request.query == ["page": "2", "access_token": "at+0"])
        #expect(request.header(.authorization) == nil)
    }

    @Test("no credential: the request goes out unsigned")
    func unsigned() async throws {
        let (client, _, transport) = try await Self.setUp(server: TokenServer(), credential: nil)
        await #expect(throws: OutpostError.self) { try await client.send(.get("/me")) }
        #expect(transport.requests.count == 1)
        #expect(transport.requests.first?.header(.authorization) == nil)
    }

    @Test("refreshes ahead of expiry, within the margin")
    func ahead() async throws {
        let server = TokenServer(valid: ["at-0"])
        let (client, _, transport) = try await Self.setUp(
            server: server,
            credential: Credential(accessToken: "at-0", refreshToken: "rt-0", expiresAt: Date().addingTimeInterval(30)))
        let reply = try await client.send(.get("/me")).json()
        #expect(reply["token"] == "at-1")
        #expect(transport.count(path: "/oauth/token") == 1)
        #expect(transport.requests.map(\.path) == ["/oauth/token", "/me"])
        _ = try await client.send(.get("/me"))
        #expect(transport.count(path: "/oauth/token") == 1)
    }

    @Test("a 401 causes one refresh and one retry; a second 401 goes to the caller")
    func retryOn401() async throws {
        let server = TokenServer(valid: [])  // at-0 was revoked server-side
        let (client, _, transport) = try await Self.setUp(
            server: server,
            credential: Credential(accessToken: "at-0", refreshToken: "rt-0", expiresAt: Date().addingTimeInterval(3600)))
        let reply = try await client.send(.get("/me")).json()
        #expect(reply["token"] == "at-1")
        #expect(transport.requests.map(\.path) == ["/me", "/oauth/token", "/me"])

        // Now the server refuses everything: one refresh, one retry, then the 401.
        let refusing = authServer { request in
            request.path == "/oauth/token"
                ? .token("at-x", refresh: "rt-x") : .json(401, ["error": ["code": "unauthorized", "message": "no"]])
        }
        let store = InMemoryCredentialStore()
        await store.save(Credential(accessToken: "a", refreshToken: "r"), account: "cli")
        let auth = makeAuthenticator(refusing, store: store)
        let strict = makeClient(refusing, middlewares: [AuthMiddleware(authenticator: auth)])
        let thrown = await #expect(throws: OutpostError.self) { try await strict.send(.get("/me")) }
        #expect(thrown?.code == .unauthorized)
        #expect(refusing.requests.map(\.path) == ["/me", "/oauth/token", "/me"])
    }

    @Test("a dead refresh token: the 401 goes to the caller as unauthorized, the credential is removed")
    func deadRefreshToken() async throws {
        let transport = authServer { request in
            request.path == "/oauth/token"
                ? .oauthError("invalid_grant") : .json(401, ["error": ["code": "unauthorized", "message": "no"]])
        }
        let store = InMemoryCredentialStore()
        await store.save(
            Credential(accessToken: "a", refreshToken: "r", expiresAt: Date().addingTimeInterval(-5)), account: "cli")
        let auth = makeAuthenticator(transport, store: store)
        let client = makeClient(transport, middlewares: [AuthMiddleware(authenticator: auth)])
        let thrown = await #expect(throws: OutpostError.self) { try await client.send(.get("/me")) }
        #expect(thrown?.code == .unauthorized)
        #expect((thrown?.underlying as? AuthError)?.code == .invalidGrant)
        #expect(await store.load(account: "cli") == nil)
    }

    @Test("200 concurrent requests holding an expired token cause exactly one refresh")
    func singleFlight() async throws {
        let server = TokenServer(valid: ["at-0"], refreshDelay: .milliseconds(50))
        let (client, _, transport) = try await Self.setUp(
            server: server,
            credential: Credential(accessToken: "at-0", refreshToken: "rt-0", expiresAt: Date().addingTimeInterval(-10)))
        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<200 { group.addTask { try await client.send(.get("/me")).json()["token"]?.stringValue ?? "" } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(transport.count(path: "/oauth/token") == 1)
        #expect(tokens == ["at-1"])
        #expect(transport.count(path: "/me") == 200)
    }

    @Test("200 concurrent requests whose token is refused (401) share one refresh too")
    func singleFlightOn401() async throws {
        let server = TokenServer(valid: [], refreshDelay: .milliseconds(50))
        let (client, _, transport) = try await Self.setUp(
            server: server,
            credential: Credential(accessToken: "at-0", refreshToken: "rt-0", expiresAt: Date().addingTimeInterval(3600)))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<200 { group.addTask { _ = try await client.send(.get("/me")) } }
            try await group.waitForAll()
        }
        #expect(transport.count(path: "/oauth/token") == 1)
    }

    @Test("two processes sharing one file store: one refresh in all, the second takes the first's credential")
    func twoProcesses() async throws {
        let file = FileStoreTests.temporaryFile()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent().deletingLastPathComponent()) }
        try await FileCredentialStore(fileURL: file).save(
            Credential(accessToken: "at-0", refreshToken: "rt-0", expiresAt: Date().addingTimeInterval(-10)), account: "cli")
        let server = TokenServer(valid: ["at-0"], refreshDelay: .milliseconds(100))
        // Two independent authenticators, each with its own store instance (own descriptors), as two processes.
        let (firstClient, firstAuth, firstTransport) = try await Self.setUp(
            server: server, credential: nil, store: FileCredentialStore(fileURL: file))
        let (secondClient, secondAuth, secondTransport) = try await Self.setUp(
            server: server, credential: nil, store: FileCredentialStore(fileURL: file))
        // Both load the expired credential first, as two running processes would have.
        #expect(try await firstAuth.credential()?.accessToken == "at-0")
        #expect(try await secondAuth.credential()?.accessToken == "at-0")
        async let first = firstClient.send(.get("/me")).json()
        async let second = secondClient.send(.get("/me")).json()
        let replies = try await [first, second]
        #expect(server.issued.value == 1)
        #expect(firstTransport.count(path: "/oauth/token") + secondTransport.count(path: "/oauth/token") == 1)
        #expect(replies.map { $0["token"] } == ["at-1", "at-1"])
        #expect(try await FileCredentialStore(fileURL: file).load(account: "cli")?.refreshToken == "rt-1")
    }

    @Test("no token, password, code, verifier or secret appears in the logs, at any level")
    func noSecretsInLogs() async throws {
        let lines = Box<[String]>([])
        var logger = Logger(label: "test") { _ in RecordingLogHandler(lines: lines) }
        logger.logLevel = .trace
        let server = TokenServer(valid: [])
        let (client, auth, _) = try await Self.setUp(
            server: server,
            credential: Credential(accessToken: "at-0", refreshToken: "rt-0", expiresAt: Date().addingTimeInterval(-10)),
            placement: .queryParameter("access_token"), logger: logger)
        _ = try await client.send(.get("/me"))  // refresh ahead of expiry, token in the query
        server.valid.mutate { $0.removeAll() }
        _ = try await client.send(.get("/me"))  // 401, refresh, retry
        try await auth.signIn(username: "ana", password: "hunter2-password")
        let request = try await auth.authorizationRequest()
        try await auth.completeAuthorization(
            from: URL(string: "myapp://oauth/callback?code=code-secret-9&state=\(request.state)")!)
        _ = try? await auth.completeAuthorization(from: URL(string: "myapp://oauth/callback?code=code-secret-9&state=forged")!)
        try await auth.signOut()
        let secrets =
            [
                "at-0", "rt-0", "at-1", "rt-1", "at-2", "rt-2", "at-3", "rt-3", "at-4", "rt-4", "hunter2", "code-secret",
                request.state,
            ]
            + [request.pkce?.verifier ?? "verifier"]
        let text = lines.value.joined(separator: "\n")
        #expect(lines.value.count > 5)
        for secret in secrets { #expect(!text.contains(secret), "\(secret) leaked") }
    }
}
