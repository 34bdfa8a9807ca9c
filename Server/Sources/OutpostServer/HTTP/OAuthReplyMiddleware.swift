import HTTPTypes
import Hummingbird
import Logging

/// The middleware of the RFC 6749 endpoints (`/oauth/token`, `/oauth/revoke`,
/// `/oauth/device_authorization`): their failures answer in RFC 6749's shape
/// (`{"error": code, "error_description": text}`, see ``OAuthError``) instead of Outpost's envelope,
/// and every answer, success or failure, carries `Cache-Control: no-store` and `Pragma: no-cache`
/// (RFC 6749 §5.1).
struct OAuthReplyMiddleware<Context: RequestContext>: RouterMiddleware {
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var response: Response
        do {
            response = try await next(request, context)
        } catch {
            response = try Self.oauthError(for: error, logger: logger).response(from: request, context: context)
        }
        response.headers[.cacheControl] = "no-store"
        response.headers[.pragma] = "no-cache"
        return response
    }

    /// The RFC 6749 error a client sees for `error`.
    static func oauthError(for error: any Error, logger: Logger) -> OAuthError {
        switch error {
        case let error as OAuthError:
            return error
        case let failure as AuthFailure:
            switch failure {
            case .badCredentials:
                return .invalidGrant("The username or password is wrong")
            case .rateLimited(let wait):
                return OAuthError(
                    code: "slow_down", description: "Too many sign-in attempts; wait \(wait) s and try again",
                    status: .tooManyRequests, headers: [.retryAfter: "\(wait)"])
            case .accountDisabled:
                return .invalidGrant(AuthFailure.disabledMessage)
            }
        case let error as ServerError:
            // A malformed form (too many or repeated parameters) is RFC 6749's invalid_request.
            let code = error.status == .badRequest ? "invalid_request" : error.code
            return OAuthError(code: code, description: error.message, status: error.status, headers: error.headers)
        default:
            logger.error("token endpoint failed", metadata: ["error": "\(error)"])
            return OAuthError(
                code: "server_error", description: "The server failed; its log has the details", status: .internalServerError)
        }
    }
}
