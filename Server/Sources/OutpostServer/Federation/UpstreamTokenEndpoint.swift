import Foundation

/// What an upstream provider's token endpoint issued for an authorization code.
struct UpstreamTokens: Sendable {
    var idToken: String
    /// Apple issues one; most providers only when asked for `offline_access`.
    var refreshToken: String?
}

/// The server as a client of an upstream provider's token endpoint (RFC 6749 §4.1.3, with PKCE)
/// and revocation endpoint (RFC 7009). The client authenticates as the provider asks: Apple with
/// its ES256 client secret (``AppleClientSecret``) in the body, others with the stored client
/// secret in HTTP Basic (OpenID Connect's default) or in the body when the provider only takes
/// `client_secret_post`, and public clients with their `client_id` alone. Every reply is bounded as
/// the key fetches are (``FederationConfiguration/maxDocumentBytes``, ``FederationConfiguration/fetchTimeout``).
struct UpstreamTokenEndpoint: Sendable {
    let documents: UpstreamDocuments

    init(configuration: FederationConfiguration) {
        self.documents = UpstreamDocuments(configuration: configuration)
    }

    typealias Failure = UpstreamDocuments.Failure

    /// Redeems `code` for the provider's tokens. `redirectURI` and `codeVerifier` are those of the
    /// authorization request; both are `nil` for a code an app obtained itself (Apple's
    /// `authorization_code` on the native sign-in), which was issued to the app's own client id
    /// (`clientID`, the ID token's audience) rather than the first one.
    func redeem(
        code: String, redirectURI: String?, codeVerifier: String?, clientID: String? = nil, provider: UpstreamProvider,
        endpoints: UpstreamEndpoints
    ) async throws -> UpstreamTokens {
        var form = [("grant_type", "authorization_code"), ("code", code)]
        if let redirectURI { form.append(("redirect_uri", redirectURI)) }
        if let codeVerifier { form.append(("code_verifier", codeVerifier)) }
        let (fields, authorization) = try await clientAuthentication(provider, clientID: clientID, endpoints: endpoints)
        let (status, object) = try await documents.send(endpoints.token, form: form + fields, authorization: authorization)
        guard status == 200, let object else {
            let error = object?["error"] as? String ?? "HTTP \(status)"
            throw Failure("\(provider.name)'s token endpoint refused the code (\(error))")
        }
        guard let idToken = object["id_token"] as? String, idToken.utf8.count <= 16 * 1024 else {
            throw Failure("\(provider.name)'s token endpoint answered no ID token")
        }
        let refresh = (object["refresh_token"] as? String).flatMap { $0.isEmpty || $0.utf8.count > 4096 ? nil : $0 }
        return UpstreamTokens(idToken: idToken, refreshToken: refresh)
    }

    /// Revokes a refresh token the provider issued (RFC 7009; Apple's `/auth/revoke` takes the same
    /// form). Returns `false` when the provider has no revocation endpoint; throws when it answered
    /// anything but 200 or could not be reached.
    func revoke(refreshToken: String, provider: UpstreamProvider, endpoints: UpstreamEndpoints) async throws -> Bool {
        guard let revocation = endpoints.revocation else { return false }
        let (fields, authorization) = try await clientAuthentication(provider, endpoints: endpoints)
        let form = [("token", refreshToken), ("token_type_hint", "refresh_token")] + fields
        let (status, _) = try await documents.send(revocation, form: form, authorization: authorization)
        guard status == 200 else { throw Failure("\(provider.name)'s revocation endpoint answered \(status)") }
        return true
    }

    /// The form fields and `Authorization` header that authenticate the server as the provider's client.
    private func clientAuthentication(
        _ provider: UpstreamProvider, clientID: String? = nil, endpoints: UpstreamEndpoints
    ) async throws -> (fields: [(String, String)], authorization: String?) {
        guard let clientID = clientID ?? provider.clientIDs.first else {
            throw Failure("\(provider.name) has no client id")
        }
        if let signer = provider.appleClientSecret {
            return ([("client_id", clientID), ("client_secret", try await signer.make(clientID: clientID))], nil)
        }
        guard let secret = provider.clientSecret else { return ([("client_id", clientID)], nil) }
        if !endpoints.tokenAuthMethods.contains("client_secret_basic"),
            endpoints.tokenAuthMethods.contains("client_secret_post")
        {
            return ([("client_id", clientID), ("client_secret", secret)], nil)
        }
        // RFC 6749 §2.3.1: both parts form-encoded before they are joined.
        func encoded(_ text: String) -> String { String(URLEncodedForm.encode([("", text)]).dropFirst()) }
        let pair = encoded(clientID) + ":" + encoded(secret)
        return ([], "Basic " + Data(pair.utf8).base64EncodedString())
    }
}
