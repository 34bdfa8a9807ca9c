import Foundation

extension AuthStorage {
    /// Registers an OAuth client and returns it with its secret (confidential clients only). The
    /// secret is shown this once: only its hash is stored.
    ///
    /// - Throws: ``ServerError`` when a grant is unknown or a redirect URI is not an absolute URI.
    package func registerClient(
        name: String, redirectURIs: [String], grants: [String], scopes: [String], confidential: Bool, id: String? = nil
    ) async throws -> (client: OAuthClient, secret: String?) {
        for grant in grants where !OAuthClient.allGrants.contains(grant) {
            throw ServerError.badRequest(
                "invalid_grant_name", "Unknown grant '\(grant)'; use: \(OAuthClient.allGrants.joined(separator: ", "))")
        }
        for uri in redirectURIs { try Self.checkRedirectURI(uri) }
        if (grants.contains("authorization_code") || grants.contains("implicit")) && redirectURIs.isEmpty {
            throw ServerError.badRequest("missing_redirect_uri", "Browser grants need at least one --redirect-uri")
        }
        if grants.contains("client_credentials") && !confidential {
            throw ServerError.badRequest("needs_secret", "client_credentials needs a confidential client (--confidential)")
        }
        let secret = confidential ? Secrets.token(prefix: "ocs_") : nil
        let client = OAuthClient(
            id: id ?? "oc_" + Identifiers.random(), name: name, secretHash: secret.map(Secrets.hash),
            redirectURIs: redirectURIs, grants: grants, scopes: scopes, createdAt: AuthService.now())
        try await saveClient(client)
        return (client, secret)
    }

    /// Accepts `https` URIs, `http` on a loopback address (any port, RFC 8252 §7.3) and private-use
    /// schemes of native apps (`com.example.app:/cb`, `myapp://oauth`, RFC 8252 §7.1); refuses
    /// schemes a browser runs or reads locally (`javascript:`, `data:`, `file:`…) and plain `http`
    /// to any other host, where the code would cross the network unencrypted.
    static func checkRedirectURI(_ uri: String) throws {
        guard let components = URLComponents(string: uri), let scheme = components.scheme?.lowercased(),
            components.fragment == nil
        else {
            throw ServerError.badRequest(
                "invalid_redirect_uri", "'\(uri)' is not an absolute URI without a fragment (e.g. https://app.example/cb)")
        }
        let refused: Set<String> = [
            "javascript", "data", "file", "vbscript", "blob", "about", "filesystem", "view-source", "ftp", "ws", "wss",
        ]
        if refused.contains(scheme) {
            throw ServerError.badRequest(
                "invalid_redirect_uri",
                "'\(uri)': the \(scheme): scheme cannot be a redirect URI; use https, loopback http or an app's own scheme")
        }
        switch scheme {
        case "https":
            guard let host = components.host, !host.isEmpty else {
                throw ServerError.badRequest("invalid_redirect_uri", "'\(uri)' has no host")
            }
        case "http":
            let host = (components.host ?? "").lowercased()
            guard ["127.0.0.1", "::1", "[::1]", "localhost"].contains(host) else {
                throw ServerError.badRequest(
                    "invalid_redirect_uri",
                    "'\(uri)': plain http is only for loopback addresses (http://127.0.0.1/...); use https for \(host.isEmpty ? "other hosts" : host)"
                )
            }
        default:
            break  // A private-use scheme of a native app.
        }
    }

    /// Creates a user with a password (Bcrypt with `cost`), for administration and tests.
    package func addUser(username: String, password: String, cost: UInt8 = 12) async throws -> StoredUser {
        let service = PasswordHasher(cost: cost)
        return try await createUser(username: username, passwordHash: try await service.hash(password))
    }
}
