public import Foundation

/// Shows an authorization URL in a browser session that hands the redirect back: the seam of
/// ``Authenticator/signInWithWebAuthentication(_:scopes:)``.
///
/// On Apple platforms `SystemWebAuthenticator` runs an `ASWebAuthenticationSession`. Tests (and
/// platforms without one) pass their own, e.g. one that follows the URL to the server's pages and
/// returns where they redirect.
public protocol WebAuthenticating: Sendable {
    /// Shows `url` and returns the URL the browser was sent to once it matches `callback`.
    ///
    /// - Throws: ``AuthError`` ``AuthError/Code/cancelled`` when the user closed the session or
    ///   the task was cancelled; ``AuthError/Code/browserFailed`` when it could not be shown.
    func authenticate(at url: URL, callback: WebAuthenticationCallback) async throws -> URL
}

/// Which redirects end a web authentication session: those to the app's custom URL scheme, or to
/// an `https` address of one of the app's associated domains.
public enum WebAuthenticationCallback: Sendable, Hashable {
    /// Any URL of this scheme, e.g. `com.example.notes` for `com.example.notes:/oauth/callback`.
    /// A web authentication session catches it without the scheme being declared; an app that
    /// also receives it through its URL handler declares it in Info.plist (`CFBundleURLTypes`).
    case customScheme(String)
    /// `https://<host><path>`. The host must be an associated domain of the app
    /// (`webcredentials:<host>` in its `com.apple.developer.associated-domains` entitlement).
    case https(host: String, path: String)

    /// The callback for a registered redirect URI.
    ///
    /// - Throws: ``AuthError`` ``AuthError/Code/notConfigured`` for an `http` redirect URI (the
    ///   loopback flow, ``Authenticator/signInWithBrowser(scopes:)``, serves those), an `https`
    ///   one without a host, or a URI without a scheme.
    public init(redirectURI: URL) throws {
        guard let scheme = redirectURI.scheme?.lowercased(), !scheme.isEmpty else {
            throw AuthError(.notConfigured, "The redirect URI \(redirectURI) has no scheme")
        }
        switch scheme {
        case "https":
            guard let host = redirectURI.host, !host.isEmpty else {
                throw AuthError(.notConfigured, "The https redirect URI \(redirectURI) has no host")
            }
            let path = redirectURI.path.isEmpty ? "/" : redirectURI.path
            self = .https(host: host.lowercased(), path: path)
        case "http":
            throw AuthError(
                .notConfigured,
                "A web authentication session cannot return to an http redirect URI; register a custom scheme "
                    + "(myapp://oauth/callback) or an https one, or sign in with signInWithBrowser (loopback)")
        default:
            self = .customScheme(scheme)
        }
    }

    /// Whether `url` ends the session: its scheme (and for `https` its host and path) match.
    public func matches(_ url: URL) -> Bool {
        guard let scheme = url.scheme?.lowercased() else { return false }
        switch self {
        case .customScheme(let expected):
            return scheme == expected.lowercased()
        case .https(let host, let path):
            return scheme == "https" && url.host?.lowercased() == host.lowercased()
                && (url.path.isEmpty ? "/" : url.path) == path
        }
    }
}
