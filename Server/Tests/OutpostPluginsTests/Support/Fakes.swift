import Foundation
import HTTPTypes
@_spi(OutpostInternal) import OutpostCore
import OutpostPlugins
import OutpostTestSupport
import OutpostTesting
import Synchronization

/// Lines appended from any thread.
final class Log: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

struct Boom: Error, CustomStringConvertible {
    var description: String { "boom" }
}

/// An OAuth session in memory: a stored credential, a scripted sign-in.
final class FakeSession: OAuthSession {
    struct State {
        var stored: String?
        var token: String?
        var signInResult: Result<Bool, any Error> = .success(true)
        var signInCalls: [Bool] = []
        var signOutError: (any Error)?
        var rejectsTokens = false
    }

    let state: Mutex<State>
    let gate: Gate?

    init(stored: String? = nil, signIn: Result<Bool, any Error> = .success(true), gate: Gate? = nil) {
        state = Mutex(State(stored: stored, signInResult: signIn))
        self.gate = gate
    }

    func signIn(interactive: Bool) async throws -> Bool {
        let result = state.withLock { state in
            state.signInCalls.append(interactive)
            return state.signInResult
        }
        if let gate { await gate.wait() }
        let signedIn = try result.get()
        if signedIn {
            state.withLock {
                $0.token = "access-\($0.signInCalls.count)"; $0.stored = $0.token
            }
        }
        return signedIn
    }

    func signOut() async throws {
        let error = state.withLock { state in
            state.token = nil
            state.stored = nil
            return state.signOutError
        }
        if let error { throw error }
    }

    var accessToken: String? {
        get async { state.withLock { $0.token } }
    }

    func setAccessToken(_ token: String?) async throws {
        try state.withLock { state in
            if state.rejectsTokens { throw Boom() }
            state.token = token
            state.stored = token
        }
    }

    func restore() async -> Bool {
        state.withLock { state in
            state.token = state.stored
            return state.stored != nil
        }
    }

    var signInCalls: [Bool] { state.withLock { $0.signInCalls } }
}

/// A screen hook that does what it is told and logs what it saw.
struct ScriptedHook: ScreenHook {
    var name: String
    var log: Log
    var isFlowBlocker = true
    var stages: Set<ScreenHookStage> = [.beforePresentation]
    var isRecurring = false
    var decide: @Sendable (ScreenHookContext) async throws -> ScreenHookDecision

    func evaluate(_ context: ScreenHookContext) async throws -> ScreenHookDecision {
        log.append("\(name)#\(context.presentationIndex)\(context.afterSignIn ? "+signedIn" : "")")
        return try await decide(context)
    }
}

/// A presenter that signs in as scripted (returns, or throws) and records the requests.
final class ScriptedPresenter: LoginPresenting {
    let answer: @Sendable (LoginRequest) async throws -> Void
    private let seen = Mutex<[LoginRequest]>([])

    init(_ answer: @escaping @Sendable (LoginRequest) async throws -> Void = { _ in }) {
        self.answer = answer
    }

    func presentLogin(_ request: LoginRequest, screen: String) async throws {
        seen.withLock { $0.append(request) }
        try await answer(request)
    }

    var requests: [LoginRequest] { seen.withLock { $0 } }
}

/// A compliance checker that answers from a set of entitlements and a sign-in flag.
final class FixedCompliance: UserCompliance {
    let entitlements: Mutex<Set<String>>
    let signedIn: @Sendable () -> Bool

    init(entitlements: Set<String>, signedIn: @escaping @Sendable () -> Bool) {
        self.entitlements = Mutex(entitlements)
        self.signedIn = signedIn
    }

    func isCompliant(policies: [String: JSONValue]) -> Bool { answer(policies) }

    func isCompliant(policies: [String: JSONValue]) async throws -> Bool { answer(policies) }

    private func answer(_ policies: [String: JSONValue]) -> Bool {
        if policies["free"]?.boolValue == true { return true }
        guard signedIn() else { return false }
        guard let needed = policies["entitlement"]?.stringValue else { return true }
        return entitlements.withLock { $0.contains(needed) }
    }
}

/// A ``ScriptedTransport`` answering each request with a status and a JSON body.
func stubTransport(_ answer: @escaping @Sendable (HTTPRequest) throws -> (status: Int, body: JSONValue)) -> ScriptedTransport {
    ScriptedTransport { request, _ in
        let (status, json) = try answer(request)
        return ScriptedTransport.reply(status, json: json)
    }
}

/// A `/me` endpoint: tokens map to entitlements; anything else is a 401.
func meEndpoint(_ users: [String: [String]]) -> ScriptedTransport {
    stubTransport { request in
        let authorization = request.headerFields[.authorization] ?? ""
        guard request.path == "/me", authorization.hasPrefix("Bearer "),
            let entitlements = users[String(authorization.dropFirst("Bearer ".count))]
        else {
            return (401, ["error": ["code": "unauthorized", "message": "Sign in first"]])
        }
        return (200, ["id": "u1", "username": "ada", "entitlements": .array(entitlements.map(JSONValue.string))])
    }
}

/// Receives notifications of one name on a private center.
final class NotificationRecorder: Sendable {
    let center = NotificationCenter()
    private final class Store: Sendable {
        let changes = Mutex<[LoginStateChange]>([])
    }
    private let store = Store()

    init() {
        // The center keeps the observer for as long as it lives.
        _ = center.addObserver(forName: .outpostLoginStateDidChange, object: nil, queue: nil) { [store] note in
            if let change = LoginStateChange(notification: note) { store.changes.withLock { $0.append(change) } }
        }
    }

    var all: [LoginStateChange] { store.changes.withLock { $0 } }
}

extension AsyncStream {
    /// The next `count` elements.
    func first(_ count: Int) async -> [Element] {
        var iterator = makeAsyncIterator()
        var elements: [Element] = []
        while elements.count < count, let next = await iterator.next() { elements.append(next) }
        return elements
    }
}
