import HTTPTypes
import Hummingbird
import Logging
import NIOHTTP1
import OutpostCore
import OutpostSupport

/// Wraps the router so that every failure, unknown routes and Hummingbird's own errors included,
/// leaves as the JSON error envelope, and every request is logged once with its status and duration.
///
/// A path that exists with other methods is 405 with `Allow`; `HEAD` answers carry the headers
/// (`Content-Length` included) and no body.
///
/// Logs carry method, path (never the query, which may hold secrets), status and duration; never headers.
struct EnvelopeResponder<Inner: HTTPResponder>: HTTPResponder where Inner.Context == OutpostRequestContext {
    typealias Context = OutpostRequestContext
    let inner: Inner
    let routes: RouteTable
    let logger: Logger

    func respond(to request: Request, context: Context) async throws -> Response {
        let started = ContinuousClock.now
        var response: Response
        do {
            let inner = try await inner.respond(to: request, context: context)
            // Hummingbird answers unknown routes and its own body-less errors itself; give them the envelope.
            // (A HEAD answer has no body anyway: only the router's own 404 is rendered again, for 405.)
            let bodyless = inner.status.code >= 400 && inner.body.contentLength == 0
            if bodyless, request.method != .head || inner.status == .notFound {
                response = Self.render(HTTPError(inner.status), request: request, routes: routes, logger: logger)
            } else {
                response = inner
            }
        } catch {
            response = Self.render(error, request: request, routes: routes, logger: logger)
        }
        if request.method == .head { response = response.createHeadResponse() }
        let elapsed = ContinuousClock.now - started
        let level: Logger.Level = response.status.code >= 500 ? .warning : .info
        logger.log(
            level: level, "request",
            metadata: [
                "method": "\(request.method.rawValue)", "path": "\(request.uri.path)", "status": "\(response.status.code)",
                "duration_ms": "\(elapsed.inMilliseconds)",
            ])
        return response
    }

    static func render(_ error: any Error, request: Request, routes: RouteTable, logger: Logger) -> Response {
        let serverError: ServerError
        switch error {
        case let error as ServerError:
            serverError = error
        case let error as RequestReadTimeout:
            serverError = error.serverError
        case let error as HTTPParserError:
            // The body did not parse as HTTP/1.1 (a bad chunk size, say): the client's fault, and the
            // connection cannot be trusted to carry another request.
            serverError = ServerError(
                .badRequest, code: "malformed_request",
                message: "The request is not valid HTTP/1.1 (\(error)); check its framing: Content-Length or chunk sizes",
                headers: [.connection: "close"])
        case let error as HTTPError:
            serverError = fromHTTPError(error, request: request, routes: routes)
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

    static func fromHTTPError(_ error: HTTPError, request: Request, routes: RouteTable) -> ServerError {
        switch error.status {
        case .notFound:
            let allowed = routes.methods(for: request.uri.path)
            if !allowed.isEmpty {
                let allow = RouteTable.allowValue(allowed)
                return ServerError(
                    .methodNotAllowed, code: "method_not_allowed",
                    message: "\(request.uri.path) does not accept \(request.method.rawValue); use one of: \(allow)",
                    details: ["allow": .array(allowed.map(\.rawValue).sorted().map(JSONValue.string))],
                    headers: [.allow: allow])
            }
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
