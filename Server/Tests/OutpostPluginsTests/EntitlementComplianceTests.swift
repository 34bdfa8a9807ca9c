import Foundation
@_spi(OutpostInternal) import OutpostCore
import OutpostPlugins
import OutpostTesting
import Synchronization
import Testing

@Suite("The entitlement compliance checker")
struct EntitlementComplianceTests {
    private func checker(
        _ transport: ScriptedTransport, token: String? = "t-premium", lifetime: Duration = .seconds(60),
        signedIn: (@Sendable () -> Bool)? = nil
    ) -> EntitlementComplianceChecker {
        EntitlementComplianceChecker(
            client: transport.client(), configuration: .init(cacheLifetime: lifetime), token: { token }, isSignedIn: signedIn)
    }

    @Test("free policies are compliant without asking, in both forms")
    func free() async throws {
        let transport = meEndpoint([:])
        let checker = checker(transport, token: nil)
        #expect(checker.isCompliant(policies: ["free": true, "item_id": "1"]))
        #expect(try await checker.isCompliant(policies: ["free": true]))
        #expect(try await checker.isCompliant(policies: ["playable_items": [["free": true], ["free": true]]]))
        #expect(transport.requests.isEmpty)
    }

    @Test("the async form asks GET /me with the bearer token; the sync form then answers from the cache")
    func asyncThenSync() async throws {
        let transport = meEndpoint(["t-premium": ["premium", "sports"]])
        let checker = checker(transport)
        #expect(!checker.isCompliant(policies: ["entitlement": "premium"]), "nothing cached yet")
        #expect(try await checker.isCompliant(policies: ["entitlement": "premium"]))
        #expect(transport.requests.count == 1)
        #expect(transport.requests.first?.path == "/me")
        #expect(transport.requests.first?.request.headerFields[.authorization] == "Bearer t-premium")

        #expect(checker.isCompliant(policies: ["entitlement": "premium"]))
        #expect(!checker.isCompliant(policies: ["entitlement": "gold"]))
        #expect(try await checker.isCompliant(policies: ["entitlements": ["gold", "sports"]]))
        #expect(try await !checker.isCompliant(policies: ["entitlements": ["gold"]]))
        #expect(try await checker.isCompliant(policies: ["item_id": "42"]), "no entitlement named: signed in is enough")
        #expect(
            try await !checker.isCompliant(policies: ["playable_items": [["entitlement": "premium"], ["entitlement": "gold"]]]))
        #expect(try await checker.isCompliant(policies: ["playable_items": [["entitlement": "premium"], ["free": true]]]))
        #expect(transport.requests.count == 1, "answers came from the cache")

        checker.invalidate()
        #expect(!checker.isCompliant(policies: ["entitlement": "premium"]))
        #expect(try await checker.refresh() == ["premium", "sports"])
        #expect(transport.requests.count == 2)
    }

    @Test("a stale cache is asked again; so is a new token")
    func staleAndNewToken() async throws {
        let transport = meEndpoint(["a": ["premium"], "b": []])
        let stale = checker(transport, token: "a", lifetime: .zero)
        #expect(try await stale.isCompliant(policies: ["entitlement": "premium"]))
        #expect(!stale.isCompliant(policies: ["entitlement": "premium"]), "a stale cache answers no")
        #expect(try await stale.isCompliant(policies: ["entitlement": "premium"]))
        #expect(transport.requests.count == 2)

        let current = Mutex("a")
        let switching = EntitlementComplianceChecker(client: transport.client(), token: { current.withLock { $0 } })
        #expect(try await switching.isCompliant(policies: ["entitlement": "premium"]))
        current.withLock { $0 = "b" }
        #expect(try await !switching.isCompliant(policies: ["entitlement": "premium"]))
        #expect(transport.requests.count == 4)
    }

    @Test("signed out: no token, or a 401, is not compliant and clears the cache")
    func signedOut() async throws {
        let transport = meEndpoint(["good": ["premium"]])
        let noToken = checker(transport, token: nil)
        #expect(try await !noToken.isCompliant(policies: ["entitlement": "premium"]))
        #expect(try await !noToken.isCompliant(policies: [:]))
        #expect(transport.requests.isEmpty)

        let expired = checker(transport, token: "expired")
        #expect(try await !expired.isCompliant(policies: ["entitlement": "premium"]))
        #expect(try await expired.entitlements() == nil)
        #expect(!expired.isCompliant(policies: ["entitlement": "premium"]))
    }

    @Test("the sync form says no when the user is known to be signed out, whatever the cache holds")
    func syncRespectsSignIn() async throws {
        let signedIn = Mutex(true)
        let checker = checker(meEndpoint(["t-premium": ["premium"]]), signedIn: { signedIn.withLock { $0 } })
        #expect(try await checker.isCompliant(policies: ["entitlement": "premium"]))
        #expect(checker.isCompliant(policies: ["entitlement": "premium"]))
        signedIn.withLock { $0 = false }
        #expect(!checker.isCompliant(policies: ["entitlement": "premium"]))
        #expect(checker.isCompliant(policies: ["free": true]))
    }

    @Test("a server failure is an error, not a no; malformed policies are errors too")
    func failures() async throws {
        let broken = stubTransport { _ in (500, ["error": ["code": "internal", "message": "database down"]]) }
        let checker = checker(broken)
        let error = await #expect(throws: PluginError.self) {
            try await checker.isCompliant(policies: ["entitlement": "premium"]) as Bool
        }
        #expect(error?.code == .complianceCheckFailed)
        #expect((error?.underlying as? OutpostError)?.status == 500)

        let notArray = stubTransport { _ in (200, ["entitlements": "premium"]) }
        let odd = await #expect(throws: PluginError.self) { try await self.checker(notArray).isCompliant(policies: [:]) as Bool }
        #expect(odd?.code == .complianceCheckFailed)

        let fine = self.checker(meEndpoint(["t-premium": []]))
        let malformed = await #expect(throws: PluginError.self) {
            try await fine.isCompliant(policies: ["entitlement": 3]) as Bool
        }
        #expect(malformed?.code == .invalidConfiguration)
        #expect(malformed?.message.contains("entitlement") == true)
        #expect(!fine.isCompliant(policies: ["entitlement": 3]))
    }

    @Test("with a login provider: its token is sent and its state gates the sync form")
    func overLoginProvider() async throws {
        let transport = meEndpoint(["access-1": ["premium"]])
        let provider = try OAuthLoginProvider(
            identifier: "oauth", session: FakeSession(), notificationCenter: NotificationRecorder().center)
        let checker = EntitlementComplianceChecker(client: transport.client(), loginProvider: provider)
        #expect(try await !checker.isCompliant(policies: ["entitlement": "premium"]))
        try await provider.login()
        #expect(try await checker.isCompliant(policies: ["entitlement": "premium"]))
        #expect(checker.isCompliant(policies: ["entitlement": "premium"]))
        try await provider.logout()
        #expect(!checker.isCompliant(policies: ["entitlement": "premium"]))
    }

    @Test("the completion-handler form")
    func completionForm() async throws {
        let checker = checker(meEndpoint(["t-premium": ["premium"]]))
        let result = await withCheckedContinuation { continuation in
            checker.isCompliant(policies: ["entitlement": "premium"]) { continuation.resume(returning: $0) }
        }
        #expect(try result.get())
    }
}
