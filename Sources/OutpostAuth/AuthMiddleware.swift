public import Foundation
public import HTTPTypes
public import OutpostCore

/// Signs every request of an ``OutpostClient`` with the authenticator's access token.
///
/// - Attaches the token as `Authorization: Bearer …`, or as a query parameter
///   (``Placement/queryParameter(_:)``, NationBuilder style) where a backend wants it so.
/// - Refreshes ahead of expiry (``Authenticator/Configuration/refreshMargin``).
/// - On a 401, refreshes once (unless another request already did) and retries once.
/// - Concurrent requests share one refresh; with a ``FileCredentialStore``, so do processes.
///
/// When no refresh is due, a request costs one actor hop and no I/O. Requests go out unsigned
/// when nobody is signed in. A refresh that fails leaves the 401 to the caller
/// (``OutpostError/Code/unauthorized``), with the ``AuthError`` as its underlying error when
/// there was no response to return.
public struct AuthMiddleware: ClientMiddleware {
    /// Where the token goes.
    public enum Placement: Sendable, Hashable {
        /// `Authorization: <token type> <token>`. The default, and the safe choice.
        case authorizationHeader
        /// A query parameter, e.g. `access_token` (legacy; URLs end up in server logs).
        case queryParameter(String)
    }

    public let authenticator: Authenticator
    public var placement: Placement

    public init(authenticator: Authenticator, placement: Placement = .authorizationHeader) {
        self.authenticator = authenticator
        self.placement = placement
    }

    public func intercept(
        _ request: HTTPRequest, body: Data?, context: MiddlewareContext,
        next: @Sendable (HTTPRequest, Data?) async throws -> ClientResponse
    ) async throws -> ClientResponse {
        let credential: Credential?
        do {
            credential = try await authenticator.validCredential()
        } catch let error as AuthError {
            // A refresh ahead of expiry failed; go on with the old token while it lasts.
            let current = try? await authenticator.credential()
            guard let current, !current.expires(within: 0, of: authenticator.configuration.now()) else {
                throw OutpostError(
                    .unauthorized, "No usable access token: \(error.message)", suggestion: "Sign in again", underlying: error)
            }
            context.logger.warning("token refresh failed; using the current token", metadata: ["oauth.error": "\(error.code)"])
            credential = current
        }
        guard let credential else { return try await next(request, body) }
        let response = try await next(signed(request, with: credential), body)
        guard response.status == 401, credential.refreshToken != nil else { return response }
        let fresh: Credential
        do {
            fresh = try await authenticator.refreshAfterRejection(of: credential.accessToken)
        } catch {
            context.logger.warning(
                "token refused and refresh failed",
                metadata: ["oauth.error": "\((error as? AuthError)?.code.rawValue ?? "error")"])
            return response
        }
        context.logger.debug("retrying with a refreshed token")
        return try await next(signed(request, with: fresh), body)
    }

    /// `request` carrying `credential`'s access token.
    func signed(_ request: HTTPRequest, with credential: Credential) -> HTTPRequest {
        var request = request
        switch placement {
        case .authorizationHeader:
            request.headerFields[.authorization] = "\(credential.tokenType) \(credential.accessToken)"
        case .queryParameter(let name):
            let path = request.path ?? "/"
            let parts = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
            let kept =
                parts.count > 1
                ? parts[1].split(separator: "&").filter { !$0.hasPrefix(FormEncoding.escape(name) + "=") }.map(String.init) : []
            let item = FormEncoding.escape(name) + "=" + FormEncoding.escape(credential.accessToken)
            request.path = String(parts[0]) + "?" + (kept + [item]).joined(separator: "&")
        }
        return request
    }
}
