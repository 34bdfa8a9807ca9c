import Foundation
@_spi(OutpostInternal) import OutpostCore
@_spi(OutpostInternal) import OutpostSupport
import OutpostTestSupport
import OutpostTesting
import Testing

@testable import OutpostAuth

/// Processes sharing one credential store (an app and its widget, two CLI runs): one of them
/// spends the refresh token, under a lease, with no file lock held across the network call.
@Suite("Shared refreshes: a lease, never a lock across the network")
struct SharedRefreshTests {
    static let expired = Credential(accessToken: "at-0", refreshToken: "rt-0", expiresAt: Date().addingTimeInterval(-10))

    /// A token endpoint that counts refreshes and holds each at `gate`.
    static func server(_ gate: Gate, calls: Box<Int>) -> ScriptedTransport {
        authServer { request in
            guard request.path == "/oauth/token" else { return .json(200, ["ok": true]) }
            calls.mutate { $0 += 1 }
            await gate.wait()
            return .token("at-1", refresh: "rt-1")
        }
    }

    /// A `sleep` seam that reports each wait for another holder's lease, then waits a moment.
    static func reportingSleep() -> (waits: AsyncStream<Void>, sleep: @Sendable (Duration) async throws -> Void) {
        let (waits, waited) = AsyncStream.makeStream(of: Void.self)
        return (
            waits,
            { _ in
                waited.yield()
                try await Task.sleep(for: .milliseconds(1))
            }
        )
    }

    @Test("while the refresh token is spent the file lock is free; a second process waits on the lease and takes the result")
    func noLockAcrossTheNetwork() async throws {
        let file = FileStoreTests.temporaryFile()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent().deletingLastPathComponent()) }
        let store = FileCredentialStore(fileURL: file)
        try await store.save(Self.expired, account: "cli")
        let gate = Gate()
        let calls = Box(0)
        let transport = Self.server(gate, calls: calls)
        let first = makeAuthenticator(transport, store: store)
        var arrivals = gate.arrivals.makeAsyncIterator()
        let refreshing = Task { try await first.refresh() }
        _ = await arrivals.next()

        // The token request is in flight: another process can take the store's lock at once.
        let lock = try await FileLock.acquire(path: store.lockURL.path, timeout: .seconds(5))
        lock.release()
        let lease = try #require(store.refreshLease)
        #expect(lease.read().leases["cli"] != nil, "the refresh holds the lease")

        // A second process, with its own store instance, waits for the lease rather than spend rt-0 again.
        let (waits, sleep) = Self.reportingSleep()
        let second = makeAuthenticator(transport, store: FileCredentialStore(fileURL: file), sleep: sleep)
        let waiting = Task { try await second.validCredential() }
        var waited = waits.makeAsyncIterator()
        _ = await waited.next()
        gate.open()

        #expect(try await refreshing.value.accessToken == "at-1")
        #expect(try await waiting.value?.accessToken == "at-1")
        #expect(calls.value == 1)
        #expect(lease.read().leases.isEmpty, "released after the credential was stored")
        #expect(try await FileCredentialStore(fileURL: file).load(account: "cli")?.refreshToken == "rt-1")
    }

    @Test("a lease whose holder died is taken over once it expires; a live one is waited for until released")
    func expiredAndLiveLeases() async throws {
        let file = FileStoreTests.temporaryFile()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent().deletingLastPathComponent()) }
        let store = FileCredentialStore(fileURL: file)
        let lease = try #require(store.refreshLease)
        let gate = Gate()
        gate.open()
        let calls = Box(0)

        // A process that claimed the lease a minute ago and was killed.
        try await store.save(Self.expired, account: "cli")
        _ = try await lease.claim(account: "cli", holder: "killed", now: Date().addingTimeInterval(-60))
        let auth = makeAuthenticator(Self.server(gate, calls: calls), store: store)
        #expect(try await auth.refresh().accessToken == "at-1")
        #expect(calls.value == 1)

        // A live holder: the refresh waits, and goes on once the holder lets go without refreshing.
        try await store.save(Self.expired, account: "cli")
        guard case .claimed = try await lease.claim(account: "cli", holder: "other") else {
            Issue.record("the expired lease was not free")
            return
        }
        let (waits, sleep) = Self.reportingSleep()
        let waiting = makeAuthenticator(Self.server(gate, calls: calls), store: FileCredentialStore(fileURL: file), sleep: sleep)
        let refresh = Task { try await waiting.validCredential() }
        var waited = waits.makeAsyncIterator()
        _ = await waited.next()
        #expect(calls.value == 1, "nothing is spent while another holder has the lease")
        try await store.withExclusiveAccess(account: "cli") { try await lease.release(account: "cli", holder: "other") }
        #expect(try await refresh.value?.accessToken == "at-1")
        #expect(calls.value == 2)
    }

    @Test("leases of one account name in two accounts of an AccountManager are kept apart")
    func accountPrefixes() async throws {
        let file = FileStoreTests.temporaryFile()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent().deletingLastPathComponent()) }
        let base = FileCredentialStore(fileURL: file)
        let ada = try #require(AccountCredentialStore(base: base, accountID: "ada").refreshLease)
        let bob = try #require(AccountCredentialStore(base: base, accountID: "bob").refreshLease)
        guard case .claimed = try await ada.claim(account: "app", holder: "p1") else {
            Issue.record("ada's lease was not free")
            return
        }
        guard case .claimed = try await bob.claim(account: "app", holder: "p2") else {
            Issue.record("bob's lease was taken by ada's claim")
            return
        }
        #expect(Set(ada.read().leases.keys) == ["account:ada#app", "account:bob#app"])
    }

    @Test(
        "1,000 random interleavings of refreshes, sign-outs and user switches end with the signed-in user's live credential, or none"
    )
    func randomInterleavings() async throws {
        var seeds = SeededGenerator(state: 0x0075_7470_6f73_74)
        for round in 0..<1000 {
            try await Self.interleaving(seed: seeds.next(), fileStore: round.isMultiple(of: 10))
        }
    }

    /// What the user does, one step after another, while refreshes run beside it.
    enum Step: CaseIterable {
        case refresh, validCredential, signOut, signOutRevoking, switchToBob, switchToCyd, clear
    }

    static func interleaving(seed: UInt64, fileStore: Bool) async throws {
        var random = SeededGenerator(state: seed)
        let folder = FileManager.default.temporaryDirectory.appending(path: "outpost-interleave-\(UUID().uuidString)")
        defer { if fileStore { try? FileManager.default.removeItem(at: folder) } }
        let store: any CredentialStore =
            fileStore ? FileCredentialStore(fileURL: folder.appending(path: "credentials.json")) : InMemoryCredentialStore()
        // Every sign-in gets tokens of its own: at-USER_K-0, rt-USER_K-0.
        let signIns = Box(0)
        @Sendable func expiring(_ user: String) -> Credential {
            let number = signIns.mutate {
                $0 += 1; return $0
            }
            return Credential(
                accessToken: "at-\(user)_\(number)-0", refreshToken: "rt-\(user)_\(number)-0",
                expiresAt: Date().addingTimeInterval(-5))
        }
        try await store.save(expiring("ada"), account: "cli")

        // The server: rt-USER-N → at-USER-(N+1), rt-USER-(N+1); a refresh token spent twice is refused.
        let held = HeldRequests()
        let spent = Box<Set<String>>([])
        let transport = authServer { request in
            guard request.path == "/oauth/token" else { return Reply(status: 200, body: Data()) }
            let old = request.form["refresh_token"] ?? ""
            await held.hold()
            let parts = old.split(separator: "-")
            guard parts.count == 3, let number = Int(parts[2]), spent.mutate({ $0.insert(old).inserted }) else {
                return .oauthError("invalid_grant")
            }
            return .token("at-\(parts[1])-\(number + 1)", refresh: "rt-\(parts[1])-\(number + 1)")
        }
        let auth = makeAuthenticator(transport, store: store)

        let steps = (0..<Int.random(in: 2...6, using: &random)).map { _ in Step.allCases.randomElement(using: &random)! }
        var yields = (0..<steps.count).map { _ in Int.random(in: 0...3, using: &random) }
        let releaseSeed = random.next()
        let driver = Task { () -> String? in
            var signedIn: String? = "ada"
            var refreshes: [Task<Void, Never>] = []
            for step in steps {
                for _ in 0..<yields.removeFirst() { await Task.yield() }
                switch step {
                case .refresh: refreshes.append(Task { _ = try? await auth.refresh() })
                case .validCredential: refreshes.append(Task { _ = try? await auth.validCredential() })
                case .signOut:
                    try? await auth.signOut(revoke: false)
                    signedIn = nil
                case .signOutRevoking:
                    try? await auth.signOut(revoke: true)
                    signedIn = nil
                case .switchToBob:
                    try? await auth.setCredential(expiring("bob"))
                    signedIn = "bob"
                case .switchToCyd:
                    try? await auth.setCredential(expiring("cyd"))
                    signedIn = "cyd"
                case .clear:
                    try? await auth.setCredential(nil)
                    signedIn = nil
                }
            }
            for refresh in refreshes { await refresh.value }
            return signedIn
        }
        // Token replies go back in a random order, at random points of the steps.
        let releaser = Task {
            var random = SeededGenerator(state: releaseSeed)
            while true {
                if await held.releaseOne(choosing: &random) { continue }
                if await held.finished { return }
                await Task.yield()
            }
        }
        let signedIn = await driver.value
        await held.finish()
        await releaser.value

        let stored = try await store.load(account: "cli")
        let context = "seed \(seed), steps \(steps), file store \(fileStore)"
        let owner = stored.map { String($0.accessToken.split(separator: "-")[1].split(separator: "_")[0]) }
        #expect(owner == signedIn, "\(context)")
        let cached = try await auth.credential()
        // Tokens compared: a file keeps dates to the microsecond only.
        #expect(
            cached?.accessToken == stored?.accessToken && cached?.refreshToken == stored?.refreshToken,
            "memory \(cached?.accessToken ?? "none"), store \(stored?.accessToken ?? "none"): \(context)")
        if let token = stored?.refreshToken {
            #expect(!spent.value.contains(token), "a spent refresh token was kept: \(context)")
        }
    }
}

/// Token requests held until the test lets each go, in the order it picks.
actor HeldRequests {
    private var held: [CheckedContinuation<Void, Never>] = []
    private(set) var finished = false

    func hold() async {
        if finished { return }
        await withCheckedContinuation { held.append($0) }
    }

    /// Lets one held request go, picked at random; false when none is held.
    func releaseOne(choosing random: inout SeededGenerator) -> Bool {
        guard !held.isEmpty else { return false }
        held.remove(at: Int.random(in: 0..<held.count, using: &random)).resume()
        return true
    }

    /// Lets every held and later request go.
    func finish() {
        finished = true
        for request in held { request.resume() }
        held = []
    }
}
