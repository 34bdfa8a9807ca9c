import Foundation
import HTTPTypes
import Logging
@_spi(OutpostInternal) import OutpostCore
import OutpostTesting
import Testing

@testable import OutpostAuth

@Suite("Discovery overrides, short-lived tokens, device-code expiry, observable token requests")
struct InteropAuthTests {
    /// django-oauth-toolkit's metadata: no device endpoint, no provider login.
    static let metadata: JSONValue = [
        "issuer": "https://auth.test", "authorization_endpoint": "https://auth.test/o/authorize/",
        "token_endpoint": "https://auth.test/o/token/", "revocation_endpoint": "https://auth.test/o/revoke_token/",
    ]

    @Test("discovery uses only what the metadata lists; overrides add and replace endpoints")
    func discoveryOverrides() async throws {
        let transport = authServer { request in
            request.path.hasPrefix("/.well-known/oauth-authorization-server") ? .json(200, Self.metadata) : .json(404, [:])
        }
        let plain = try await Endpoints.discover(issuer: testBase, client: makeClient(transport))
        #expect(plain.deviceAuthorization == nil)
        #expect(plain.providerLogin == nil)
        #expect(plain.logout == nil)
        #expect(plain.token.absoluteString == "https://auth.test/o/token/")

        let device = URL(string: "https://auth.test/o/device-authorization/")!
        let token = URL(string: "https://auth.test/o/other-token/")!
        let auth = try await Authenticator.discover(
            issuer: testBase, client: makeClient(transport), registration: ClientRegistration(clientID: "cli"),
            overrides: Endpoints.Overrides(token: token, deviceAuthorization: device))
        let endpoints = auth.configuration.endpoints
        #expect(endpoints.deviceAuthorization == device)
        #expect(endpoints.token == token)
        #expect(endpoints.revocation?.absoluteString == "https://auth.test/o/revoke_token/")
        #expect(endpoints.providerLogin == nil)
        let thrown = await #expect(throws: AuthError.self) { try await auth.signIn(provider: "example", data: [:]) }
        #expect(thrown?.code == .notConfigured)
    }

    @Test("a 30-second token is not refreshed while fresh, and is refreshed in the last half of its life")
    func shortLivedTokens() async throws {
        let transport = authServer { request in
            request.form["grant_type"] == "refresh_token"
                ? .token("at-2", refresh: "rt-2", expiresIn: 30) : .token("at-1", refresh: "rt-1", expiresIn: 30)
        }
        let clock = FakeClock()
        let auth = makeAuthenticator(transport, clock: clock)
        try await auth.signIn(username: "ada", password: "pw")
        for _ in 0..<5 { #expect(try await auth.validCredential()?.accessToken == "at-1") }
        clock.advance(14)
        #expect(try await auth.validCredential()?.accessToken == "at-1")
        #expect(transport.count(path: "/oauth/token") == 1)
        clock.advance(2)  // 14 s left: within half the lifetime
        #expect(try await auth.validCredential()?.accessToken == "at-2")
        #expect(transport.count(path: "/oauth/token") == 2)
        // Long-lived tokens keep the configured margin.
        let long = Credential(accessToken: "a", expiresAt: clock.now.addingTimeInterval(3600), issuedAt: clock.now)
        #expect(auth.configuration.refreshMargin(for: long) == 60)
    }

    static func deviceServer(expiresIn: Int, interval: Int = 5) -> ScriptedTransport {
        authServer { request in
            if request.path == "/oauth/device_authorization" {
                return .json(
                    200,
                    [
                        "device_code": "dev-secret", "user_code": "WDJB-MJHT", "verification_uri": "https://auth.test/device",
                        "expires_in": .int(expiresIn), "interval": .int(interval),
                    ])
            }
            return .oauthError("authorization_pending")
        }
    }

    @Test("the device flow counts the code's lifetime from the server's answer, and its last wait ends at the expiry")
    func deviceExpiry() async throws {
        let transport = Self.deviceServer(expiresIn: 60)
        let clock = FakeClock()
        let slow = await #expect(throws: AuthError.self) {
            // The user takes longer than the code lives to dismiss the prompt.
            try await makeAuthenticator(transport, clock: clock).signInWithDeviceCode { _ in clock.advance(61) }
        }
        #expect(slow?.code == .expiredToken)
        #expect(transport.count(path: "/oauth/token") == 0)

        let short = Self.deviceServer(expiresIn: 7)
        let shortClock = FakeClock()
        let thrown = await #expect(throws: AuthError.self) {
            try await makeAuthenticator(short, clock: shortClock).signInWithDeviceCode { _ in }
        }
        #expect(thrown?.code == .expiredToken)
        #expect(shortClock.sleeps == [.seconds(5), .seconds(2)])
        #expect(short.count(path: "/oauth/token") == 1)
    }

    @Test("token requests are logged at debug with status and duration, and pass through the configured middlewares")
    func observableTokenRequests() async throws {
        let transport = authServer { request in
            request.path == "/oauth/revoke" ? .json(200, [:]) : .token("at-secret-1", refresh: "rt-secret-1")
        }
        let lines = Box<[String]>([])
        let logger = Logger(label: "test") { _ in RecordingLogHandler(lines: lines) }
        let seen = Box<[String]>([])
        let observer = ClosureMiddleware { request, body, _, next in
            let response = try await next(request, body)
            seen.mutate { $0.append("\(request.method) \(request.path ?? "") \(response.status)") }
            return response
        }
        let configuration = Authenticator.Configuration(
            registration: ClientRegistration(clientID: "cli", clientSecret: "client-secret-1"),
            endpoints: .outpost(base: testBase), logger: logger, middlewares: [observer])
        let auth = Authenticator(configuration: configuration, client: makeClient(transport))
        try await auth.signIn(username: "ada", password: "password-1")
        try await auth.revoke("at-secret-1")
        #expect(seen.value == ["POST /oauth/token 200", "POST /oauth/revoke 200"])
        let responses = lines.value.filter { $0.contains("auth endpoint response") }
        #expect(responses.count == 2)
        #expect(responses.allSatisfy { $0.hasPrefix("debug") && $0.contains("oauth.status") && $0.contains("oauth.duration_ms") })
        #expect(responses.first?.contains("/oauth/token") == true)
        for secret in ["at-secret-1", "rt-secret-1", "password-1", "client-secret-1"] {
            #expect(!lines.value.joined().contains(secret))
        }
    }
}
