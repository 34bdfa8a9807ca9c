@_spi(OutpostInternal) public import OutpostCore
import Synchronization

/// A ``UserCompliance`` that asks the server which entitlements the signed-in user has
/// (`GET /me` with the user's bearer token, answering `{"entitlements": ["premium", ...]}`) and
/// judges policies by them.
///
/// Policies:
/// - `{"free": true}`: compliant, without asking anyone.
/// - `{"entitlement": "premium"}`: the user must have `premium`.
/// - `{"entitlements": ["premium", "sports"]}`: the user must have one of them.
/// - `{"playable_items": [{...}, ...]}`: every item is judged by these same rules (an item may be
///   `free`); compliant when all are.
/// - none of these (e.g. only `{"item_id": "42"}`): a signed-in user is enough.
///
/// A signed-out user (no token, or the server answers 401) is compliant only with free policies.
///
/// The answer is cached for ``Configuration/cacheLifetime`` per token. The **synchronous** form
/// never touches the network: it answers from that cache, `true` for free policies, and `false`
/// when the cache is empty or stale, or the user is known to be signed out; call the async form
/// (or ``refresh()``) first to fill it. The cache keeps the last user's entitlements until the
/// async form sees another token: call ``invalidate()`` when the user changes if the synchronous
/// form must know at once.
public final class EntitlementComplianceChecker: UserCompliance {
    /// The plugin type under which ``PluginRegistry/registerEntitlementCompliance(type:client:)`` registers it.
    public static let pluginType = "outpost.compliance.entitlements"

    /// How the checker asks and caches.
    public struct Configuration: Sendable {
        /// The path that answers with the user and their entitlements.
        public var path: String
        /// The key of the entitlements array in that answer.
        public var entitlementsKey: String
        /// How long an answer stays good.
        public var cacheLifetime: Duration

        /// Creates a configuration.
        public init(path: String = "/me", entitlementsKey: String = "entitlements", cacheLifetime: Duration = .seconds(30)) {
            self.path = path
            self.entitlementsKey = entitlementsKey
            self.cacheLifetime = cacheLifetime
        }
    }

    /// Gives the signed-in user's access token, or `nil` when nobody is signed in.
    public typealias TokenSource = @Sendable () async -> String?

    private struct Cache {
        var token: String
        var entitlements: Set<String>
        var fetchedAt: ContinuousClock.Instant
    }

    /// The client that asks the server.
    public let client: OutpostClient
    /// How the checker asks and caches.
    public let configuration: Configuration
    private let token: TokenSource
    private let isSignedIn: (@Sendable () -> Bool)?
    private let cache = Mutex<Cache?>(nil)

    /// Creates a checker that gets the token from a closure.
    /// - Parameters:
    ///   - client: The client of the server to ask.
    ///   - configuration: Path, key and cache lifetime.
    ///   - token: Gives the user's access token, `nil` when signed out.
    ///   - isSignedIn: Tells at once whether a user is signed in, for the synchronous form; when
    ///     `nil`, the synchronous form trusts the cache alone.
    public init(
        client: OutpostClient, configuration: Configuration = Configuration(), token: @escaping TokenSource,
        isSignedIn: (@Sendable () -> Bool)? = nil
    ) {
        self.client = client
        self.configuration = configuration
        self.token = token
        self.isSignedIn = isSignedIn
    }

    /// Creates a checker that gets the token from a login provider.
    public convenience init(
        client: OutpostClient, loginProvider: any LoginProvider, configuration: Configuration = Configuration()
    ) {
        self.init(
            client: client, configuration: configuration, token: { await loginProvider.userToken },
            isSignedIn: { loginProvider.isAuthenticated })
    }

    // MARK: UserCompliance

    /// Answers from the cache; see the type's documentation.
    public func isCompliant(policies: [String: JSONValue]) -> Bool {
        guard let requirement = try? Requirement(policies) else { return false }
        if requirement.isFree { return true }
        if let isSignedIn, !isSignedIn() { return false }
        let lifetime = configuration.cacheLifetime
        guard let cached = cache.withLock({ $0 }), cached.fetchedAt.duration(to: .now) < lifetime else { return false }
        return requirement.isMet(by: cached.entitlements)
    }

    /// Answers, asking the server when the cache cannot.
    /// - Throws: ``PluginError`` with ``PluginError/Code/invalidConfiguration`` for malformed
    ///   policies, or ``PluginError/Code/complianceCheckFailed`` when the server could not answer.
    public func isCompliant(policies: [String: JSONValue]) async throws -> Bool {
        let requirement = try Requirement(policies)
        if requirement.isFree { return true }
        guard let entitlements = try await entitlements() else { return false }
        return requirement.isMet(by: entitlements)
    }

    // MARK: Entitlements

    /// The signed-in user's entitlements, from the cache while it is good, otherwise from the server.
    /// - Returns: `nil` when nobody is signed in (no token, or the server answered 401).
    public func entitlements() async throws(PluginError) -> Set<String>? {
        guard let token = await token() else {
            invalidate()
            return nil
        }
        let lifetime = configuration.cacheLifetime
        if let cached = cache.withLock({ $0 }), cached.token == token, cached.fetchedAt.duration(to: .now) < lifetime {
            return cached.entitlements
        }
        return try await fetch(token: token)
    }

    /// Asks the server now, whatever the cache holds.
    @discardableResult
    public func refresh() async throws(PluginError) -> Set<String>? {
        guard let token = await token() else {
            invalidate()
            return nil
        }
        return try await fetch(token: token)
    }

    /// Forgets the cached answer.
    public func invalidate() {
        cache.withLock { $0 = nil }
    }

    private func fetch(token: String) async throws(PluginError) -> Set<String>? {
        var request = Request.get(configuration.path)
        request.headers[.authorization] = "Bearer \(token)"
        let answer: JSONValue
        do {
            answer = try await client.send(request, decoding: JSONValue.self)
        } catch let error as OutpostError where error.status == 401 || error.code == .unauthorized {
            invalidate()
            return nil
        } catch {
            throw PluginError(
                .complianceCheckFailed, "Could not get the user's entitlements from GET \(configuration.path)",
                suggestion: "Check the connection to the server; the check can be retried", plugin: Self.pluginType,
                underlying: error)
        }
        guard
            let values = answer[configuration.entitlementsKey]?.arrayValue
                ?? (answer[configuration.entitlementsKey] == nil ? [] : nil)
        else {
            throw PluginError(
                .complianceCheckFailed,
                "GET \(configuration.path) answered with '\(configuration.entitlementsKey)' that is not an array",
                suggestion: "Point the checker at an endpoint that lists the user's entitlements", plugin: Self.pluginType)
        }
        let entitlements = Set(values.compactMap(\.stringValue))
        cache.withLock { $0 = Cache(token: token, entitlements: entitlements, fetchedAt: .now) }
        return entitlements
    }
}

/// What a set of policies asks for.
private indirect enum Requirement {
    case free
    case signedIn
    case anyOf(Set<String>)
    case all([Requirement])

    init(_ policies: [String: JSONValue]) throws(PluginError) {
        if policies["free"]?.boolValue == true {
            self = .free
            return
        }
        var parts: [Requirement] = []
        if let entitlement = policies["entitlement"], entitlement != .null {
            guard let name = entitlement.stringValue else { throw Self.malformed("entitlement", "a string", entitlement) }
            parts.append(.anyOf([name]))
        }
        if let entitlements = policies["entitlements"], entitlements != .null {
            guard let names = entitlements.arrayValue?.compactMap(\.stringValue), names.count == entitlements.arrayValue?.count
            else {
                throw Self.malformed("entitlements", "an array of strings", entitlements)
            }
            parts.append(.anyOf(Set(names)))
        }
        if let items = policies["playable_items"], items != .null {
            guard let array = items.arrayValue else { throw Self.malformed("playable_items", "an array of objects", items) }
            var judged: [Requirement] = []
            for item in array {
                guard let object = item.objectValue else { throw Self.malformed("playable_items", "an array of objects", items) }
                judged.append(try Requirement(object))
            }
            if !judged.isEmpty && judged.allSatisfy(\.isFree) && parts.isEmpty {
                self = .free
                return
            }
            parts.append(.all(judged))
        }
        self = parts.isEmpty ? .signedIn : .all(parts)
    }

    var isFree: Bool {
        if case .free = self { return true }
        return false
    }

    func isMet(by entitlements: Set<String>) -> Bool {
        switch self {
        case .free, .signedIn: return true
        case .anyOf(let names): return !names.isDisjoint(with: entitlements)
        case .all(let parts): return parts.allSatisfy { $0.isMet(by: entitlements) }
        }
    }

    private static func malformed(_ key: String, _ expected: String, _ value: JSONValue) -> PluginError {
        PluginError(
            .invalidConfiguration, "The policy '\(key)' must be \(expected), not \(value)",
            suggestion: "Fix the policies passed to isCompliant(policies:)", plugin: EntitlementComplianceChecker.pluginType)
    }
}
