import AsyncHTTPClient
import Foundation
import JWTKit
import Logging

/// The key sets of upstream providers, fetched through their discovery documents and kept for
/// ``FederationConfiguration/keysMaxAge``.
///
/// A token whose `kid` the cached set lacks may mean the provider rotated its keys: ``refetch(_:)``
/// fetches the set again, at most once per ``FederationConfiguration/unknownKeyRefetchInterval``
/// per provider, so a flood of tokens with made-up key ids costs the provider one request per
/// interval. Concurrent fetches of one provider share one request. The cache is per process;
/// every instance fetches for itself, as every relying party does.
actor UpstreamKeyCache {
    struct Entry {
        var keys: UpstreamKeySet
        var fetchedAt: ContinuousClock.Instant
    }

    private let configuration: FederationConfiguration
    private let logger: Logger
    private var entries: [String: Entry] = [:]
    private var fetches: [String: Task<UpstreamKeySet, any Error>] = [:]
    private var lastRefetch: [String: ContinuousClock.Instant] = [:]

    init(configuration: FederationConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// The provider's keys: cached while younger than ``FederationConfiguration/keysMaxAge``.
    func keys(_ provider: UpstreamProvider) async throws -> UpstreamKeySet {
        if let entry = entries[provider.issuer], ContinuousClock.now - entry.fetchedAt < configuration.keysMaxAge {
            return entry.keys
        }
        return try await fetch(provider).keys
    }

    /// The provider's keys fetched again after a token named a key the cached set lacks, or `nil`
    /// when the last such fetch was less than ``FederationConfiguration/unknownKeyRefetchInterval`` ago.
    func refetch(_ provider: UpstreamProvider) async throws -> UpstreamKeySet? {
        let now = ContinuousClock.now
        if let last = lastRefetch[provider.issuer], now - last < configuration.unknownKeyRefetchInterval {
            return nil
        }
        lastRefetch[provider.issuer] = now
        return try await fetch(provider).keys
    }

    private func fetch(_ provider: UpstreamProvider) async throws -> Entry {
        if let running = fetches[provider.issuer] { return Entry(keys: try await running.value, fetchedAt: .now) }
        let fetcher = UpstreamDocuments(configuration: configuration)
        let task = Task { try await fetcher.keys(provider) }
        fetches[provider.issuer] = task
        defer { fetches[provider.issuer] = nil }
        do {
            let keys = try await task.value
            let entry = Entry(keys: keys, fetchedAt: .now)
            entries[provider.issuer] = entry
            return entry
        } catch {
            logger.warning(
                "fetching an upstream provider's keys failed",
                metadata: ["provider": "\(provider.name)", "error": "\(error)"])
            throw error
        }
    }
}

/// One provider's signing keys, by `kid`.
struct UpstreamKeySet: Sendable {
    let keys: JWTKeyCollection
    let kids: Set<String>
}

/// Fetches an issuer's discovery document and key set: `https` only (plain `http` to a loopback
/// address only, for tests), at most ``FederationConfiguration/maxDocumentBytes`` each, within
/// ``FederationConfiguration/fetchTimeout``.
struct UpstreamDocuments: Sendable {
    let configuration: FederationConfiguration

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    func keys(_ provider: UpstreamProvider) async throws -> UpstreamKeySet {
        let base = provider.issuer.hasSuffix("/") ? String(provider.issuer.dropLast()) : provider.issuer
        let discovery = try await json(base + "/.well-known/openid-configuration")
        // OpenID Connect Discovery §4.3: the document's issuer is exactly the one it was fetched for.
        guard let issuer = discovery["issuer"] as? String, issuer == provider.issuer else {
            throw Failure("the discovery document of \(provider.issuer) names another issuer")
        }
        guard let jwksURI = discovery["jwks_uri"] as? String else {
            throw Failure("the discovery document of \(provider.issuer) has no jwks_uri")
        }
        let set = try await json(jwksURI)
        guard let listed = set["keys"] as? [Any] else { throw Failure("the key set of \(provider.issuer) has no keys") }
        let collection = JWTKeyCollection()
        var kids: Set<String> = []
        for case let key as [String: Any] in listed {
            // Keys meant for encryption, and key types jwt-kit does not verify with, are skipped.
            if let use = key["use"] as? String, use != "sig" { continue }
            guard let data = try? JSONSerialization.data(withJSONObject: key),
                let jwk = try? JSONDecoder().decode(JWK.self, from: data), let kid = jwk.keyIdentifier?.string,
                // No default key: a token is checked with the key its `kid` names, or not at all.
                (try? await collection.add(jwk: jwk, isDefault: false)) != nil
            else { continue }
            kids.insert(kid)
        }
        guard !kids.isEmpty else { throw Failure("the key set of \(provider.issuer) has no signing key the server can use") }
        return UpstreamKeySet(keys: collection, kids: kids)
    }

    /// Whether the server may fetch from `url`: `https`, or `http` to a loopback address.
    static func isAllowed(_ url: URL) -> Bool {
        switch url.scheme?.lowercased() {
        case "https": return url.host != nil
        case "http": return ["127.0.0.1", "::1", "[::1]", "localhost"].contains(url.host?.lowercased() ?? "")
        default: return false
        }
    }

    private func json(_ address: String) async throws -> [String: Any] {
        guard let url = URL(string: address), Self.isAllowed(url) else {
            throw Failure("\(address) is not an https URL (plain http is allowed to loopback addresses only)")
        }
        var request = HTTPClientRequest(url: address)
        request.headers.add(name: "Accept", value: "application/json")
        let response = try await HTTPClient.shared.execute(request, timeout: .init(configuration.fetchTimeout))
        if let final = response.url, !Self.isAllowed(final) {
            throw Failure("\(address) redirected to a URL that is not https")
        }
        guard response.status == .ok else { throw Failure("\(address) answered \(response.status.code)") }
        let body = try await response.body.collect(upTo: configuration.maxDocumentBytes)
        guard let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any] else {
            throw Failure("\(address) did not answer a JSON object")
        }
        return object
    }
}
