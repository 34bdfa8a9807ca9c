import Foundation
import HTTPTypes
import Logging
@_spi(OutpostInternal) import OutpostCore
import OutpostTesting

@testable import OutpostAuth

/// A request as the scripted server saw it.
typealias Recorded = ScriptedTransport.Exchange

extension ScriptedTransport.Exchange {
    /// The form-encoded body as a dictionary.
    var form: [String: String] { FormEncoding.decode(bodyText) }
    var bodyText: String { String(decoding: body ?? Data(), as: UTF8.self) }
}

extension ScriptedTransport {
    /// How many requests went to `path`.
    func count(path: String) -> Int { requests.filter { $0.path == path }.count }
}

/// An answer of the scripted authorization server (or API).
struct Reply: Sendable {
    var status: Int
    var headers: [String: String] = [:]
    var body: Data

    static func json(_ status: Int, _ value: JSONValue, headers: [String: String] = [:]) -> Reply {
        Reply(status: status, headers: headers, body: value.jsonData())
    }

    static func oauthError(_ error: String, status: Int = 400) -> Reply {
        .json(status, ["error": .string(error), "error_description": .string("described \(error)")])
    }

    static func token(_ access: String, refresh: String? = nil, expiresIn: Int = 3600, scope: String? = nil) -> Reply {
        var object: [String: JSONValue] = [
            "access_token": .string(access), "token_type": "Bearer", "expires_in": .int(expiresIn),
        ]
        if let refresh { object["refresh_token"] = .string(refresh) }
        if let scope { object["scope"] = .string(scope) }
        return .json(200, .object(object))
    }

    var response: (HTTPResponse, Data) {
        var response = HTTPResponse(status: .init(code: status))
        for (name, value) in headers {
            if let field = HTTPField.Name(name) { response.headerFields[field] = value }
        }
        return (response, body)
    }
}

/// A `ScriptedTransport` that plays the authorization server (and an API) with `answer`.
func authServer(_ answer: @escaping @Sendable (Recorded) async throws -> Reply) -> ScriptedTransport {
    ScriptedTransport(answering: { try await answer($0).response })
}

/// A clock whose sleeps return at once and move time forward, recording each delay.
// @unchecked: all state is only touched while holding `lock`.
final class FakeClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date
    private var delays: [Duration] = []

    init(_ start: Date = Date(timeIntervalSince1970: 1_700_000_000)) { current = start }

    var now: Date {
        lock.lock()
        defer { lock.unlock() }
        return current
    }

    var sleeps: [Duration] {
        lock.lock()
        defer { lock.unlock() }
        return delays
    }

    func advance(_ seconds: TimeInterval) {
        lock.lock()
        current.addTimeInterval(seconds)
        lock.unlock()
    }

    func sleep(_ duration: Duration) async throws {
        try Task.checkCancellation()
        let (seconds, attoseconds) = duration.components
        lock.withLock {
            delays.append(duration)
            current.addTimeInterval(Double(seconds) + Double(attoseconds) / 1e18)
        }
    }
}

/// Records browser opens; optionally acts on them (e.g. follows the redirect).
struct RecordingBrowser: BrowserOpening {
    let opened = Box<[URL]>([])
    var action: @Sendable (URL) async throws -> Void = { _ in }

    func open(_ url: URL) async throws {
        opened.mutate { $0.append(url) }
        try await action(url)
    }
}

// @unchecked: `value` is only touched while holding `lock`.
final class Box<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        lock.lock()
        defer { lock.unlock() }
        return stored
    }
    @discardableResult
    func mutate<T>(_ body: (inout Value) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&stored)
    }
}

/// Captures every log record, at every level.
struct RecordingLogHandler: LogHandler {
    let lines: Box<[String]>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = self.metadata.merging(event.metadata ?? [:]) { $1 }
        lines.mutate { $0.append("\(event.level) \(event.message) \(merged) \(event.error.map { "\($0)" } ?? "")") }
    }
}

let testBase = URL(string: "https://auth.test")!

func makeClient(_ transport: ScriptedTransport, logger: Logger? = nil, middlewares: [any ClientMiddleware] = []) -> OutpostClient
{
    var configuration = OutpostClient.Configuration(baseURL: testBase, retry: .none)
    if let logger { configuration.logger = logger }
    return OutpostClient(configuration: configuration, transport: transport, middlewares: middlewares)
}

func makeAuthenticator(
    _ transport: ScriptedTransport,
    registration: ClientRegistration = ClientRegistration(
        clientID: "cli", redirectURI: URL(string: "myapp://oauth/callback"), scopes: ["read", "write"]),
    store: any CredentialStore = InMemoryCredentialStore(),
    clock: FakeClock? = nil,
    browser: any BrowserOpening = RecordingBrowser(),
    logger: Logger? = nil,
    browserTimeout: Duration = .seconds(30),
    sleep: (@Sendable (Duration) async throws -> Void)? = nil
) -> Authenticator {
    var configuration = Authenticator.Configuration(
        registration: registration, endpoints: .outpost(base: testBase), store: store, browser: browser,
        browserTimeout: browserTimeout)
    if let clock {
        configuration.now = { clock.now }
        configuration.sleep = { try await clock.sleep($0) }
    }
    if let sleep { configuration.sleep = sleep }
    if let logger { configuration.logger = logger }
    return Authenticator(configuration: configuration, client: makeClient(transport, logger: logger))
}
