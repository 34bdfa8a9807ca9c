public import Foundation
@_spi(OutpostInternal) public import OutpostCore
@_spi(OutpostInternal) import OutpostSupport

/// An OpenID Connect ID token: the compact JWT and its claims.
///
/// The ``Authenticator`` only keeps an ID token it has verified with ``IDTokenVerifier`` (signature,
/// issuer, audience, expiry, nonce, `at_hash`). Decoding one from a store does not verify it again:
/// it was checked when it arrived.
///
/// Its `description` shows the subject and issuer, never the token.
public struct IDToken: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The compact serialization (`header.payload.signature`).
    public let rawValue: String
    /// The claims of its payload.
    public let claims: IDTokenClaims

    /// Reads the claims of `rawValue` **without verifying it**. Use ``IDTokenVerifier`` for tokens
    /// that come from elsewhere.
    ///
    /// - Throws: ``AuthError`` ``AuthError/Code/idTokenInvalid`` when it is not a JWT with the
    ///   claims OpenID Connect requires.
    public init(unverified rawValue: String) throws {
        let parts = rawValue.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(parts[1]).map({ Data($0) }),
            let json = try? JSONValue(parsing: payload), let object = json.objectValue
        else {
            throw AuthError(.idTokenInvalid, "The id_token is not a JSON Web Token; the server sent something else")
        }
        self.rawValue = rawValue
        self.claims = try IDTokenClaims(object)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        try self.init(unverified: try container.decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String {
        "IDToken(sub \(claims.subject), iss \(claims.issuer), expires \(claims.expiresAt), <redacted>)"
    }
}

/// The claims of an ID token (OpenID Connect Core §2), named, plus every claim as sent in ``all``.
public struct IDTokenClaims: Sendable, Hashable {
    /// `iss`: who issued it.
    public var issuer: String
    /// `sub`: the user, unique and stable at this issuer.
    public var subject: String
    /// `aud`: the client ids it is meant for (one, usually).
    public var audience: [String]
    /// `exp`.
    public var expiresAt: Date
    /// `iat`.
    public var issuedAt: Date
    /// `auth_time`: when the user last signed in, when the server says.
    public var authTime: Date?
    /// `nonce`: the value the authorization request sent, when it sent one.
    public var nonce: String?
    /// `at_hash`: binds the token to the access token issued with it.
    public var accessTokenHash: String?
    /// `azp`: the client it was issued to, when there are several audiences.
    public var authorizedParty: String?
    /// Every claim of the payload, including those above and any the server adds (`preferred_username`...).
    public var all: [String: JSONValue]

    /// A claim by name, e.g. `claims["preferred_username"]`.
    public subscript(name: String) -> JSONValue? { all[name] }

    init(_ object: [String: JSONValue]) throws {
        func missing(_ name: String) -> AuthError {
            AuthError(
                .idTokenInvalid, "The id_token lacks the '\(name)' claim OpenID Connect requires; the server is not compliant")
        }
        func date(_ name: String) -> Date? { object[name]?.doubleValue.map { Date(timeIntervalSince1970: $0) } }
        guard let issuer = object["iss"]?.stringValue else { throw missing("iss") }
        guard let subject = object["sub"]?.stringValue else { throw missing("sub") }
        let audience: [String]
        switch object["aud"] {
        case .string(let single)?: audience = [single]
        case .array(let list)?: audience = list.compactMap(\.stringValue)
        default: throw missing("aud")
        }
        guard let expiresAt = date("exp") else { throw missing("exp") }
        guard let issuedAt = date("iat") else { throw missing("iat") }
        self.issuer = issuer
        self.subject = subject
        self.audience = audience
        self.expiresAt = expiresAt
        self.issuedAt = issuedAt
        self.authTime = date("auth_time")
        self.nonce = object["nonce"]?.stringValue
        self.accessTokenHash = object["at_hash"]?.stringValue
        self.authorizedParty = object["azp"]?.stringValue
        self.all = object
    }
}
