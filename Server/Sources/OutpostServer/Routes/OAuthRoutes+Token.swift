import Foundation
import HTTPTypes
import Hummingbird
@_spi(OutpostInternal) import OutpostCore

/// The token endpoint (every grant) and revocation (RFC 7009).
extension OAuthRoutes {
    /// The token endpoint, counted by grant and outcome (`outpost_sign_ins_total`).
    func token(_ request: Request, _ context: OutpostRequestContext) async throws -> Response {
        let fields: [String: String]
        do {
            fields = try await form(request)
        } catch {
            instruments.signIn(grant: nil, success: false)
            throw error
        }
        do {
            let response = try await token(fields, request, context)
            instruments.signIn(grant: fields["grant_type"], success: true)
            return response
        } catch {
            instruments.signIn(grant: fields["grant_type"], success: false)
            throw error
        }
    }

    func token(_ fields: [String: String], _ request: Request, _ context: OutpostRequestContext) async throws -> Response {
        guard let grant = fields["grant_type"] else { throw OAuthError.invalidRequest("grant_type is missing") }
        let client = try await auth.authenticateClient(
            fields, authorization: request.headers[.authorization], address: context.clientAddress)
        let reply: JSONValue
        switch grant {
        case "authorization_code":
            try require(client, "authorization_code")
            reply = try await exchangeCode(fields, client: client, issuer: issuer(request))
        case "refresh_token":
            try require(client, "refresh_token")
            guard let refreshToken = fields["refresh_token"] else { throw OAuthError.invalidRequest("refresh_token is missing") }
            reply = try await openID.afterRefresh(
                auth.refresh(refreshToken, client: client), client: client, issuer: issuer(request))
        case "password":
            try require(client, "password")
            guard let username = fields["username"], let password = fields["password"] else {
                throw OAuthError.invalidRequest("username and password are required")
            }
            let scope = try AuthService.grantedScope(requested: fields["scope"], client: client)
            let user = try await auth.verifyPassword(
                username: username, password: password, address: context.clientAddress, method: "password",
                clientID: client.id)
            reply = try await auth.issueTokens(client: client, userID: user.id, scope: scope)
        case "client_credentials":
            try require(client, "client_credentials")
            guard client.isConfidential else {
                throw OAuthError.unauthorizedClient("client_credentials needs a confidential client")
            }
            let scope = try AuthService.grantedScope(requested: fields["scope"], client: client)
            reply = try await auth.issueTokens(client: client, userID: nil, scope: scope, refresh: false)
        case "urn:ietf:params:oauth:grant-type:device_code":
            try require(client, "device_code")
            reply = try await pollDevice(fields, client: client)
        case IDTokenExchange.grantType:
            try require(client, "token_exchange")
            reply = try await federation.exchange(fields, client: client, address: context.clientAddress)
        default:
            throw OAuthError(code: "unsupported_grant_type", description: "grant_type '\(grant)' is not supported")
        }
        return Response.json(reply, headers: [.cacheControl: "no-store"])
    }

    func require(_ client: OAuthClient, _ grant: String) throws {
        guard client.grants.contains(grant) else {
            if grant == "password" {
                throw OAuthError.unauthorizedClient(
                    "Client '\(client.id)' may not use the password grant: it is legacy (RFC 9700 §2.4) and off unless a client "
                        + "opts in (outpost clients add NAME --grant password); prefer the browser or device flow")
            }
            throw OAuthError.unauthorizedClient("Client '\(client.id)' may not use the \(grant) grant")
        }
    }

    func exchangeCode(_ fields: [String: String], client: OAuthClient, issuer: String) async throws -> JSONValue {
        guard let code = fields["code"], let redirectURI = fields["redirect_uri"] else {
            throw OAuthError.invalidRequest("code and redirect_uri are required")
        }
        let hash = Secrets.hash(code)
        guard let stored = try await auth.storage.useCode(hash: hash) else {
            if let family = try await auth.storage.codeFamily(hash: hash) {
                // A second use means the code leaked: end what the first use obtained (RFC 6749 §4.1.2).
                try await auth.storage.revokeFamily(family)
                auth.logger.warning("authorization code replayed; its tokens are revoked", metadata: ["client": "\(client.id)"])
                throw OAuthError.invalidGrant(
                    "The authorization code was already used; the tokens issued for it are now revoked. Sign in again")
            }
            throw OAuthError.invalidGrant("The authorization code is unknown or was already used")
        }
        guard stored.clientID == client.id, stored.expiresAt > AuthService.now() else {
            throw OAuthError.invalidGrant("The authorization code has expired or belongs to another client")
        }
        guard stored.redirectURI == redirectURI else {
            throw OAuthError.invalidGrant("redirect_uri must be the one sent to /oauth/authorize")
        }
        let verifier = fields["code_verifier"]
        if let verifier, !Self.isValidVerifier(verifier) {
            throw OAuthError.invalidGrant(
                "code_verifier must be 43–128 characters of A–Z, a–z, 0–9, '-', '.', '_', '~' (RFC 7636 §4.1)")
        }
        if let challenge = stored.codeChallenge {
            guard let verifier, Secrets.equal(Secrets.s256(verifier), challenge) else {
                throw OAuthError.invalidGrant("The PKCE code_verifier does not match the code_challenge")
            }
        } else if verifier != nil {
            // RFC 9700 §4.8.2: a verifier for a code issued without a challenge is a downgrade attempt.
            throw OAuthError.invalidGrant("This code was issued without a code_challenge, so a code_verifier is refused")
        }
        let reply = try await auth.issueTokens(client: client, userID: stored.userID, scope: stored.scope, family: stored.family)
        return try await openID.afterCodeExchange(reply, codeHash: Secrets.hash(code), client: client, issuer: issuer)
    }

    /// RFC 7636 §4.1: 43–128 unreserved characters.
    static func isValidVerifier(_ verifier: String) -> Bool {
        (43...128).contains(verifier.utf8.count)
            && verifier.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"),
                    UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                    return true
                default:
                    return false
                }
            }
    }

    func revoke(_ request: Request, _ context: OutpostRequestContext) async throws -> Response {
        let fields = try await form(request)
        let client = try await auth.authenticateClient(
            fields, authorization: request.headers[.authorization], address: context.clientAddress)
        guard let token = fields["token"] else { throw OAuthError.invalidRequest("token is missing") }
        try await auth.revoke(token, client: client)
        return Response(status: .ok, headers: [.cacheControl: "no-store"])
    }
}
