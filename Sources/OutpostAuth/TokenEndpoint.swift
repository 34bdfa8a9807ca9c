import Foundation
import HTTPTypes
import Logging
@_spi(OutpostInternal) import OutpostCore
@_spi(OutpostInternal) import OutpostSupport

/// Talks to the token, device and revocation endpoints. It sends through its own middlewares and the
/// client's transport: not the client's middlewares (an auth middleware on the same client must not
/// see its own refresh), no automatic retries (a grant is spent once).
struct TokenEndpoint: Sendable {
    let client: OutpostClient
    let registration: ClientRegistration
    let logger: Logger
    let now: @Sendable () -> Date
    var middlewares: [any ClientMiddleware] = []

    /// A `Credential` from a grant. `fallbackScopes` fill in when the answer has no `scope`;
    /// `previousRefreshToken` when it has no `refresh_token` (a server that does not rotate).
    func requestToken(
        grant: String, _ fields: [(String, String)], endpoint: URL, fallbackScopes: [String],
        previousRefreshToken: String? = nil
    ) async throws -> Credential {
        try await requestTokenAndIDToken(
            grant: grant, fields, endpoint: endpoint, fallbackScopes: fallbackScopes, previousRefreshToken: previousRefreshToken
        ).credential
    }

    /// As ``requestToken(grant:_:endpoint:fallbackScopes:previousRefreshToken:)``, with the answer's
    /// `id_token`, still unverified.
    func requestTokenAndIDToken(
        grant: String, _ fields: [(String, String)], endpoint: URL, fallbackScopes: [String],
        previousRefreshToken: String? = nil
    ) async throws -> (credential: Credential, idToken: String?) {
        let response = try await post(endpoint, fields: [("grant_type", grant)] + fields)
        let json = try Self.successJSON(response, what: "token")
        var credential = try Self.credential(from: json, now: now(), fallbackScopes: fallbackScopes)
        if credential.refreshToken == nil { credential.refreshToken = previousRefreshToken }
        logger.debug(
            "token granted",
            metadata: [
                "oauth.grant": "\(Self.grantName(grant))", "oauth.expires_in": "\(json["expires_in"].map { "\($0)" } ?? "none")",
            ])
        return (credential, json["id_token"]?.stringValue)
    }

    /// POSTs a form with client authentication, returning the raw response.
    func post(_ endpoint: URL, fields: [(String, String)]) async throws -> ClientResponse {
        var fields = fields
        var headers = HTTPFields()
        headers[.accept] = "application/json"
        switch registration.authenticationMethod {
        case .clientSecretBasic where registration.clientSecret != nil:
            let user = FormEncoding.escape(registration.clientID)
            let password = FormEncoding.escape(registration.clientSecret ?? "")
            headers[.authorization] = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        case .clientSecretPost where registration.clientSecret != nil:
            fields.append(("client_id", registration.clientID))
            fields.append(("client_secret", registration.clientSecret ?? ""))
        default:
            fields.append(("client_id", registration.clientID))
        }
        let request = Request(
            method: .post, path: endpoint.absoluteString, headers: headers,
            body: .data(FormEncoding.encode(fields), contentType: "application/x-www-form-urlencoded"))
        return try await send(request)
    }

    /// Sends a request around the middlewares; transport failures become ``AuthError/Code/requestFailed``.
    func send(_ request: Request) async throws -> ClientResponse {
        let prepared: PreparedRequest
        do {
            prepared = try client.prepare(request)
        } catch {
            throw AuthError(.requestFailed, "The request to \(Self.pathOf(request.path)) could not be built", underlying: error)
        }
        let options = TransportOptions(timeout: prepared.timeout, maxResponseBytes: 1 << 20)
        let endpoint = Self.pathOf(request.path)
        var requestLogger = logger
        requestLogger[metadataKey: "oauth.endpoint"] = .string(endpoint)
        let context = MiddlewareContext(
            logger: requestLogger, operationName: "oauth \(endpoint)", baseURL: client.configuration.baseURL)
        let transport = client.transport
        let clock = ContinuousClock()
        let started = clock.now
        do {
            let response = try await PreparedRequest.chain(
                middlewares[...], request: prepared.request, body: prepared.body, context: context
            ) { request, body in
                do {
                    let (head, data) = try await transport.send(request, body: body, options: options)
                    return ClientResponse(response: head, body: data)
                } catch {
                    throw OutpostError.wrap(error, layer: .transport("\(type(of: transport))"), method: nil, path: nil)
                }
            }
            let elapsed = clock.now - started
            logger.debug(
                "auth endpoint response",
                metadata: [
                    "oauth.endpoint": "\(endpoint)", "oauth.status": "\(response.status)",
                    "oauth.duration_ms":
                        "\(elapsed.inMilliseconds)",
                ])
            return response
        } catch let error as OutpostError where error.code == .cancelled {
            throw AuthError(.cancelled, "The request to \(Self.pathOf(request.path)) was cancelled", underlying: error)
        } catch is CancellationError {
            throw AuthError(.cancelled, "The request to \(Self.pathOf(request.path)) was cancelled")
        } catch {
            logger.debug("auth request failed", metadata: ["oauth.endpoint": "\(Self.pathOf(request.path))"])
            throw AuthError(
                .requestFailed, "The request to \(Self.pathOf(request.path)) failed; check that the server is reachable",
                underlying: error)
        }
    }

    /// The JSON object of a 2xx answer, or the mapped OAuth error.
    static func successJSON(_ response: ClientResponse, what: String) throws -> JSONValue {
        guard (200..<300).contains(response.status) else { throw error(from: response) }
        guard let json = try? response.json(), json.objectValue != nil else {
            throw AuthError(
                .invalidResponse, "The \(what) endpoint answered \(response.status) without a JSON object",
                oauthError: nil, status: response.status)
        }
        return json
    }

    /// Parses an RFC 6749 5.1 token response.
    static func credential(from json: JSONValue, now: Date, fallbackScopes: [String]) throws -> Credential {
        guard let accessToken = json["access_token"]?.stringValue, !accessToken.isEmpty else {
            throw AuthError(.invalidResponse, "The token response has no access_token", oauthError: nil)
        }
        let tokenType = json["token_type"]?.stringValue ?? "Bearer"
        let expiresIn = json["expires_in"]?.doubleValue ?? json["expires_in"]?.stringValue.flatMap(Double.init)
        let scopes = json["scope"]?.stringValue.map { $0.split(separator: " ").map(String.init) } ?? fallbackScopes
        return Credential(
            accessToken: accessToken, tokenType: tokenType.lowercased() == "bearer" ? "Bearer" : tokenType,
            refreshToken: json["refresh_token"]?.stringValue, expiresAt: expiresIn.map { now.addingTimeInterval($0) },
            scopes: scopes, issuedAt: now)
    }

    /// Maps an error response: RFC 6749 5.2 / RFC 8628 3.5 `{"error", "error_description"}`,
    /// the Outpost envelope `{"error": {"code", "message"}}`, or a bare status.
    static func error(from response: ClientResponse) -> AuthError {
        let json = try? response.json()
        var oauthError: String?
        var description: String?
        if case .object(let envelope)? = json?["error"] {
            oauthError = envelope["code"]?.stringValue
            description = envelope["message"]?.stringValue
        } else {
            oauthError = json?["error"]?.stringValue
            description = json?["error_description"]?.stringValue
        }
        if response.status == 429 {
            let retryAfter = response.headerFields[.retryAfterHeader].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            return AuthError(
                .rateLimited, "Too many sign-in attempts; wait\(retryAfter.map { " \($0) s" } ?? "") and try again",
                oauthError: oauthError, serverMessage: description, status: 429, retryAfter: retryAfter.map { .seconds($0) })
        }
        let (code, message): (AuthError.Code, String)
        switch oauthError {
        case "invalid_grant":
            (code, message) = (.invalidGrant, "The grant was refused (expired, used, revoked or wrong); sign in again")
        case "invalid_client":
            (code, message) = (.invalidClient, "The server did not accept the client id or secret; check the client registration")
        case "unauthorized_client":
            (code, message) = (.unauthorizedClient, "This client may not use this grant; ask the server's admin to allow it")
        case "invalid_scope":
            (code, message) = (.invalidScope, "A requested scope is unknown or not allowed for this client")
        case "access_denied":
            (code, message) = (.accessDenied, "The user declined the sign-in")
        case "authorization_pending":
            (code, message) = (.authorizationPending, "The user has not finished signing in yet")
        case "slow_down":
            (code, message) = (.slowDown, "The server asked to poll more slowly")
        case "expired_token":
            (code, message) = (.expiredToken, "The device code expired before the user finished; start again")
        case nil where response.status == 401:
            (code, message) = (.invalidClient, "The server refused the client's credentials (HTTP 401)")
        case nil:
            (code, message) = (.serverError, "The server answered \(response.status) without an OAuth error")
        default:
            (code, message) = (.serverError, "The server refused the request")
        }
        return AuthError(code, message, oauthError: oauthError, serverMessage: description, status: response.status)
    }

    /// A URL's path only: queries may hold secrets.
    static func pathOf(_ urlString: String) -> String {
        URLComponents(string: urlString)?.path ?? "?"
    }

    static func grantName(_ grant: String) -> String {
        grant.hasPrefix("urn:ietf:params:oauth:grant-type:")
            ? String(grant.dropFirst("urn:ietf:params:oauth:grant-type:".count)) : grant
    }
}
