public import Foundation
public import HTTPTypes
@_spi(OutpostInternal) public import OutpostCore

/// Signs every request of an `OutpostClient` with the authenticator's access token.
///
/// - Attaches the token as `Authorization: Bearer …`, or as a query parameter
///   (``Placement/queryParameter(_:)``, NationBuilder style) where a backend wants it so.
/// - Refreshes ahead of expiry (``Authenticator/Configuration/refreshMargin``).
/// - On a 401, refreshes once (unless another request already did) and retries once.
/// - Concurrent requests share one refresh; with a ``FileCredentialStore``, so do processes.
///
/// The token goes only where it belongs: to the origin (scheme, host and port) of the client's
/// base URL and to the ``trustedOrigins`` listed here, and never over plain `http` to a host other
/// than the loopback (`127.0.0.1`, `::1`, `localhost`), so not after a downgrade from `https`
/// either. A request elsewhere (an absolute URL, a `next` link to another host) is refused with
/// `OutpostError.Code.untrustedDestination` before anything is sent, or, with
/// ``CrossOriginPolicy/sendUnsigned``, sent without the token.
///
/// When no refresh is due, a request costs one actor hop and no I/O. Requests go out unsigned
/// when nobody is signed in, but never when the credential store is only locked
/// (``AuthError/Code/credentialStoreLocked``): those fail with `OutpostError.Code.unauthorized`
/// and the ``AuthError`` as their underlying error. A refresh that fails leaves the 401 to the caller
/// (`OutpostError.Code.unauthorized`), with the ``AuthError`` as its underlying error when
/// there was no response to return.
public struct AuthMiddleware: ClientMiddleware {
    /// Where the token goes.
    public enum Placement: Sendable, Hashable {
        /// `Authorization: <token type> <token>`. The default, and the safe choice.
        case authorizationHeader
        /// A query parameter, e.g. `access_token` (legacy; URLs end up in server logs).
        case queryParameter(String)
    }

    /// What happens to a request for an origin that may not receive the token.
    public enum CrossOriginPolicy: Sendable, Hashable {
        /// Fail with `OutpostError.Code.untrustedDestination`; nothing is sent. The default.
        case refuse
        /// Send the request without the token (for public resources on other hosts, e.g. a CDN).
        case sendUnsigned
    }

    public let authenticator: Authenticator
    public var placement: Placement
    /// Origins besides the base URL's that receive the token, e.g. `https://files.example.com`.
    /// Only the scheme, host and port of each URL count. Plain `http` origins count only on the loopback.
    public var trustedOrigins: [URL]
    /// What to do with a request for any other origin. Default: ``CrossOriginPolicy/refuse``.
    public var crossOriginPolicy: CrossOriginPolicy

    public init(
        authenticator: Authenticator, placement: Placement = .authorizationHeader, trustedOrigins: [URL] = [],
        crossOriginPolicy: CrossOriginPolicy = .refuse
    ) {
        self.authenticator = authenticator
        self.placement = placement
        self.trustedOrigins = trustedOrigins
        self.crossOriginPolicy = crossOriginPolicy
    }

    public func intercept(
        _ request: HTTPRequest, body: Data?, context: MiddlewareContext,
        next: @Sendable (HTTPRequest, Data?) async throws -> ClientResponse
    ) async throws -> ClientResponse {
        let credential: Credential?
        do {
            credential = try await authenticator.validCredential()
        } catch let error as AuthError where error.code == .credentialStoreLocked {
            // Not signed out: the credential cannot be read yet. Never send the request unsigned.
            throw OutpostError(
                .unauthorized, "The credential store is locked until the device is first unlocked; the request was not sent",
                suggestion: "Try again once the user has unlocked the device", underlying: error)
        } catch let error as AuthError {
            // A refresh ahead of expiry failed; go on with the old token while it lasts.
            let current = try? await authenticator.credential()
            guard let current, !current.expires(within: 0, of: authenticator.configuration.now()) else {
                throw OutpostError(
                    .unauthorized, "No usable access token: \(error.message)", suggestion: "Sign in again", underlying: error)
            }
            context.logger.info("token refresh failed; using the current token", metadata: ["oauth.error": "\(error.code)"])
            credential = current
        }
        guard let credential else { return try await next(request, body) }
        if let refusal = Self.refusal(for: request, baseURL: context.baseURL, trustedOrigins: trustedOrigins) {
            guard crossOriginPolicy == .sendUnsigned, refusal.isCrossOrigin else { throw refusal.error }
            context.logger.debug("request to another origin sent without the token")
            return try await next(request, body)
        }
        let response = try await next(signed(request, with: credential), body)
        guard response.status == 401, credential.refreshToken != nil else { return response }
        let fresh: Credential
        do {
            fresh = try await authenticator.refreshAfterRejection(of: credential.accessToken)
        } catch {
            context.logger.debug(
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

extension AuthMiddleware {
    /// Why a request may not carry the token.
    struct Refusal {
        var error: OutpostError
        /// For another origin than the allowed ones, which the policy may let go unsigned; the
        /// allowed origins over plain `http` off the loopback are refused whatever the policy.
        var isCrossOrigin: Bool
    }

    /// `nil` when `request` may carry the token; otherwise why not.
    static func refusal(for request: HTTPRequest, baseURL: URL, trustedOrigins: [URL]) -> Refusal? {
        let method = request.method.rawValue
        // Never the query, which may hold secrets.
        let path = request.path.map { String($0.prefix { $0 != "?" }) }
        guard let scheme = request.scheme, let authority = request.authority,
            let origin = URL(string: "\(scheme)://\(authority)/").flatMap(Origin.init)
        else {
            return Refusal(
                error: OutpostError(
                    .untrustedDestination, "The access token was not sent: the request has no absolute http(s) URL",
                    method: method, path: path),
                isCrossOrigin: true)
        }
        let allowed = ([baseURL] + trustedOrigins).compactMap(Origin.init)
        if origin.scheme == "http", !origin.isLoopback {
            return Refusal(
                error: OutpostError(
                    .untrustedDestination, "The access token was not sent to \(origin): plain http to a host off the loopback",
                    suggestion: "Use an https URL; a token sent in the clear can be read on the way", method: method,
                    path: path),
                isCrossOrigin: !allowed.contains(origin))
        }
        guard !allowed.contains(origin) else { return nil }
        return Refusal(
            error: OutpostError(
                .untrustedDestination,
                "The access token was not sent to \(origin): it is for \(allowed.map { "\($0)" }.joined(separator: ", "))",
                suggestion:
                    "List the origin in AuthMiddleware's trustedOrigins if it should receive the token, or use the crossOriginPolicy .sendUnsigned",
                method: method, path: path),
            isCrossOrigin: true)
    }

    /// Scheme, host and port, with default ports filled in, lowercased.
    struct Origin: Hashable, CustomStringConvertible {
        var scheme: String
        var host: String
        var port: Int

        init?(_ url: URL) {
            guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
                var host = url.host?.lowercased(), !host.isEmpty
            else { return nil }
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            self.scheme = scheme
            self.host = host
            self.port = url.port ?? (scheme == "https" ? 443 : 80)
        }

        var isLoopback: Bool {
            if host == "localhost" || host.hasSuffix(".localhost") || host == "::1" { return true }
            let octets = host.split(separator: ".", omittingEmptySubsequences: false)
            return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
        }

        var description: String {
            let shownHost = host.contains(":") ? "[\(host)]" : host
            return "\(scheme)://\(shownHost):\(port)"
        }
    }
}
