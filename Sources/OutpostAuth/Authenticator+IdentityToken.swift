import Foundation

extension Authenticator {
    /// Signs in with an ID token an upstream provider gave the app (Sign in with Apple, Google):
    /// the server checks it and answers its own tokens, by RFC 8693 token exchange at the token
    /// endpoint (`grant_type=urn:ietf:params:oauth:grant-type:token-exchange`,
    /// `subject_token_type=urn:ietf:params:oauth:token-type:id_token`).
    ///
    /// - Parameters:
    ///   - idToken: The provider's ID token, as the provider's SDK returned it.
    ///   - provider: The name the server's operator gave the provider (`outpost providers add NAME`).
    ///   - nonce: The nonce the app asked the provider for this token with (its raw ``SignInNonce/value``).
    ///   - scopes: The scopes to ask for; the registration's by default.
    /// - Throws: ``AuthError``: ``AuthError/Code/invalidGrant`` when the server refused the token
    ///   (its message says why: audience, expiry, nonce, signature, unknown provider),
    ///   ``AuthError/Code/unauthorizedClient`` when the client may not exchange tokens,
    ///   ``AuthError/Code/rateLimited``...
    @discardableResult
    public func signIn(idToken: String, provider: String, nonce: SignInNonce, scopes: [String]? = nil) async throws
        -> Credential
    {
        let scopes = scopes ?? configuration.registration.scopes
        var fields = [
            ("subject_token", idToken), ("subject_token_type", "urn:ietf:params:oauth:token-type:id_token"),
            ("provider", provider), ("nonce", nonce.value),
        ]
        if !scopes.isEmpty { fields.append(("scope", scopes.joined(separator: " "))) }
        let credential = try await tokens.requestToken(
            grant: "urn:ietf:params:oauth:grant-type:token-exchange", fields, endpoint: configuration.endpoints.token,
            fallbackScopes: scopes)
        return try await signedIn(credential, grant: "token_exchange")
    }
}
