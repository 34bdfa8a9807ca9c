import Foundation
import OutpostTesting
import Testing

@testable import OutpostAuth

@Suite("Device authorization grant (RFC 8628)")
struct DeviceFlowTests {
    static let authorization: Reply = .json(
        200,
        [
            "device_code": "dev-secret", "user_code": "WDJB-MJHT", "verification_uri": "https://auth.test/device",
            "verification_uri_complete": "https://auth.test/device?user_code=WDJB-MJHT", "expires_in": 60, "interval": 5,
        ])

    /// A server that answers the token endpoint with `script` in order.
    static func server(_ script: [Reply]) -> ScriptedTransport {
        let remaining = Box(script)
        return authServer { request in
            if request.path == "/oauth/device_authorization" { return authorization }
            return remaining.mutate { $0.isEmpty ? .oauthError("authorization_pending") : $0.removeFirst() }
        }
    }

    @Test("pending → slow_down → pending → success: waits 5, 5, 10, 10 seconds and shows the code once")
    func polling() async throws {
        let transport = Self.server([
            .oauthError("authorization_pending"), .oauthError("slow_down"), .oauthError("authorization_pending"),
            .token("at-dev", refresh: "rt-dev"),
        ])
        let clock = FakeClock()
        let shown = Box<[DeviceCode]>([])
        let auth = makeAuthenticator(transport, clock: clock)
        let credential = try await auth.signInWithDeviceCode { code in shown.mutate { $0.append(code) } }
        #expect(credential.accessToken == "at-dev")
        #expect(clock.sleeps == [.seconds(5), .seconds(5), .seconds(10), .seconds(10)])
        #expect(shown.value.map(\.userCode) == ["WDJB-MJHT"])
        #expect(shown.value.first?.verificationURIComplete?.query == "user_code=WDJB-MJHT")
        let requests = transport.requests
        #expect(requests.first?.form == ["scope": "read write", "client_id": "cli"])
        #expect(
            requests.last?.form == [
                "grant_type": "urn:ietf:params:oauth:grant-type:device_code", "device_code": "dev-secret", "client_id": "cli",
            ])
        #expect(requests.count == 5)
    }

    @Test("stops with expiredToken when the code's lifetime is over, without polling past it")
    func expiry() async throws {
        let transport = Self.server([])
        let clock = FakeClock()
        let thrown = await #expect(throws: AuthError.self) {
            try await makeAuthenticator(transport, clock: clock).signInWithDeviceCode { _ in }
        }
        #expect(thrown?.code == .expiredToken)
        #expect(clock.sleeps.count == 12)  // 60 s at 5 s
        #expect(transport.count(path: "/oauth/token") == 11)
    }

    @Test("the server's expired_token and access_denied end the flow")
    func serverEnds() async throws {
        for (error, code) in [("expired_token", AuthError.Code.expiredToken), ("access_denied", .accessDenied)] {
            let transport = Self.server([.oauthError("authorization_pending"), .oauthError(error)])
            let thrown = await #expect(throws: AuthError.self) {
                try await makeAuthenticator(transport, clock: FakeClock()).signInWithDeviceCode { _ in }
            }
            #expect(thrown?.code == code)
        }
    }

    @Test("cancelling the task while it waits is cancelled")
    func cancelled() async throws {
        let transport = Self.server([])
        // The real sleep, announced when it begins, so the test cancels a task that is waiting.
        let (waiting, began) = AsyncStream.makeStream(of: Duration.self)
        let auth = makeAuthenticator(transport) { delay in
            began.yield(delay)
            try await Task.sleep(for: delay)
        }
        let task = Task { try await auth.signInWithDeviceCode { _ in } }
        var waits = waiting.makeAsyncIterator()
        #expect(await waits.next() == .seconds(5))
        task.cancel()
        let thrown = await #expect(throws: AuthError.self) { try await task.value }
        #expect(thrown?.code == .cancelled)
    }
}
