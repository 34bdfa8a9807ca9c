import AsyncHTTPClient
import Foundation
import JWTKit
import NIOCore

/// The endpoints an upstream provider's discovery document names (OpenID Connect Discovery §3).
struct UpstreamEndpoints: Sendable {
    var authorization: String
    var token: String
    /// RFC 7009 revocation; `nil` when the provider has none.
    var revocation: String?
    /// `token_endpoint_auth_methods_supported`; OpenID Connect's default is `client_secret_basic`.
    var tokenAuthMethods: [String]
    var scopes: [String]
}

/// Talks to an issuer: its discovery document, key set, token and revocation endpoints. `https`
/// only (plain `http` to a loopback address only, for tests); every reply at most
/// ``FederationConfiguration/maxDocumentBytes``, within ``FederationConfiguration/fetchTimeout``.
struct UpstreamDocuments: Sendable {
    let configuration: FederationConfiguration
    /// The endpoints of each provider's discovery document, kept for ``FederationConfiguration/keysMaxAge``.
    let endpointCache = UpstreamEndpointCache()

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    func keys(_ provider: UpstreamProvider) async throws -> UpstreamKeySet {
        let discovery = try await discovery(provider)
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

    /// The provider's authorization, token and revocation endpoints. Apple's discovery document
    /// names no revocation endpoint in every version; Apple documents `/auth/revoke`.
    ///
    /// Kept for ``FederationConfiguration/keysMaxAge``: every press of a "Continue with" button
    /// needs them, and presses are anyone's to make, so they cost the provider one request per
    /// provider and period, not one each.
    func endpoints(_ provider: UpstreamProvider) async throws -> UpstreamEndpoints {
        try await endpointCache.endpoints(provider, maxAge: configuration.keysMaxAge) {
            try await fetchEndpoints(provider)
        }
    }

    private func fetchEndpoints(_ provider: UpstreamProvider) async throws -> UpstreamEndpoints {
        let discovery = try await discovery(provider)
        guard let authorization = discovery["authorization_endpoint"] as? String,
            let token = discovery["token_endpoint"] as? String
        else {
            throw Failure("the discovery document of \(provider.issuer) names no authorization or token endpoint")
        }
        var revocation = discovery["revocation_endpoint"] as? String
        if revocation == nil, provider.kind == .apple, provider.issuer == UpstreamProvider.appleIssuer {
            revocation = UpstreamProvider.appleIssuer + "/auth/revoke"
        }
        return UpstreamEndpoints(
            authorization: authorization, token: token, revocation: revocation,
            tokenAuthMethods: discovery["token_endpoint_auth_methods_supported"] as? [String] ?? ["client_secret_basic"],
            scopes: discovery["scopes_supported"] as? [String] ?? [])
    }

    private func discovery(_ provider: UpstreamProvider) async throws -> [String: Any] {
        let base = provider.issuer.hasSuffix("/") ? String(provider.issuer.dropLast()) : provider.issuer
        let discovery = try await json(base + "/.well-known/openid-configuration")
        // OpenID Connect Discovery §4.3: the document's issuer is exactly the one it was fetched for.
        guard let issuer = discovery["issuer"] as? String, issuer == provider.issuer else {
            throw Failure("the discovery document of \(provider.issuer) names another issuer")
        }
        return discovery
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
        let (status, object) = try await send(address, form: nil)
        guard status == 200 else { throw Failure("\(address) answered \(status)") }
        guard let object else { throw Failure("\(address) did not answer a JSON object") }
        return object
    }

    /// A GET, or a POST of `form` (`application/x-www-form-urlencoded`) with `authorization`;
    /// returns the status and the body as a JSON object (`nil` when it is none).
    func send(_ address: String, form: [(String, String)]?, authorization: String? = nil) async throws
        -> (status: Int, object: [String: Any]?)
    {
        guard let url = URL(string: address), Self.isAllowed(url) else {
            throw Failure("\(address) is not an https URL (plain http is allowed to loopback addresses only)")
        }
        var request = HTTPClientRequest(url: address)
        request.headers.add(name: "Accept", value: "application/json")
        if let form {
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            request.body = .bytes(ByteBuffer(string: URLEncodedForm.encode(form)))
        }
        if let authorization { request.headers.add(name: "Authorization", value: authorization) }
        let response = try await HTTPClient.shared.execute(request, timeout: .init(configuration.fetchTimeout))
        if let final = response.url, !Self.isAllowed(final) {
            throw Failure("\(address) redirected to a URL that is not https")
        }
        let body = try await response.body.collect(upTo: configuration.maxDocumentBytes)
        let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
        return (Int(response.status.code), object)
    }
}

/// Discovered endpoints by provider (its issuer and kind), with the time they were fetched;
/// concurrent misses of one provider share one fetch. A failed fetch is not kept.
actor UpstreamEndpointCache {
    private var entries: [String: (endpoints: UpstreamEndpoints, fetchedAt: ContinuousClock.Instant)] = [:]
    private var fetches: [String: Task<UpstreamEndpoints, any Error>] = [:]

    func endpoints(
        _ provider: UpstreamProvider, maxAge: Duration, fetch: @escaping @Sendable () async throws -> UpstreamEndpoints
    ) async throws -> UpstreamEndpoints {
        let key = provider.kind.rawValue + " " + provider.issuer
        if let entry = entries[key], ContinuousClock.now - entry.fetchedAt < maxAge { return entry.endpoints }
        if let running = fetches[key] { return try await running.value }
        let task = Task { try await fetch() }
        fetches[key] = task
        defer { fetches[key] = nil }
        let endpoints = try await task.value
        entries[key] = (endpoints, .now)
        return endpoints
    }
}
