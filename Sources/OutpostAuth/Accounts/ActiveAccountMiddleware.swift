public import Foundation
public import HTTPTypes
@_spi(OutpostInternal) public import OutpostCore

/// Signs every request with the active account of an ``AccountManager``, as ``AuthMiddleware``
/// does for one authenticator: switching accounts (``AccountManager/use(_:)``) takes effect from
/// the next request. Requests go out unsigned when no account is signed in.
///
/// The token goes only to the client's origin (and ``trustedOrigins``), so a client for one server
/// never sends the active account's token to another: with accounts on several servers, keep one
/// client per server.
public struct ActiveAccountMiddleware: ClientMiddleware {
    public let accounts: AccountManager
    public var placement: AuthMiddleware.Placement
    public var trustedOrigins: [URL]
    /// What to do with a request for another origin, as ``AuthMiddleware/crossOriginPolicy``.
    public var crossOriginPolicy: AuthMiddleware.CrossOriginPolicy

    public init(
        accounts: AccountManager, placement: AuthMiddleware.Placement = .authorizationHeader, trustedOrigins: [URL] = [],
        crossOriginPolicy: AuthMiddleware.CrossOriginPolicy = .refuse
    ) {
        self.accounts = accounts
        self.placement = placement
        self.trustedOrigins = trustedOrigins
        self.crossOriginPolicy = crossOriginPolicy
    }

    public func intercept(
        _ request: HTTPRequest, body: Data?, context: MiddlewareContext,
        next: @Sendable (HTTPRequest, Data?) async throws -> ClientResponse
    ) async throws -> ClientResponse {
        guard let authenticator = try await accounts.activeAuthenticator() else { return try await next(request, body) }
        let signing = AuthMiddleware(
            authenticator: authenticator, placement: placement, trustedOrigins: trustedOrigins,
            crossOriginPolicy: crossOriginPolicy)
        return try await signing.intercept(request, body: body, context: context, next: next)
    }
}
