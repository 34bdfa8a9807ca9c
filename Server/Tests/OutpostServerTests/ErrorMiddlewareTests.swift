import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
@_spi(OutpostInternal) import OutpostCore
import OutpostTestSupport
import Testing

@testable import OutpostServer

/// The server's error middlewares on Hummingbird's own test client (`.router`: the whole
/// application responder, no socket): the error envelope and RFC 6749 answers.
@Suite("Router middlewares: the error envelope and RFC 6749 answers", .closesWhatItOpens)
struct ErrorMiddlewareTests {
    static let quiet: Logger = {
        var logger = Logger(label: "outpost.test.middleware")
        logger.logLevel = .critical
        return logger
    }()

    struct Unexpected: Error {}

    /// A router with the server's first two middlewares, as `OutpostServer.makeRouter` adds them.
    static func enveloped(_ register: (Router<OutpostRequestContext>) -> Void) -> Router<OutpostRequestContext> {
        let router = Router(context: OutpostRequestContext.self, options: .autoGenerateHeadEndpoints)
        let routes = RouteTableReference()
        router.add(middleware: AccessLogMiddleware(logger: quiet))
        router.add(middleware: ErrorEnvelopeMiddleware(routes: routes, logger: quiet))
        register(router)
        routes.fill(from: router, generatesHead: true)
        return router
    }

    static func json(_ response: TestResponse) throws -> JSONValue {
        try JSONValue(parsing: Data(response.body.readableBytesView))
    }

    @Test("a thrown ServerError is an HTTPResponseError: Hummingbird's router alone renders the envelope")
    func serverErrorRendersItself() async throws {
        // No Outpost middleware at all: only Hummingbird's HTTPResponseError handling.
        let router = Router(context: OutpostRequestContext.self)
        router.get("/busy") { _, _ -> Response in
            throw ServerError(
                .serviceUnavailable, code: "storage_busy", message: "The database is busy; retry",
                details: ["table": "records"], headers: [.retryAfter: "2"])
        }
        try await Application(router: router, logger: Self.quiet).test(.router) { client in
            let response = try await client.execute(uri: "/busy", method: .get)
            #expect(response.status == .serviceUnavailable)
            #expect(response.headers[.retryAfter] == "2")
            #expect(response.headers[.contentType] == "application/json")
            #expect(
                try Self.json(response)
                    == [
                        "error": [
                            "code": "storage_busy", "message": "The database is busy; retry", "details": ["table": "records"],
                        ]
                    ])
        }
    }

    @Test("the envelope middleware renders Hummingbird's errors, unknown routes, wrong methods and other failures")
    func envelope() async throws {
        let router = Self.enveloped { router in
            router.get("/unauthorized") { _, _ -> Response in
                throw ServerError(
                    .unauthorized, code: "invalid_token", message: "Sign in", headers: [.wwwAuthenticate: "Bearer"])
            }
            router.get("/hummingbird") { _, _ -> Response in throw HTTPError(.badRequest, message: "Not like that") }
            router.get("/crash") { _, _ -> Response in throw Unexpected() }
            router.get("/empty") { _, _ in Response(status: .conflict) }
        }
        try await Application(router: router, logger: Self.quiet).test(.router) { client in
            let unauthorized = try await client.execute(uri: "/unauthorized", method: .get)
            #expect(unauthorized.status == .unauthorized)
            #expect(unauthorized.headers[.wwwAuthenticate] == "Bearer")
            #expect(try Self.json(unauthorized) == ["error": ["code": "invalid_token", "message": "Sign in"]])

            let hummingbird = try await client.execute(uri: "/hummingbird", method: .get)
            #expect(hummingbird.status == .badRequest)
            #expect(try Self.json(hummingbird) == ["error": ["code": "bad_request", "message": "Not like that"]])

            let crash = try await client.execute(uri: "/crash", method: .get)
            #expect(crash.status == .internalServerError)
            #expect(try Self.json(crash)["error"]?["code"] == "internal_error")
            #expect(try Self.json(crash)["error"]?["message"]?.stringValue?.contains("Unexpected") == false)

            let empty = try await client.execute(uri: "/empty", method: .get)
            #expect(empty.status == .conflict)
            #expect(try Self.json(empty)["error"]?["code"] == "conflict")

            let unknown = try await client.execute(uri: "/nowhere", method: .get)
            #expect(unknown.status == .notFound)
            #expect(try Self.json(unknown)["error"]?["code"] == "route_not_found")

            let wrongMethod = try await client.execute(uri: "/crash", method: .delete)
            #expect(wrongMethod.status == .methodNotAllowed)
            #expect(wrongMethod.headers[.allow] == "GET, HEAD")
            #expect(try Self.json(wrongMethod)["error"]?["details"] == ["allow": ["GET", "HEAD"]])

            // HEAD: the same status and headers, Content-Length of the envelope, no body.
            let head = try await client.execute(uri: "/unauthorized", method: .head)
            #expect(head.status == .unauthorized)
            #expect(head.headers[.wwwAuthenticate] == "Bearer")
            #expect(head.headers[.contentLength] == "\(unauthorized.body.readableBytes)")
            #expect(head.body.readableBytes == 0)
        }
    }

    @Test("the RFC 6749 endpoints' middleware answers in RFC 6749's shape, never cached")
    func oauthReplies() async throws {
        let router = Self.enveloped { router in
            let endpoints = router.group().add(middleware: OAuthReplyMiddleware(logger: Self.quiet))
            endpoints.post("/client") { _, _ -> Response in throw OAuthError.invalidClient("Unknown client") }
            endpoints.post("/form") { _, _ -> Response in
                throw ServerError.badRequest("too_many_parameters", "At most 256 parameters")
            }
            endpoints.post("/password") { _, _ -> Response in throw AuthFailure.rateLimited(retryAfter: 9) }
            endpoints.post("/crash") { _, _ -> Response in throw Unexpected() }
            endpoints.post("/ok") { _, _ in Response.json(["access_token": "t"]) }
        }
        try await Application(router: router, logger: Self.quiet).test(.router) { client in
            let unknownClient = try await client.execute(uri: "/client", method: .post)
            #expect(unknownClient.status == .unauthorized)
            #expect(unknownClient.headers[.wwwAuthenticate] == "Basic realm=\"outpost\"")
            #expect(try Self.json(unknownClient) == ["error": "invalid_client", "error_description": "Unknown client"])

            let form = try await client.execute(uri: "/form", method: .post)
            #expect(form.status == .badRequest)
            #expect(try Self.json(form) == ["error": "invalid_request", "error_description": "At most 256 parameters"])

            let limited = try await client.execute(uri: "/password", method: .post)
            #expect(limited.status == .tooManyRequests)
            #expect(limited.headers[.retryAfter] == "9")
            #expect(try Self.json(limited)["error"] == "slow_down")

            let crash = try await client.execute(uri: "/crash", method: .post)
            #expect(crash.status == .internalServerError)
            #expect(try Self.json(crash)["error"] == "server_error")

            for response in [unknownClient, form, limited, crash, try await client.execute(uri: "/ok", method: .post)] {
                #expect(response.headers[.cacheControl] == "no-store")
                #expect(response.headers[.pragma] == "no-cache")
            }
        }
    }

    @Test("a Content-Length field is read as digits only, of a number that fits in 63 bits")
    func declaredLengthValues() {
        typealias Middleware = DeclaredLengthMiddleware
        #expect(Middleware.length("0") == 0)
        #expect(Middleware.length("0012") == 12)
        #expect(Middleware.length("9223372036854775807") == .max)
        for bad in ["", " 1", "1 ", "+1", "-1", "1e3", "9223372036854775808", "0x10"] {
            #expect(Middleware.length(bad) == nil, "\(bad)")
        }
    }
}
