import HTTPTypes

/// The scopes the server knows, what each allows, and how routes check them.
///
/// - `records:read`: read and list records.
/// - `records:write`: create, replace, patch and delete records (the user's own, or unowned ones).
/// - `profile`: read the signed-in user's profile (`GET /me`).
/// - `records`: the scope of earlier versions; it still means `records:read records:write`.
///
/// A request without a token is judged by the route's own rules (reading records is open); a token
/// that lacks the scope a route needs gets 403 `insufficient_scope`.
enum Scope {
    static let recordsRead = "records:read"
    static let recordsWrite = "records:write"
    static let profile = "profile"
    /// Kept for clients and tokens from before `records:read`/`records:write` existed.
    static let legacyRecords = "records"

    /// What the consent and device pages say a scope allows.
    static func describe(_ scope: String) -> String {
        switch scope {
        case recordsRead: return "See your records"
        case recordsWrite: return "Create, change and delete your records"
        case legacyRecords: return "See, create, change and delete your records"
        case profile: return "See your username and entitlements"
        case OpenIDProvider.scope: return "Know who you are: your account id and when you signed in"
        default: return "Use “\(scope)”"
        }
    }

    /// The scopes a space-separated list grants, with the legacy `records` expanded.
    static func expand<S: Sequence>(_ scopes: S) -> Set<String> where S.Element: StringProtocol {
        var result: Set<String> = []
        for scope in scopes {
            let scope = String(scope)
            result.insert(scope)
            if scope == legacyRecords { result.formUnion([recordsRead, recordsWrite]) }
        }
        return result
    }

    static func expand(_ scope: String) -> Set<String> { expand(scope.split(separator: " ")) }

    /// The 403 for a token without `needed` (RFC 6750 §3.1).
    static func insufficient(_ needed: String) -> ServerError {
        ServerError(
            .forbidden, code: "insufficient_scope",
            message: "This access token lacks the '\(needed)' scope; sign in again asking for it",
            headers: [.wwwAuthenticate: "Bearer error=\"insufficient_scope\", scope=\"\(needed)\""])
    }
}

extension AuthenticatedCaller {
    /// Throws 403 `insufficient_scope` unless the token grants `scope`.
    func require(_ scope: String) throws {
        guard Scope.expand(self.scope).contains(scope) else { throw Scope.insufficient(scope) }
    }
}
