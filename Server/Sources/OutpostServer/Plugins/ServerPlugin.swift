public import Foundation
public import HTTPTypes
public import Logging
@_spi(OutpostInternal) public import OutpostCore

/// Extends the server with lambdas, custom handlers, authentication providers, record hooks
/// (``PluginRegistrar/before(_:on:_:)``, ``PluginRegistrar/after(_:on:name:_:)``) and scheduled
/// jobs (``PluginRegistrar/job(_:every:_:)``).
///
/// ```swift
/// struct Greeter: ServerPlugin {
///     let identifier = "com.example.greeter"
///     func register(into registrar: inout PluginRegistrar) throws {
///         try registrar.lambda("greet") { call in .string("Hi, \(call.arguments.string(0, named: "name") ?? "you")") }
///     }
/// }
/// ```
public protocol ServerPlugin: Sendable {
    /// A reverse-DNS name, e.g. `com.example.greeter`.
    var identifier: String { get }
    /// Adds the plugin's lambdas and handlers. Throwing stops the server from starting.
    func register(into registrar: inout PluginRegistrar) throws
}

/// Who made a call, as the access token says: `nil` in ``LambdaCall/caller`` and
/// ``HandlerCall/caller`` when the request carried no token.
public struct CallerIdentity: Sendable, Hashable {
    /// The signed-in user; `nil` for a client's own token (the client credentials grant).
    public var userID: String?
    /// The client the token was issued to.
    public var clientID: String
    /// The token's scopes.
    public var scopes: [String]

    public init(userID: String?, clientID: String, scopes: [String]) {
        self.userID = userID
        self.clientID = clientID
        self.scopes = scopes
    }
}

/// One lambda invocation, as a plugin sees it.
public struct LambdaCall: Sendable {
    public var name: String
    public var arguments: LambdaArguments
    public var logger: Logger
    /// Who called: `nil` without an access token.
    public var caller: CallerIdentity? = nil
    /// Records, acting as the caller (the access rules apply); ``RecordData/server`` acts as the server.
    public var data: RecordData
}

/// One handler invocation, as a plugin sees it: any JSON in.
public struct HandlerCall: Sendable {
    public var name: String
    /// The request body (`.null` when empty).
    public var body: JSONValue
    public var headers: HTTPFields
    public var logger: Logger
    /// Who called: `nil` without an access token.
    public var caller: CallerIdentity? = nil
    /// Records, acting as the caller (the access rules apply); ``RecordData/server`` acts as the server.
    public var data: RecordData
}

/// What a handler answers: JSON, or any bytes with their content type, with a status and headers.
public struct HandlerResponse: Sendable {
    public enum Body: Sendable {
        case json(JSONValue)
        case bytes(Data, contentType: String)
    }

    public var status: HTTPResponse.Status
    public var headers: HTTPFields
    public var body: Body

    public init(status: HTTPResponse.Status = .ok, headers: HTTPFields = [:], body: Body) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public static func json(_ value: JSONValue, status: HTTPResponse.Status = .ok) -> HandlerResponse {
        HandlerResponse(status: status, body: .json(value))
    }
}

/// What an authentication provider verified: who the person is at that provider.
public struct ProviderIdentity: Sendable, Hashable {
    /// The provider's stable id for the person (e.g. a Facebook user id).
    public var subject: String
    /// A preferred username for a new account; the server makes it unique.
    public var username: String?

    public init(subject: String, username: String? = nil) {
        self.subject = subject
        self.username = username
    }
}

/// One sign-in through a provider, as its plugin sees it.
public struct ProviderCall: Sendable {
    public var provider: String
    /// The provider data the client sent (`auth_data`), e.g. `{"access_token": "..."}`.
    public var authData: JSONValue
    public var logger: Logger
}

public typealias LambdaBody = @Sendable (LambdaCall) async throws -> JSONValue
/// Verifies provider data and returns the identity, or throws (a ``ServerError`` to choose the reply).
public typealias ProviderBody = @Sendable (ProviderCall) async throws -> ProviderIdentity
public typealias HandlerBody = @Sendable (HandlerCall) async throws -> HandlerResponse

/// Collects what plugins register, checking names as they come.
public struct PluginRegistrar: Sendable {
    private(set) var lambdas: [String: LambdaBody] = [:]
    private(set) var handlers: [String: HandlerBody] = [:]
    private(set) var providers: [String: ProviderBody] = [:]
    private(set) var owners: [String: String] = [:]
    var hooks = RecordHooks()
    var currentPlugin = ""

    init() {}

    /// Registers a lambda, called with `POST /lambdas/{name}`.
    ///
    /// Names are 1–128 characters of letters, digits and `_ . : -`, such as `hello:someone`.
    public mutating func lambda(_ name: String, _ body: @escaping LambdaBody) throws {
        try claim(name, kind: "lambda")
        lambdas[name] = body
    }

    /// Registers a custom handler, called with `POST /handlers/{name}`.
    public mutating func handler(_ name: String, _ body: @escaping HandlerBody) throws {
        try claim(name, kind: "handler")
        handlers[name] = body
    }

    /// Registers an authentication provider, used with `POST /auth/login {"provider": name, "auth_data": {...}}`.
    ///
    /// Names are reverse-DNS style, e.g. `com.example`.
    public mutating func authProvider(_ name: String, _ body: @escaping ProviderBody) throws {
        try claim(name, kind: "provider")
        providers[name] = body
    }

    /// Checks the name and records which plugin owns it; two plugins may not claim one name.
    mutating func claim(_ name: String, kind: String) throws {
        try Self.validate(name, kind: kind)
        if let owner = owners[kind + " " + name] {
            throw ServerError(
                .internalServerError, code: "duplicate_\(kind.replacingOccurrences(of: " ", with: "_"))",
                message:
                    "\(kind.prefix(1).uppercased() + kind.dropFirst()) '\(name)' is registered by both '\(owner)' and '\(currentPlugin)'; rename one"
            )
        }
        owners[kind + " " + name] = currentPlugin
    }

    static func validate(_ name: String, kind: String) throws {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:-")
        guard (1...128).contains(name.count), name.allSatisfy(allowed.contains) else {
            throw ServerError(
                .internalServerError, code: "invalid_\(kind.replacingOccurrences(of: " ", with: "_"))_name",
                message: "'\(name)' is not a valid \(kind) name: use 1–128 letters, digits, '_', '.', ':' or '-'")
        }
    }
}

extension LambdaArguments {
    /// The argument at `index` when the call is positional, or the one called `name` when it is named.
    public func value(_ index: Int, named name: String) -> JSONValue? {
        switch self {
        case .positional(let values): return values.indices.contains(index) ? values[index] : nil
        case .named(let values): return values[name]
        }
    }

    /// ``value(_:named:)`` as a string, when it is one.
    public func string(_ index: Int, named name: String) -> String? {
        value(index, named: name)?.stringValue
    }
}
