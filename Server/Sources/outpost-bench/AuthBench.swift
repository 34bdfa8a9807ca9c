import Foundation
import HTTPTypes
import Logging
import Outpost
import OutpostServer
import OutpostServerTesting
@_spi(OutpostInternal) import OutpostSupport
import Synchronization

/// Sign-in figures: what `AuthMiddleware` costs per request (the same GETs with and without it,
/// on one live loopback server, rounds interleaved), and the single-flight refresh: many concurrent
/// requests holding an expired token, and how many refreshes reach the token endpoint.
enum AuthBench {
    static func run(_ options: BenchOptions) async throws -> [BenchResult] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-authbench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("auth.sqlite").path
        var quiet = Logger(label: "outpost.bench")
        quiet.logLevel = .critical
        let server = try OutpostServer.bench(
            configuration: ServerConfiguration(
                port: 0, databasePath: path, logger: quiet, auth: AuthConfiguration(passwordCost: 4)))
        let running = try await server.start()

        let counting = TokenCallCounter(AsyncHTTPClientTransport())
        let plain = OutpostClient(configuration: .init(baseURL: running.baseURL), ownedTransport: counting)
        _ = try await plain.send(.post("/users", json: ["username": "bench", "password": "bench-password"]))
        let registrar = try await SQLiteStorage.open(path: path, logger: quiet)
        _ = try await registrar.registerClient(
            name: "Bench (password)", redirectURIs: [], grants: ["password", "refresh_token"],
            scopes: ["records:read", "records:write", "profile"],
            confidential: false, id: OutpostServer.cliPasswordClientID)
        try await registrar.close()
        let auth = Authenticator(
            configuration: .init(
                registration: ClientRegistration(
                    clientID: OutpostServer.cliPasswordClientID, scopes: ["records:read", "records:write", "profile"]),
                endpoints: .outpost(base: running.baseURL)),
            client: plain)
        _ = try await auth.signIn(username: "bench", password: "bench-password")
        let signed = OutpostClient(
            configuration: plain.configuration, transport: counting, middlewares: [AuthMiddleware(authenticator: auth)])

        // The same small route both ways; only the middleware differs.
        let rounds = options.quick ? 3 : 10
        let perRound = options.quick ? 200 : 1_000
        var withAuth: [Double] = []
        var without: [Double] = []
        for _ in 0..<rounds {
            without.append(try await rate(perRound) { _ = try await plain.send(.get("/health")) })
            withAuth.append(try await rate(perRound) { _ = try await signed.send(.get("/health")) })
        }

        // Single flight: expire every access token at the server, then fire concurrent requests.
        let concurrent = options.quick ? 50 : 200
        let admin = try await SQLiteStorage.open(path: path, logger: quiet)
        try await admin.expireAccessTokens()
        try await admin.close()
        let before = counting.tokenCalls
        let clock = ContinuousClock()
        let started = clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<concurrent { group.addTask { _ = try await signed.send(.get("/me")) } }
            try await group.waitForAll()
        }
        let elapsed = clock.now - started
        let refreshes = counting.tokenCalls - before

        try await signed.shutdown()
        try await plain.shutdown()
        await running.stop()
        return [
            BenchResult(
                name: "auth: GET /health with AuthMiddleware (c=1)", value: median(withAuth), unit: "req/s",
                baseline: "same requests without it", baselineValue: median(without)),
            BenchResult(
                name: "auth: refreshes for \(concurrent) concurrent requests with an expired token", value: Double(refreshes),
                unit: "refreshes"),
            BenchResult(
                name: "auth: time for those \(concurrent) requests, refresh included", value: elapsed.inSeconds * 1000, unit: "ms"
            ),
        ]
    }

    static func rate(_ count: Int, _ body: () async throws -> Void) async throws -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        for _ in 0..<count { try await body() }
        return Double(count) / (clock.now - start).inSeconds
    }
}

/// Counts requests to the token endpoint.
final class TokenCallCounter: ClientTransport {
    let inner: any ClientTransport
    private let count = Mutex(0)

    init(_ inner: any ClientTransport) { self.inner = inner }

    var tokenCalls: Int { count.withLock { $0 } }

    func send(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> (HTTPResponse, Data) {
        if request.path?.hasPrefix("/oauth/token") == true { count.withLock { $0 += 1 } }
        return try await inner.send(request, body: body, options: options)
    }

    func shutdown() async throws { try await inner.shutdown() }
}
