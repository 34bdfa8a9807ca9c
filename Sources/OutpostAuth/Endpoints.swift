public import Foundation
@_spi(OutpostInternal) public import OutpostCore

/// Where the authorization server's endpoints are. Build it by hand, or from discovery
/// metadata with ``Endpoints/discover(issuer:client:overrides:)``.
public struct Endpoints: Sendable, Hashable {
    /// The server's issuer identifier (RFC 8414), when known.
    public var issuer: URL?
    /// `/oauth/authorize`: the browser flows start there.
    public var authorization: URL?
    /// `/oauth/token`: every grant ends there.
    public var token: URL
    /// `/oauth/revoke` (RFC 7009).
    public var revocation: URL?
    /// `/oauth/device_authorization` (RFC 8628).
    public var deviceAuthorization: URL?
    /// Ends the browser session (`/oauth/logout`), used by sign-out when asked to.
    public var logout: URL?
    /// Custom-provider sign-in (`POST /auth/login` on the Outpost server).
    public var providerLogin: URL?
    /// OpenID Connect: the issuer's signing keys (`jwks_uri`), to verify ID tokens.
    public var jwks: URL?
    /// OpenID Connect: the UserInfo endpoint (`userinfo_endpoint`).
    public var userInfo: URL?
    /// The signed-in user's account, which ``Authenticator/deleteAccount()`` deletes (`DELETE /me`
    /// on the Outpost server). Discovery metadata does not name it. Default: `nil`.
    public var account: URL?

    public init(
        issuer: URL? = nil, authorization: URL? = nil, token: URL, revocation: URL? = nil, deviceAuthorization: URL? = nil,
        logout: URL? = nil, providerLogin: URL? = nil, jwks: URL? = nil, userInfo: URL? = nil
    ) {
        self.issuer = issuer
        self.authorization = authorization
        self.token = token
        self.revocation = revocation
        self.deviceAuthorization = deviceAuthorization
        self.logout = logout
        self.providerLogin = providerLogin
        self.jwks = jwks
        self.userInfo = userInfo
    }

    /// The Outpost server's paths under `base` (`/oauth/authorize`, `/oauth/token`, `/oauth/revoke`,
    /// `/oauth/device_authorization`, `/oauth/logout`, `/auth/login`, `/.well-known/jwks.json`,
    /// `/userinfo`, and `/me` as ``account``), without a discovery round trip.
    public static func outpost(base: URL) -> Endpoints {
        var endpoints = Endpoints(
            issuer: base, authorization: base.appending(path: "oauth/authorize"), token: base.appending(path: "oauth/token"),
            revocation: base.appending(path: "oauth/revoke"),
            deviceAuthorization: base.appending(path: "oauth/device_authorization"),
            logout: base.appending(path: "oauth/logout"), providerLogin: base.appending(path: "auth/login"),
            jwks: base.appending(path: ".well-known/jwks.json"), userInfo: base.appending(path: "userinfo"))
        endpoints.account = base.appending(path: "me")
        return endpoints
    }

    /// Fetches `GET {issuer}/.well-known/oauth-authorization-server` (RFC 8414) through `client`
    /// and checks that the metadata names the same issuer.
    ///
    /// Only the endpoints the metadata gives are set: the logout endpoint from `end_session_endpoint`,
    /// the custom-provider endpoint from `outpost_provider_login_endpoint`. Endpoints the metadata
    /// leaves out (django-oauth-toolkit does not list its device endpoint) or gets wrong come from
    /// `overrides`, which win over the metadata.
    ///
    /// - Throws: ``AuthError`` ``AuthError/Code/discoveryFailed``.
    public static func discover(issuer: URL, client: OutpostClient, overrides: Overrides = Overrides()) async throws
        -> Endpoints
    {
        try await AuthorizationServerMetadata.fetch(issuer: issuer, client: client).endpoints.applying(overrides)
    }

    /// Endpoints that replace or complete what discovery metadata says; `nil` keeps the metadata's.
    ///
    /// ```swift
    /// let overrides = Endpoints.Overrides(deviceAuthorization: URL(string: "https://api.example.com/o/device-authorization/"))
    /// ```
    public struct Overrides: Sendable, Hashable {
        public var authorization: URL?
        public var token: URL?
        public var revocation: URL?
        public var deviceAuthorization: URL?
        public var logout: URL?
        public var providerLogin: URL?

        public init(
            authorization: URL? = nil, token: URL? = nil, revocation: URL? = nil, deviceAuthorization: URL? = nil,
            logout: URL? = nil, providerLogin: URL? = nil
        ) {
            self.authorization = authorization
            self.token = token
            self.revocation = revocation
            self.deviceAuthorization = deviceAuthorization
            self.logout = logout
            self.providerLogin = providerLogin
        }
    }

    /// These endpoints with `overrides` applied.
    public func applying(_ overrides: Overrides) -> Endpoints {
        var endpoints = self
        if let url = overrides.authorization { endpoints.authorization = url }
        if let url = overrides.token { endpoints.token = url }
        if let url = overrides.revocation { endpoints.revocation = url }
        if let url = overrides.deviceAuthorization { endpoints.deviceAuthorization = url }
        if let url = overrides.logout { endpoints.logout = url }
        if let url = overrides.providerLogin { endpoints.providerLogin = url }
        return endpoints
    }

    /// Fetches `GET {issuer}/.well-known/openid-configuration` (OpenID Connect Discovery 1.0 §4)
    /// through `client` and checks that it names the same issuer. Use it for sign-ins that ask for
    /// `openid`: it gives the JWKS and UserInfo endpoints too.
    ///
    /// - Throws: ``AuthError`` ``AuthError/Code/discoveryFailed``.
    public static func discoverOpenID(issuer: URL, client: OutpostClient) async throws -> Endpoints {
        try await AuthorizationServerMetadata.fetch(issuer: issuer, client: client, openID: true).endpoints
    }
}

/// Authorization server metadata (RFC 8414), the fields Outpost uses.
public struct AuthorizationServerMetadata: Sendable, Hashable, Codable {
    public var issuer: URL
    public var authorizationEndpoint: URL?
    public var tokenEndpoint: URL
    public var revocationEndpoint: URL?
    public var deviceAuthorizationEndpoint: URL?
    public var endSessionEndpoint: URL?
    public var providerLoginEndpoint: URL?
    public var grantTypesSupported: [String]?
    public var responseTypesSupported: [String]?
    public var codeChallengeMethodsSupported: [String]?
    public var tokenEndpointAuthMethodsSupported: [String]?
    public var scopesSupported: [String]?
    /// `jwks_uri`: the signing keys of ID tokens.
    public var jwksURI: URL?
    /// `userinfo_endpoint` (OpenID Connect).
    public var userInfoEndpoint: URL?
    /// `id_token_signing_alg_values_supported` (OpenID Connect).
    public var idTokenSigningAlgValuesSupported: [String]?

    enum CodingKeys: String, CodingKey {
        case issuer
        case authorizationEndpoint = "authorization_endpoint"
        case tokenEndpoint = "token_endpoint"
        case revocationEndpoint = "revocation_endpoint"
        case deviceAuthorizationEndpoint = "device_authorization_endpoint"
        case endSessionEndpoint = "end_session_endpoint"
        case providerLoginEndpoint = "outpost_provider_login_endpoint"
        case grantTypesSupported = "grant_types_supported"
        case responseTypesSupported = "response_types_supported"
        case codeChallengeMethodsSupported = "code_challenge_methods_supported"
        case tokenEndpointAuthMethodsSupported = "token_endpoint_auth_methods_supported"
        case scopesSupported = "scopes_supported"
        case jwksURI = "jwks_uri"
        case userInfoEndpoint = "userinfo_endpoint"
        case idTokenSigningAlgValuesSupported = "id_token_signing_alg_values_supported"
    }

    /// The endpoints these metadata describe, and no others.
    public var endpoints: Endpoints {
        Endpoints(
            issuer: issuer, authorization: authorizationEndpoint, token: tokenEndpoint, revocation: revocationEndpoint,
            deviceAuthorization: deviceAuthorizationEndpoint, logout: endSessionEndpoint,
            providerLogin: providerLoginEndpoint, jwks: jwksURI,
            userInfo: userInfoEndpoint)
    }

    /// The OpenID Provider configuration URL of `issuer`: `{issuer}/.well-known/openid-configuration`,
    /// appended to any path (OpenID Connect Discovery 1.0 §4.1).
    public static func openIDConfigurationURL(for issuer: URL) -> URL? {
        guard var components = URLComponents(url: issuer, resolvingAgainstBaseURL: false) else { return nil }
        var path = components.path
        while path.hasSuffix("/") { path.removeLast() }
        components.path = path + "/.well-known/openid-configuration"
        components.query = nil
        components.fragment = nil
        return components.url
    }

    /// The well-known URL of `issuer`: for `https://host/tenant` it is
    /// `https://host/.well-known/oauth-authorization-server/tenant` (RFC 8414, 3.1).
    public static func wellKnownURL(for issuer: URL) -> URL? {
        guard var components = URLComponents(url: issuer, resolvingAgainstBaseURL: false) else { return nil }
        var path = components.path
        while path.hasSuffix("/") { path.removeLast() }
        components.path = "/.well-known/oauth-authorization-server" + path
        components.query = nil
        components.fragment = nil
        return components.url
    }

    /// Fetches and checks the metadata of `issuer`.
    ///
    /// - Throws: ``AuthError`` ``AuthError/Code/discoveryFailed`` when the document cannot be
    ///   fetched or decoded, or names another issuer (a mix-up defence, RFC 8414 section 3.3).
    /// - Parameters:
    ///   - issuer: The authorization server's issuer identifier.
    ///   - client: The client that fetches the document (its transport, timeout and logger).
    ///   - openID: Read the OpenID Provider configuration (OpenID Connect Discovery) rather
    ///     than the RFC 8414 document.
    public static func fetch(issuer: URL, client: OutpostClient, openID: Bool = false) async throws
        -> AuthorizationServerMetadata
    {
        guard let url = openID ? openIDConfigurationURL(for: issuer) : wellKnownURL(for: issuer) else {
            throw AuthError(.discoveryFailed, "'\(issuer)' is not a valid issuer URL")
        }
        let metadata: AuthorizationServerMetadata
        do {
            metadata = try await client.send(.get(url.absoluteString), decoding: AuthorizationServerMetadata.self)
        } catch {
            throw AuthError(
                .discoveryFailed,
                "The discovery metadata at \(url.absoluteString) could not be read; check the issuer URL and that the server is up",
                underlying: error)
        }
        guard Self.sameIssuer(metadata.issuer, issuer) else {
            throw AuthError(
                .discoveryFailed,
                "The metadata names the issuer \(metadata.issuer.absoluteString), not \(issuer.absoluteString); refusing it (RFC 8414, 3.3)"
            )
        }
        return metadata
    }

    static func sameIssuer(_ first: URL, _ second: URL) -> Bool {
        func normal(_ url: URL) -> String {
            var text = url.absoluteString
            while text.hasSuffix("/") { text.removeLast() }
            return text
        }
        return normal(first) == normal(second)
    }
}
