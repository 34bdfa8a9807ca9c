import Foundation
import HTTPTypes
import Logging
@_spi(OutpostInternal) import OutpostCore
import OutpostTesting
import Testing

@testable import OutpostAuth

@Suite("Credential scope")
struct CredentialScopeTests {
    static func setUp(
        base: String, trusted: [URL] = [], policy: AuthMiddleware.CrossOriginPolicy = .refuse
    ) async throws -> (OutpostClient, ScriptedTransport) {
        let transport = authServer { _ in .json(200, ["ok": true]) }
        let store = InMemoryCredentialStore()
        await store.save(Credential(accessToken: "secret-token"), account: "cli")
        let auth = makeAuthenticator(transport, store: store)
        var configuration = OutpostClient.Configuration(baseURL: URL(string: base)!, retry: .none)
        configuration.logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let middleware = AuthMiddleware(authenticator: auth, trustedOrigins: trusted, crossOriginPolicy: policy)
        return (OutpostClient(configuration: configuration, transport: transport, middlewares: [middleware]), transport)
    }

    @Test(
        "the base URL's origin gets the token, over https or on the loopback",
        arguments: [
            "https://api.test/v1", "http://127.0.0.1:8080", "http://localhost:9", "http://[::1]:8080",
        ])
    func sameOrigin(_ base: String) async throws {
        let (client, transport) = try await Self.setUp(base: base)
        _ = try await client.send(.get("/me"))
        _ = try await client.send(.get(base + "/absolute"))
        #expect(transport.requests.map { $0.header(.authorization) } == ["Bearer secret-token", "Bearer secret-token"])
    }

    @Test(
        "another host, another port, or a downgrade to http is refused before anything is sent",
        arguments: [
            "https://evil.test/steal", "https://api.test:8443/x", "http://api.test/x",
        ])
    func refused(_ url: String) async throws {
        let (client, transport) = try await Self.setUp(base: "https://api.test/v1")
        let error = try await #require(throws: OutpostError.self) { try await client.send(.get(url)) }
        #expect(error.code == .untrustedDestination)
        #expect(error.description.contains("not sent"))
        #expect(!error.description.contains("secret-token"))
        #expect(transport.requests.isEmpty)
    }

    @Test("with .sendUnsigned, another origin gets the request without the token")
    func unsignedPolicy() async throws {
        let (client, transport) = try await Self.setUp(base: "https://api.test", policy: .sendUnsigned)
        _ = try await client.send(.get("https://cdn.test/next?page=2"))
        #expect(transport.requests.count == 1)
        #expect(transport.requests.first?.header(.authorization) == nil)
    }

    @Test("a trusted origin gets the token; a trusted plain-http host off the loopback does not")
    func trusted() async throws {
        let (client, transport) = try await Self.setUp(
            base: "https://api.test", trusted: [URL(string: "https://files.test")!, URL(string: "http://plain.test")!],
            policy: .sendUnsigned)
        _ = try await client.send(.get("https://files.test/a"))
        #expect(transport.requests.last?.header(.authorization) == "Bearer secret-token")
        let error = try await #require(throws: OutpostError.self) { try await client.send(.get("http://plain.test/a")) }
        #expect(error.code == .untrustedDestination)
    }

    @Test("a plain-http base URL off the loopback never carries the token")
    func plainHTTPBase() async throws {
        let (client, transport) = try await Self.setUp(base: "http://api.test")
        let error = try await #require(throws: OutpostError.self) { try await client.send(.get("/me")) }
        #expect(error.code == .untrustedDestination)
        #expect(error.suggestion?.contains("https") == true)
        #expect(transport.requests.isEmpty)
    }
}

@Suite("Authenticator credential replacement")
struct SetCredentialTests {
    @Test("setCredential is used by the next request; nil makes requests go unsigned")
    func replaces() async throws {
        let server = TokenServer(valid: ["at-0", "given"])
        let (client, auth, transport) = try await MiddlewareTests.setUp(
            server: server, credential: Credential(accessToken: "at-0", expiresAt: Date().addingTimeInterval(3600)))
        _ = try await client.send(.get("/me"))
        try await auth.setCredential(Credential(accessToken: "given"))
        _ = try await client.send(.get("/me"))
        try await auth.setCredential(nil)
        await #expect(throws: OutpostError.self) { try await client.send(.get("/me")) }
        #expect(
            transport.requests.map { $0.header(.authorization) } == ["Bearer at-0", "Bearer given", nil])
        #expect(try await auth.configuration.store.load(account: "cli") == nil)
    }

    @Test("completion-handler forms report the result")
    func completion() async throws {
        let server = TokenServer()
        let transport = authServer { try await server.handle($0) }
        let auth = makeAuthenticator(transport)
        let signedIn = await withCheckedContinuation { continuation in
            auth.signIn(username: "ada", password: "pw") { continuation.resume(returning: $0) }
        }
        #expect(try signedIn.get().accessToken == "at-1")
        let current = await withCheckedContinuation { continuation in
            auth.credential { continuation.resume(returning: $0) }
        }
        #expect(try current.get()?.accessToken == "at-1")
        let refreshed = await withCheckedContinuation { continuation in
            auth.refresh { continuation.resume(returning: $0) }
        }
        #expect(try refreshed.get().accessToken == "at-2")
    }

    @Test("auth logs nothing above info, even when things fail")
    func logLevels() async throws {
        let lines = Box<[String]>([])
        let logger = Logger(label: "test") { _ in RecordingLogHandler(lines: lines) }
        let transport = authServer { _ in .oauthError("invalid_grant") }
        let store = InMemoryCredentialStore()
        await store.save(
            Credential(accessToken: "old", refreshToken: "rt", expiresAt: Date().addingTimeInterval(-1)), account: "cli")
        let auth = makeAuthenticator(transport, store: store, logger: logger)
        let client = makeClient(transport, logger: logger, middlewares: [AuthMiddleware(authenticator: auth)])
        await #expect(throws: (any Error).self) { try await client.send(.get("/me")) }
        await #expect(throws: AuthError.self) { try await auth.signIn(username: "a", password: "b") }
        #expect(!lines.value.isEmpty)
        for line in lines.value {
            #expect(["trace", "debug", "info"].contains(String(line.prefix { $0 != " " })), "\(line)")
        }
    }
}
