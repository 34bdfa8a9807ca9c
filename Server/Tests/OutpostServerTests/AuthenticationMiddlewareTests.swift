import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
@_spi(OutpostInternal) import OutpostCore
import OutpostTestSupport
import Synchronization
import Testing

@testable import OutpostServer

/// ``AuthenticationMiddleware`` and ``RequireCallerMiddleware`` on Hummingbird's own test client, with
/// tokens in a real SQLite database.
@Suite("Router middlewares: authentication and the caller on the request context", .closesWhatItOpens)
struct AuthenticationMiddlewareTests {
    static let quiet = ErrorMiddlewareTests.quiet

    static func enveloped(_ register: (Router<OutpostRequestContext>) -> Void) -> Router<OutpostRequestContext> {
        ErrorMiddlewareTests.enveloped(register)
    }

    static func json(_ response: TestResponse) throws -> JSONValue { try ErrorMiddlewareTests.json(response) }

    /// An `AuthService` on a fresh SQLite database holding one access token per scope set.
    static func withAuth(
        tokens: [String: (userID: String?, scope: String)],
        _ body: (AuthService) async throws -> Void
    ) async throws {
        try await StorageConformanceTests().withStorage(.sqlite) { storage, _ in
            for (token, owner) in tokens {
                try await storage.saveToken(
                    StoredToken(
                        hash: Secrets.hash(token), kind: .access, userID: owner.userID, clientID: "client-1",
                        scope: owner.scope, family: "family-\(token)", expiresAt: AuthService.now() + 600_000,
                        state: "active"))
            }
            let auth = try await AuthService.make(
                storage: storage, configuration: AuthConfiguration(), providers: [:],
                publicBase: PublicBase(configuration: ServerConfiguration(port: 0)), logger: Self.quiet)
            try await body(auth)
        }
    }

    static func describe(_ caller: AuthenticatedCaller?) -> JSONValue {
        guard let caller else { return ["anonymous": true] }
        return [
            "user": caller.userID.map(JSONValue.string) ?? .null, "client": .string(caller.clientID),
            "scope": .string(caller.scope),
        ]
    }

    @Test("the authentication middleware sets the caller on the context; refusals reach the route where it reads the caller")
    func authenticationSetsCaller() async throws {
        try await Self.withAuth(tokens: ["opa_reader": ("u_ada", "records:read")]) { auth in
            let router = Self.enveloped { router in
                let signedIn = router.group().add(middleware: AuthenticationMiddleware(auth: auth))
                signedIn.get("/whoami") { _, context in Response.json(Self.describe(try context.caller)) }
                signedIn.get("/write") { _, context in
                    Response.json(Self.describe(try context.caller(requiring: Scope.recordsWrite)))
                }
                // Checks of its own come first: the token is only judged where the route reads it.
                signedIn.get("/checked/{n}") { _, context in
                    guard context.parameters.get("n") == "1" else { throw ServerError.badRequest("invalid_n", "n must be 1") }
                    return Response.json(Self.describe(try context.caller))
                }
                let plugins = router.group().add(middleware: AuthenticationMiddleware(auth: auth, otherSchemes: .leftToRoute))
                plugins.get("/plugin") { _, context in Response.json(Self.describe(try context.caller)) }
                router.get("/forgotten") { _, context in Response.json(Self.describe(try context.caller)) }
            }
            try await Application(router: router, logger: Self.quiet).test(.router) { client in
                let bearer: HTTPFields = [.authorization: "Bearer opa_reader"]
                let known = try await client.execute(uri: "/whoami", method: .get, headers: bearer)
                #expect(known.status == .ok)
                #expect(try Self.json(known) == ["user": "u_ada", "client": "client-1", "scope": "records:read"])

                let anonymous = try await client.execute(uri: "/whoami", method: .get)
                #expect(try Self.json(anonymous) == ["anonymous": true])

                let invalid = try await client.execute(uri: "/whoami", method: .get, headers: [.authorization: "Bearer opa_nope"])
                #expect(invalid.status == .unauthorized)
                #expect(invalid.headers[.wwwAuthenticate] == "Bearer error=\"invalid_token\"")
                #expect(try Self.json(invalid)["error"]?["code"] == "invalid_token")

                let basic = try await client.execute(uri: "/whoami", method: .get, headers: [.authorization: "Basic YTpi"])
                #expect(basic.status == .unauthorized)

                let inQuery = try await client.execute(uri: "/whoami?access_token=opa_reader", method: .get)
                #expect(inQuery.status == .badRequest)
                #expect(inQuery.headers[.wwwAuthenticate] == "Bearer error=\"invalid_request\"")

                let lacksScope = try await client.execute(uri: "/write", method: .get, headers: bearer)
                #expect(lacksScope.status == .forbidden)
                #expect(lacksScope.headers[.wwwAuthenticate] == "Bearer error=\"insufficient_scope\", scope=\"records:write\"")
                #expect(try Self.json(lacksScope)["error"]?["code"] == "insufficient_scope")

                let badPath = try await client.execute(
                    uri: "/checked/2", method: .get, headers: [.authorization: "Bearer opa_nope"])
                #expect(badPath.status == .badRequest, "the route's own check answers before the refused token")
                let goodPath = try await client.execute(
                    uri: "/checked/1", method: .get, headers: [.authorization: "Bearer opa_nope"])
                #expect(goodPath.status == .unauthorized)

                // Plugin routes leave other schemes (and then the query) to the plugin; a bearer token is still checked.
                let pluginBasic = try await client.execute(uri: "/plugin", method: .get, headers: [.authorization: "Basic YTpi"])
                #expect(try Self.json(pluginBasic) == ["anonymous": true])
                let pluginBearer = try await client.execute(uri: "/plugin", method: .get, headers: bearer)
                #expect(try Self.json(pluginBearer)["user"] == "u_ada")
                let pluginInvalid = try await client.execute(
                    uri: "/plugin", method: .get, headers: [.authorization: "Bearer opa_nope"])
                #expect(pluginInvalid.status == .unauthorized)

                // A route without the middleware that reads the caller is a server mistake, never "anonymous".
                let forgotten = try await client.execute(uri: "/forgotten", method: .get, headers: bearer)
                #expect(forgotten.status == .internalServerError)
                #expect(try Self.json(forgotten)["error"]?["code"] == "internal_error")
            }
        }
    }

    @Test("a request without a valid token, or whose token lacks the scope, never reaches a protected route")
    func protectedRoute() async throws {
        let reached = Atomic<Int>(0)
        try await Self.withAuth(tokens: ["opa_profile": ("u_ada", "profile"), "opa_records": ("u_ada", "records:read")]) {
            auth in
            let router = Self.enveloped { router in
                router.group().add(middleware: AuthenticationMiddleware(auth: auth))
                    .add(middleware: RequireCallerMiddleware(scope: Scope.profile))
                    .get("/profile") { _, context in
                        reached.add(1, ordering: .relaxed)
                        return Response.json(Self.describe(try context.requireCaller()))
                    }
            }
            try await Application(router: router, logger: Self.quiet).test(.router) { client in
                let anonymous = try await client.execute(uri: "/profile", method: .get)
                #expect(anonymous.status == .unauthorized)
                // No credentials at all: a challenge without an error code (RFC 6750 §3.1).
                #expect(anonymous.headers[.wwwAuthenticate] == "Bearer")
                #expect(try Self.json(anonymous)["error"]?["code"] == "sign_in_required")
                let invalid = try await client.execute(uri: "/profile", method: .get, headers: [.authorization: "Bearer opa_x"])
                #expect(invalid.status == .unauthorized)
                #expect(invalid.headers[.wwwAuthenticate] == "Bearer error=\"invalid_token\"")
                let wrongScope = try await client.execute(
                    uri: "/profile", method: .get, headers: [.authorization: "Bearer opa_records"])
                #expect(wrongScope.status == .forbidden)
                #expect(try Self.json(wrongScope)["error"]?["code"] == "insufficient_scope")
                #expect(reached.load(ordering: .relaxed) == 0, "refused requests never run the handler")

                let allowed = try await client.execute(
                    uri: "/profile", method: .get, headers: [.authorization: "Bearer opa_profile"])
                #expect(allowed.status == .ok)
                #expect(try Self.json(allowed)["scope"] == "profile")
                #expect(reached.load(ordering: .relaxed) == 1)
            }
        }
    }
}
