public import OutpostExpressions

/// Who asks, as a rule's `caller` reads it.
public struct RuleCaller: Sendable, Hashable {
    /// A valid access token came with the request (a user's, or a client's own with client credentials).
    public var signedIn: Bool
    /// The signed-in user's id; `nil` for anonymous and client-credentials callers.
    public var user: String?
    /// The OAuth client the token was issued to.
    public var client: String?
    public var scopes: [String]
    /// The user's roles (`outpost users role add`).
    public var roles: [String]

    public init(signedIn: Bool, user: String? = nil, client: String? = nil, scopes: [String] = [], roles: [String] = []) {
        self.signedIn = signedIn
        self.user = user
        self.client = client
        self.scopes = scopes
        self.roles = roles
    }

    /// Nobody signed in.
    public static let anonymous = RuleCaller(signedIn: false)

    /// Who the caller is, as plugins see it: `nil` when nobody signed in.
    var identity: CallerIdentity? {
        guard signedIn else { return nil }
        return CallerIdentity(userID: user, clientID: client ?? "", scopes: scopes)
    }

    /// `{"signed_in": …, "user": …, "client": …, "scopes": […], "roles": […]}`.
    public var value: ExpressionValue {
        .object([
            "signed_in": .bool(signedIn),
            "user": user.map(ExpressionValue.string) ?? .null,
            "client": client.map(ExpressionValue.string) ?? .null,
            "scopes": .array(scopes.map(ExpressionValue.string)),
            "roles": .array(roles.map(ExpressionValue.string)),
        ])
    }
}
