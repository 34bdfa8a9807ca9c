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
