public import Foundation

/// Who the client is at the authorization server: its id, its secret when it is confidential,
/// where the browser comes back to, and the scopes it asks for by default.
public struct ClientRegistration: Sendable, Hashable {
    /// How a confidential client proves its identity at the token and revocation endpoints.
    public enum AuthenticationMethod: String, Sendable, Hashable {
        /// Public client: sends `client_id` only.
        case none
        /// HTTP Basic with the form-encoded id and secret (RFC 6749, 2.3.1). The default with a secret.
        case clientSecretBasic = "client_secret_basic"
        /// `client_id` and `client_secret` in the form body.
        case clientSecretPost = "client_secret_post"
    }

    public var clientID: String
    /// The secret of a confidential client. Never logged. Public clients (apps, CLIs) have none.
    public var clientSecret: String?
    /// The redirect URI of the browser flows: a custom scheme (`myapp://oauth/callback`) or, for
    /// the loopback listener, `http://127.0.0.1/callback` (the listener fills in its port).
    public var redirectURI: URL?
    /// Scopes asked for when a flow is not given any.
    public var scopes: [String]
    /// Default: ``AuthenticationMethod/clientSecretBasic`` with a secret, ``AuthenticationMethod/none`` without.
    public var authenticationMethod: AuthenticationMethod

    public init(
        clientID: String, clientSecret: String? = nil, redirectURI: URL? = nil, scopes: [String] = [],
        authenticationMethod: AuthenticationMethod? = nil
    ) {
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.redirectURI = redirectURI
        self.scopes = scopes
        self.authenticationMethod = authenticationMethod ?? (clientSecret == nil ? .none : .clientSecretBasic)
    }
}

extension ClientRegistration: CustomStringConvertible {
    /// Shows the client id, never the secret.
    public var description: String {
        "ClientRegistration(\(clientID), secret \(clientSecret == nil ? "none" : "<redacted>"), \(authenticationMethod.rawValue))"
    }
}
