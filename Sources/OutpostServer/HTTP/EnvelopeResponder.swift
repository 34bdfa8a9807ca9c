import HTTPTypes
import Hummingbird
import Logging
import OutpostCore

/// Wraps the router so that every failure, unknown routes and Hummingbird's own errors included,
/// leaves as the JSON error envelope, and every request is logged once with its status and duration.
///
/// Logs carry method, path (never the query, which may hold secrets), status and duration; never headers.
struct EnvelopeResponder<Inner: HTTPResponder>: HTTPResponder where Inner.Context == OutpostRequestContext {
    typealias Context = OutpostRequestContext
    let inner: Inner
    let logger: Logger

    func respond(to request: Request, context: Context) async throws -> Response {
        let started = ContinuousClock.now
        let response: Response
        do {
            let inner = try await inner.respond(to: request, context: context)
            // Hummingbird answers unknown routes and its own body-less errors itself; give them the envelope.
            if inner.status.code >= 400, inner.body.contentLength == 0 {
                response = Self.render(HTTPError(inner.status), request: request, logger: logger)
            } else {
                response = inner
            }
        } catch {
            response = Self.render(error, request: request, logger: logger)
        }
        let elapsed = ContinuousClock.now - started
        let (seconds, attoseconds) = elapsed.components
        let level: Logger.Level = response.status.code >= 500 ? .warning : .info
        logger.log(
            level: level, "request",
            metadata: [
                "method": "\(request.method.rawValue)", "path": "\(request.uri.path)", "status": "\(response.status.code)",
                "duration_ms": "\(seconds * 1000 + attoseconds / 1_000_000_000_000_000)",
            ])
        return response
    }

    static func render(_ error: any Error, request: Request, logger: Logger) -> Response {
        let serverError: ServerError
        switch error {
        case let error as ServerError:
            serverError = error
        case let error as HTTPError:
            serverError = fromHTTPError(error, request: request)
        case let error as any HTTPResponseError:
            serverError = ServerError(error.status, code: code(for: error.status), message: "\(error.status.reasonPhrase)")
        default:
            logger.error("unhandled error", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
            serverError = ServerError(
                .internalServerError, code: "internal_error",
                message: "The server failed while handling this request; its log has the details")
        }
        return Response.json(serverError.envelope, status: serverError.status, headers: serverError.headers)
    }

    static func fromHTTPError(_ error: HTTPError, request: Request) -> ServerError {
        switch error.status {
        case .notFound:
            return ServerError(
                .notFound, code: "route_not_found",
                message: "No route for \(request.method.rawValue) \(request.uri.path); GET /openapi.json lists the routes")
        case .methodNotAllowed:
            return ServerError(
                .methodNotAllowed, code: "method_not_allowed",
                message: "\(request.uri.path) does not accept \(request.method.rawValue); GET /openapi.json lists the methods")
        case .contentTooLarge:
            return ServerError(.contentTooLarge, code: "payload_too_large", message: "The request body is too large")
        default:
            return ServerError(error.status, code: code(for: error.status), message: error.body ?? error.status.reasonPhrase)
        }
    }

    static func code(for status: HTTPResponse.Status) -> String {
        status.reasonPhrase.lowercased().split(whereSeparator: { !$0.isLetter && !$0.isNumber }).joined(separator: "_")
    }
}
