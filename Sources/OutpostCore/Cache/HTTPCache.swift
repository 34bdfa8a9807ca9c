public import Foundation
public import HTTPTypes
import Logging
import Synchronization

/// A private HTTP cache (RFC 9111) as a middleware: answers repeated `GET` and `HEAD` requests from
/// memory or disk while the stored response is fresh, revalidates it with `If-None-Match` /
/// `If-Modified-Since` when it is not, and can serve it, marked stale, when the network is down.
///
/// ```swift
/// let cache = HTTPCache(configuration: .init(directory: cachesFolder.appending(path: "outpost")))
/// let client = OutpostClient(
///     configuration: .init(baseURL: api), middlewares: [AuthMiddleware(authenticator: auth), cache])
/// ```
///
/// Place it **after** `AuthMiddleware` (or anything else that sets `Authorization` or `Cookie`): the
/// cache keys every entry by a hash of those fields, the account, so one user never sees another's
/// responses. See <doc:HTTPCaching> for what it honours.
///
/// Every response that went through the cache says how in ``ClientResponse/cacheStatus``.
public final class HTTPCache: ClientMiddleware {
    /// Limits and behaviour. Every field has a default.
    public struct Configuration: Sendable {
        /// The most bytes of responses kept in memory. Default: 4 MB.
        public var memoryLimit: Int
        /// The folder of the disk tier, created with mode 0700, its files 0600; `nil` keeps responses in
        /// memory only. Give each cache a folder of its own. Default: `nil`.
        public var directory: URL?
        /// The most bytes of responses kept on disk. Default: 20 MB.
        public var diskLimit: Int
        /// When the server cannot be reached (``OutpostError/Code/cannotConnect``,
        /// ``OutpostError/Code/connectionLost``, ``OutpostError/Code/timeout``), answer with a stored
        /// response however stale, unless it says `no-cache` or `must-revalidate`. Such an answer has
        /// ``ClientResponse/cacheStatus`` ``CacheStatus/stale`` and an `Age` field. Default: `false`.
        public var serveStaleWhenOffline: Bool
        /// The request fields that identify the account; their values are hashed into every key.
        /// Default: `Authorization` and `Cookie`.
        public var accountFields: [HTTPField.Name]
        /// The current time, a seam for tests.
        public var now: @Sendable () -> Date

        public init(
            memoryLimit: Int = 4 * 1024 * 1024, directory: URL? = nil, diskLimit: Int = 20 * 1024 * 1024,
            serveStaleWhenOffline: Bool = false, accountFields: [HTTPField.Name] = [.authorization, .cookie],
            now: @escaping @Sendable () -> Date = { Date() }
        ) {
            self.memoryLimit = memoryLimit
            self.directory = directory
            self.diskLimit = diskLimit
            self.serveStaleWhenOffline = serveStaleWhenOffline
            self.accountFields = accountFields
            self.now = now
        }
    }

    public let configuration: Configuration
    private let memory: Mutex<MemoryTier>
    private let disk: DiskTier?

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        self.memory = Mutex(MemoryTier(limit: max(0, configuration.memoryLimit)))
        self.disk = configuration.directory.map { DiskTier(folder: $0, limit: max(0, configuration.diskLimit)) }
    }

    /// The bytes the memory tier holds now.
    public var memoryBytes: Int { memory.withLock { $0.bytes } }

    /// The bytes the disk tier holds, once the writes queued so far are done.
    public func diskBytes() async -> Int {
        guard let disk else { return 0 }
        await disk.flush()
        _ = await disk.keysLeastRecentFirst()
        return disk.bytes
    }

    /// Waits until every response stored so far is on disk (writes otherwise happen in the background).
    public func flush() async { await disk?.flush() }

    /// Forgets every stored response, in memory and on disk: e.g. after a sign-out.
    public func removeAll() async {
        memory.withLock { $0.removeAll() }
        await disk?.removeAll()
    }

    public func intercept(
        _ request: HTTPRequest, body: Data?, context: MiddlewareContext,
        next: @Sendable (HTTPRequest, Data?) async throws -> ClientResponse
    ) async throws -> ClientResponse {
        guard request.method == .get || request.method == .head else {
            let response = try await next(request, body)
            if !Self.safeMethods.contains(request.method), (200..<400).contains(response.status) {
                invalidate(after: request, response: response)
            }
            return response
        }
        let asked = CacheDirectives(request.headerFields)
        // A caller's own conditional or range request is its business: pass it through untouched.
        guard !asked.noStore, !Self.conditionalFields.contains(where: { request.headerFields[$0] != nil }),
            let uri = Self.uri(of: request)
        else { return try await next(request, body) }
        let key = self.key(for: request, uri: uri)
        let now = configuration.now()
        let stored = await lookup(key, matching: request, logger: context.logger)
        if let stored {
            let age = stored.currentAge(now: now)
            let lifetime = stored.freshnessLifetime
            var acceptable = stored.isFresh(now: now) && !stored.directives.noCache && !asked.noCache
            if let maxAge = asked.maxAge, age > TimeInterval(maxAge) { acceptable = false }
            if !acceptable, let maxStale = asked.maxStale, !asked.noCache, !stored.directives.noCache,
                !stored.directives.mustRevalidate, age - lifetime <= TimeInterval(maxStale)
            {
                acceptable = true
            }
            if acceptable {
                context.logger.debug("cache hit")
                return stored.clientResponse(.hit, age: age)
            }
        }
        if asked.onlyIfCached {
            return ClientResponse(
                response: HTTPResponse(status: .gatewayTimeout, headerFields: [Self.statusField: CacheStatus.miss.rawValue]),
                body: Data())
        }
        var outgoing = request
        if let stored {
            if let etag = stored.etag { outgoing.headerFields[.ifNoneMatch] = etag }
            if let modified = stored.lastModified { outgoing.headerFields[.ifModifiedSince] = modified }
        }
        let requestTime = configuration.now()
        let response: ClientResponse
        do {
            response = try await next(outgoing, body)
        } catch let error as OutpostError where Self.offlineCodes.contains(error.code) {
            guard configuration.serveStaleWhenOffline, let stored, stored.mayServeStale else { throw error }
            context.logger.info(
                "server unreachable; serving a stale cached response", metadata: ["outpost.error": "\(error.code)"])
            return stored.clientResponse(.stale, age: stored.currentAge(now: configuration.now()))
        }
        let responseTime = configuration.now()
        if response.status == 304, let stored {
            let refreshed = stored.refreshed(with: response.response, requestTime: requestTime, responseTime: responseTime)
            if refreshed.directives.noStore {
                remove(key)
            } else {
                save(refreshed, for: key)
            }
            context.logger.debug("cache revalidated")
            return refreshed.clientResponse(.revalidated, age: refreshed.currentAge(now: responseTime))
        }
        if let stored, Self.serverErrors.contains(response.status), let allowed = stored.directives.staleIfError,
            stored.currentAge(now: responseTime) - stored.freshnessLifetime <= TimeInterval(allowed)
        {
            return stored.clientResponse(.stale, age: stored.currentAge(now: responseTime))
        }
        let entry = CacheEntry(
            response: response.response, body: response.body, request: request, requestTime: requestTime,
            responseTime: responseTime)
        if Self.isStorable(entry, request: asked) {
            save(entry, for: key)
        } else if stored != nil {
            remove(key)
        }
        var marked = response
        marked.response.headerFields[Self.statusField] = CacheStatus.miss.rawValue
        return marked
    }

    // MARK: Keys and tiers

    func key(for request: HTTPRequest, uri: String) -> CacheKey {
        var account = ""
        for name in configuration.accountFields {
            account += name.canonicalName + "=" + request.headerFields[values: name].joined(separator: ",") + "\n"
        }
        let entry = SHA256Digest.hex("outpost-cache-v1\u{0}" + account + "\u{0}" + request.method.rawValue + "\u{0}" + uri)
        return CacheKey(entry: entry, uri: Self.uriHash(uri))
    }

    static func uriHash(_ uri: String) -> String { String(SHA256Digest.hex(uri).prefix(32)) }

    private func lookup(_ key: CacheKey, matching request: HTTPRequest, logger: Logger) async -> CacheEntry? {
        var found = memory.withLock { $0.get(key) }
        if found == nil, let disk {
            switch await disk.read(key) {
            case .hit(let entry):
                memory.withLock { $0.put(entry, for: key) }
                found = entry
            case .miss:
                break
            case .corrupt(let reason):
                logger.info("damaged cache entry deleted", metadata: ["outpost.cache.reason": "\(reason)"])
            }
        }
        guard let found, found.matches(request) else { return nil }
        return found
    }

    private func save(_ entry: CacheEntry, for key: CacheKey) {
        memory.withLock { $0.put(entry, for: key) }
        disk?.write(entry, for: key)
    }

    private func remove(_ key: CacheKey) {
        memory.withLock { $0.remove(key) }
        disk?.remove(key)
    }

    /// RFC 9111 §4.4: a successful unsafe request makes the stored responses for its URI, and for
    /// the same-origin URIs in its `Location` and `Content-Location`, unusable, for every account.
    private func invalidate(after request: HTTPRequest, response: ClientResponse) {
        guard let uri = Self.uri(of: request) else { return }
        var uris = [uri]
        for name in [HTTPField.Name.location, .contentLocation] {
            guard let value = response.headerFields[name], let base = URL(string: uri),
                let target = URL(string: value, relativeTo: base)?.absoluteURL,
                target.scheme == base.scheme, target.host == base.host, target.port == base.port
            else { continue }
            var resolved = HTTPRequest(method: .get, url: target)
            resolved.headerFields = [:]
            if let other = Self.uri(of: resolved) { uris.append(other) }
        }
        for uri in uris {
            let hash = Self.uriHash(uri)
            memory.withLock { $0.remove(uri: hash) }
            disk?.remove(uri: hash)
        }
    }

    /// Memory keys, least recently used first (tests).
    var memoryKeys: [CacheKey] { memory.withLock { $0.keysLeastRecentFirst } }

    /// Disk keys, least recently used first (tests).
    func diskKeys() async -> [CacheKey] { await disk?.keysLeastRecentFirst() ?? [] }

    // MARK: Rules

    static let statusField = HTTPField.Name("Outpost-Cache")!
    static let safeMethods: Set<HTTPRequest.Method> = [.get, .head, .options, .trace]
    static let conditionalFields: [HTTPField.Name] = [
        .ifNoneMatch, .ifModifiedSince, .ifMatch, .ifUnmodifiedSince, .ifRange, .range,
    ]
    static let offlineCodes: Set<OutpostError.Code> = [.cannotConnect, .connectionLost, .timeout]
    static let serverErrors: Set<Int> = [500, 502, 503, 504]

    /// The absolute URI a request targets, scheme and host lowercased: what an entry is stored under.
    static func uri(of request: HTTPRequest) -> String? {
        guard let scheme = request.scheme, let authority = request.authority else { return nil }
        return scheme.lowercased() + "://" + authority.lowercased() + (request.path ?? "/")
    }

    /// RFC 9111 §3: a response is kept when nothing forbids it, its status is one this cache
    /// understands, and it has explicit freshness, a validator, or `public`/`private`.
    static func isStorable(_ entry: CacheEntry, request: CacheDirectives) -> Bool {
        let directives = entry.directives
        guard !request.noStore, !directives.noStore, !entry.variesOnEverything,
            CacheEntry.heuristicallyCacheable.contains(entry.status)
        else { return false }
        let fields = entry.headerFields
        return directives.maxAge != nil || fields[.expires] != nil || directives.isPublic || directives.isPrivate
            || entry.hasValidator
    }
}

/// How the ``HTTPCache`` answered a request, read from the response's `Outpost-Cache` field.
public enum CacheStatus: String, Sendable, Hashable {
    /// From the cache, fresh, without asking the server.
    case hit
    /// From the cache after the server answered `304 Not Modified`; the caller sees a 200.
    case revalidated
    /// From the cache although stale: the server could not be reached (or answered a 5xx and the
    /// response allowed `stale-if-error`). The `Age` field says how old it is.
    case stale
    /// From the server.
    case miss
}

extension ClientResponse {
    /// How an ``HTTPCache`` answered this request; `nil` when no cache handled it.
    public var cacheStatus: CacheStatus? {
        headerFields[HTTPCache.statusField].flatMap(CacheStatus.init(rawValue:))
    }
}

extension CacheEntry {
    /// Whether a stale copy may be served when the server cannot be reached (RFC 9111 §4.2.4).
    var mayServeStale: Bool {
        let directives = self.directives
        return !directives.noCache && !directives.mustRevalidate
    }

    /// The stored response as the caller receives it: status, fields (with `Age` and `Outpost-Cache`) and body.
    func clientResponse(_ status: CacheStatus, age: TimeInterval) -> ClientResponse {
        var fields = headerFields
        fields[.age] = String(Int(max(0, age)))
        fields[HTTPCache.statusField] = status.rawValue
        return ClientResponse(response: HTTPResponse(status: .init(code: self.status), headerFields: fields), body: body)
    }
}
