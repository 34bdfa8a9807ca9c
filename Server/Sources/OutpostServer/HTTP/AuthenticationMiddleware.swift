import HTTPTypes
import Hummingbird

/// Who is calling, as ``AuthenticationMiddleware`` found it: set once per request, before the route
/// runs, and read through ``OutpostRequestContext/caller``.
enum Authentication: Sendable {
    /// No authentication middleware ran: reading the caller is a programming error (500).
    case unchecked
    /// No bearer token (or, where other schemes are left to the route, no `Bearer` one).
    case anonymous
    case caller(AuthenticatedCaller)
    /// The token was refused (401 `invalid_token`, 400 for a token in the query) or could not be
    /// checked (storage failed). Thrown where the route reads the caller, so the route's own checks
    /// that come first (a malformed path, an unknown lambda) still answer first, as they always did.
    case refused(any Error)
}

/// Resolves the request's bearer token once, before the route runs, and sets the caller on the
/// ``OutpostRequestContext`` (``OutpostRequestContext/authentication``); routes read
/// ``OutpostRequestContext/caller`` or ``OutpostRequestContext/caller(requiring:)``.
///
/// It never answers by itself: a request without a token goes on as anonymous, and a refused token
/// is kept and thrown when the route reads the caller. ``RequireCallerMiddleware`` keeps
/// anonymous requests away from a route.
struct AuthenticationMiddleware: RouterMiddleware {
    typealias Context = OutpostRequestContext

    /// What to do with an `Authorization` header of another scheme than `Bearer`.
    enum OtherSchemes: Sendable {
        /// 401 `invalid_token` (and a token in the query is refused even without the header).
        case refused
        /// Anonymous: the route reads the header itself (a plugin's handler may take `Basic`).
        case leftToRoute
    }

    let auth: AuthService
    var otherSchemes = OtherSchemes.refused

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var context = context
        context.authentication = await resolve(request)
        return try await next(request, context)
    }

    func resolve(_ request: Request) async -> Authentication {
        if otherSchemes == .leftToRoute, request.headers[.authorization]?.lowercased().hasPrefix("bearer ") != true {
            return .anonymous
        }
        do {
            guard let caller = try await auth.authenticate(request) else { return .anonymous }
            return .caller(caller)
        } catch {
            return .refused(error)
        }
    }
}

/// Keeps requests without a valid token, or whose token lacks ``scope``, from the routes behind it:
/// 401 `invalid_token` with `WWW-Authenticate`, or 403 `insufficient_scope`. After
/// ``AuthenticationMiddleware``.
struct RequireCallerMiddleware: RouterMiddleware {
    typealias Context = OutpostRequestContext
    let scope: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        try context.requireCaller().require(scope)
        return try await next(request, context)
    }
}

/// A route read the caller but no ``AuthenticationMiddleware`` ran for it: a mistake in the server,
/// answered 500 `internal_error` and logged.
struct MissingAuthenticationMiddleware: Error, CustomStringConvertible {
    var description: String { "a route read the caller, but no AuthenticationMiddleware ran for it" }
}

extension OutpostRequestContext {
    /// The caller behind the request's bearer token, or `nil` without one. Throws what
    /// ``AuthenticationMiddleware`` found wrong with the token (401, or 400 for a token in the
    /// query), and a 500 when no authentication middleware ran for this route.
    var caller: AuthenticatedCaller? {
        get throws {
            switch authentication {
            case .anonymous: return nil
            case .caller(let caller): return caller
            case .refused(let error): throw error
            case .unchecked: throw MissingAuthenticationMiddleware()
            }
        }
    }

    /// ``caller``, checked to carry `scope` when there is one: 403 `insufficient_scope` otherwise.
    /// A request without a token is left to the route's own rules.
    func caller(requiring scope: String) throws -> AuthenticatedCaller? {
        let caller = try self.caller
        try caller?.require(scope)
        return caller
    }

    /// ``caller``, which must exist: without any credentials, 401 `sign_in_required` with
    /// `WWW-Authenticate: Bearer` and no error code (RFC 6750 §3.1: a request that carries no
    /// authentication gets none); a bad token has already been refused with `invalid_token`.
    func requireCaller() throws -> AuthenticatedCaller {
        guard let caller = try caller else {
            throw ServerError(
                .unauthorized, code: "sign_in_required",
                message: "Sign in first: send 'Authorization: Bearer <access token>'",
                headers: [.wwwAuthenticate: "Bearer"])
        }
        return caller
    }
}
