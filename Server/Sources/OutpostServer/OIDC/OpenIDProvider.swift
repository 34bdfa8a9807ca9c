import Crypto
import Foundation
import Hummingbird
import JWTKit
@_spi(OutpostInternal) import OutpostCore

/// OpenID Connect on top of the authorization server: carries the `nonce` and the time of sign-in
/// from the authorization request through the code to the token response, and adds a signed
/// `id_token` there when the grant's scope has `openid`.
///
/// ID tokens come from the authorization code grant and, when
/// ``OpenIDConfiguration/idTokenOnRefresh`` is set, from refreshes of a family that began with
/// one (OpenID Connect Core §12.2: same `sub`, `aud` and `auth_time`, a new `iat`, no `nonce`).
/// Other grants (password, device, client credentials) return no ID token.
struct OpenIDProvider: Sendable {
    let auth: AuthService
    let configuration: OpenIDConfiguration
    let keys: SigningKeyRing

    init(auth: AuthService, configuration: OpenIDConfiguration) {
        self.auth = auth
        self.configuration = configuration
        self.keys = SigningKeyRing(storage: auth.storage, gracePeriod: configuration.signingKeyGracePeriod)
    }

    static let scope = "openid"
    /// A longer `nonce` is refused at the authorization endpoint.
    static let maxNonceLength = 512

    static func wantsIDToken(_ scope: String) -> Bool {
        scope.split(separator: " ").contains { $0 == Substring(Self.scope) }
    }

    // MARK: Authorization endpoint

    /// Checks the `nonce` of an authorization request; `nil` when there is none.
    static func nonce(_ parameters: [String: String]) throws -> String? {
        guard let nonce = parameters["nonce"], !nonce.isEmpty else { return nil }
        guard nonce.utf8.count <= maxNonceLength else {
            throw OAuthError.invalidRequest("nonce is longer than \(maxNonceLength) bytes")
        }
        return nonce
    }

    /// `prompt=none` (OpenID Connect Core §3.1.2.1): the server may show nothing, but it always asks
    /// for consent, so the answer is an error for the client: `login_required` without a browser
    /// session, else `consent_required`. `nil` for any other prompt.
    static func promptNone(_ request: Request, signedIn: Bool) throws -> [String: String]? {
        let prompts = (try request.queryFields()["prompt"] ?? "").split(separator: " ")
        guard prompts.contains("none") else { return nil }
        if prompts.count > 1 {
            return ["error": "invalid_request", "error_description": "prompt=none cannot be combined with other values"]
        }
        return signedIn
            ? ["error": "consent_required", "error_description": "This server asks the user to allow every sign-in"]
            : ["error": "login_required", "error_description": "The user is not signed in"]
    }

    /// Remembers the nonce and the time of sign-in of a new authorization code, when its scope has `openid`.
    /// `signedInAt` is when the user just typed their password (their new browser session's start);
    /// without it, their existing browser session's start counts.
    func rememberCode(hash: String, scope: String, nonce: String?, request: Request, signedInAt: Int64?) async throws {
        guard Self.wantsIDToken(scope) else { return }
        let now = AuthService.now()
        var authTime = signedInAt ?? now
        if signedInAt == nil, let session = Self.sessionCookie(request),
            let expiry = try await auth.storage.browserSessionExpiry(hash: Secrets.hash(session), now: now)
        {
            authTime = min(now, expiry - AuthService.milliseconds(auth.configuration.browserSessionLifetime))
        }
        try await auth.storage.saveOpenIDCode(
            hash: hash, nonce: nonce, authTime: authTime,
            expiresAt: now + AuthService.milliseconds(auth.configuration.authorizationCodeLifetime))
    }

    static func sessionCookie(_ request: Request) -> String? {
        guard let cookies = request.headers[.cookie] else { return nil }
        for part in cookies.split(separator: ";") {
            let pair = part.trimmingCharacters(in: .whitespaces)
            if pair.hasPrefix(OAuthRoutes.sessionCookie + "=") {
                return String(pair.dropFirst(OAuthRoutes.sessionCookie.count + 1))
            }
        }
        return nil
    }

    // MARK: Token endpoint

    /// Adds an `id_token` to the token response of an authorization code exchange whose scope has `openid`.
    func afterCodeExchange(_ reply: JSONValue, codeHash: String, client: OAuthClient, issuer: String) async throws
        -> JSONValue
    {
        let context = try await auth.storage.takeOpenIDCode(hash: codeHash)
        guard let accessToken = reply["access_token"]?.stringValue,
            let token = try await auth.storage.token(hash: Secrets.hash(accessToken)),
            Self.wantsIDToken(token.scope), let userID = token.userID
        else { return reply }
        let authTime = context?.authTime ?? AuthService.now()
        if reply["refresh_token"] != nil {
            try await auth.storage.saveOpenIDFamily(
                token.family, authTime: authTime,
                expiresAt: AuthService.now() + AuthService.milliseconds(auth.configuration.refreshTokenLifetime))
        }
        let idToken = try await self.idToken(
            issuer: issuer, subject: userID, audience: client.id, authTime: authTime, nonce: context?.nonce,
            accessToken: accessToken)
        return Self.adding(idToken, to: reply)
    }

    /// Adds a new `id_token` to a refresh's token response when the family began with `openid`.
    func afterRefresh(_ reply: JSONValue, client: OAuthClient, issuer: String) async throws -> JSONValue {
        guard configuration.idTokenOnRefresh, let accessToken = reply["access_token"]?.stringValue,
            let token = try await auth.storage.token(hash: Secrets.hash(accessToken)),
            Self.wantsIDToken(token.scope), let userID = token.userID,
            let authTime = try await auth.storage.openIDFamilyAuthTime(token.family)
        else { return reply }
        let idToken = try await self.idToken(
            issuer: issuer, subject: userID, audience: client.id, authTime: authTime, nonce: nil, accessToken: accessToken)
        return Self.adding(idToken, to: reply)
    }

    static func adding(_ idToken: String, to reply: JSONValue) -> JSONValue {
        guard case .object(var fields) = reply else { return reply }
        fields["id_token"] = .string(idToken)
        return .object(fields)
    }

    /// Signs an ID token (OpenID Connect Core §2) with the key in use: header `alg` RS256, `kid`,
    /// `typ` JWT; claims `iss`, `sub`, `aud`, `exp`, `iat`, `auth_time`, `nonce` (when the request
    /// had one) and `at_hash`.
    func idToken(
        issuer: String, subject: String, audience: String, authTime: Int64, nonce: String?, accessToken: String?
    ) async throws -> String {
        let key = try await keys.current()
        let now = AuthService.now() / 1000
        let claims = IDTokenClaims(
            iss: issuer, sub: subject, aud: audience, exp: now + AuthService.milliseconds(configuration.idTokenLifetime) / 1000,
            iat: now, authTime: authTime / 1000, nonce: nonce, atHash: accessToken.map(Self.atHash))
        let privateKey = try Insecure.RSA.PrivateKey(pem: key.privateKeyPEM)
        let collection = JWTKeyCollection()
        await collection.add(rsa: privateKey, digestAlgorithm: .sha256, kid: JWKIdentifier(string: key.kid))
        return try await collection.sign(claims, kid: JWKIdentifier(string: key.kid))
    }

    /// `at_hash`: the left half of SHA-256 of the access token's ASCII bytes, base64url (OpenID Connect Core §3.1.3.6).
    static func atHash(_ accessToken: String) -> String {
        Secrets.base64URL(Array(SHA256.hash(data: Data(accessToken.utf8))).prefix(16))
    }
}

/// The claims of an ID token the server issues.
struct IDTokenClaims: JWTPayload, Equatable {
    var iss: String
    var sub: String
    var aud: String
    var exp: Int64
    var iat: Int64
    var authTime: Int64
    var nonce: String?
    var atHash: String?

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, exp, iat, nonce
        case authTime = "auth_time"
        case atHash = "at_hash"
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
