import HTTPTypes
import Hummingbird
import Logging
import NIOHTTP1
@_spi(OutpostInternal) import OutpostCore
@_spi(OutpostInternal) import OutpostSupport
import Synchronization

/// The router's first middleware: every failure leaves as the JSON error envelope, Hummingbird's
/// own errors (unknown routes, a body too large) and request-reading failures included, and `HEAD`
/// answers carry the headers (`Content-Length` included) and no body.
///
/// Routes just `throw`: a ``ServerError`` renders itself (it is an `HTTPResponseError`); this
/// middleware turns everything else into one. A path that exists with other methods is 405 with
/// `Allow` (from the ``RouteTableReference``); any other error is a 500 `internal_error` whose
/// message leaks nothing, with the error logged.
/// Failures worth an operator's look also go into ``RecentErrors`` (the admin console's recent
/// errors page), by route pattern, never by path.
struct ErrorEnvelopeMiddleware<Context: RequestContext>: RouterMiddleware {
    let routes: RouteTableReference
    let logger: Logger
    var recentErrors: RecentErrors? = nil

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var response: Response
        var code: String?
        do {
            let inner = try await next(request, context)
            // A body-less error answer (a HEAD answer has no body anyway: only a 404 is rendered
            // again, since it may be a 405).
            let bodyless = inner.status.code >= 400 && inner.body.contentLength == 0
            if bodyless, request.method != .head || inner.status == .notFound {
                let error = Self.serverError(for: HTTPError(inner.status), request: request, routes: routes.table, logger: logger)
                code = error.code
                response = error.envelopeResponse
            } else {
                response = inner
            }
        } catch {
            let serverError = Self.serverError(for: error, request: request, routes: routes.table, logger: logger)
            code = serverError.code
            response = serverError.envelopeResponse
        }
        if let recentErrors, RecentErrors.worthRecording(Int(response.status.code)) {
            recentErrors.record(
                RecentErrors.Entry(
                    time: Identifiers.nowMilliseconds(), method: ServerInstruments.methodLabel(request.method.rawValue),
                    route: RequestInstrumentsMiddleware<Context>.routeLabel(context.endpointPath),
                    status: Int(response.status.code), code: code,
                    // Hummingbird's `context.id` traps when the logger has no request id (a context
                    // made outside its server, as some tests make).
                    requestID: context.logger[metadataKey: "hb.request.id"]?.description ?? "-"))
        }
        if request.method == .head { response = response.createHeadResponse() }
        return response
    }

    /// The ``ServerError`` a client sees for `error`.
    static func serverError(for error: any Error, request: Request, routes: RouteTable, logger: Logger) -> ServerError {
        switch error {
        case let error as ServerError:
            return error
        case let failure as AuthFailure:
            return failure.serverError
        case let error as RequestReadTimeout:
            return error.serverError
        case let error as HTTPParserError:
            // The body did not parse as HTTP/1.1 (a bad chunk size, say): the client's fault, and the
            // connection cannot be trusted to carry another request.
            return ServerError(
                .badRequest, code: "malformed_request",
                message: "The request is not valid HTTP/1.1 (\(error)); check its framing: Content-Length or chunk sizes",
                headers: [.connection: "close"])
        case let error as HTTPError:
            return fromHTTPError(error, request: request, routes: routes)
        case let error as any HTTPResponseError:
            return ServerError(error.status, code: code(for: error.status), message: "\(error.status.reasonPhrase)")
        default:
            if let quota = QuotaExceeded.serverError(for: error) { return quota }
            if let deleted = AccountDeleted.serverError(for: error) { return deleted }
            logger.error("unhandled error", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
            return ServerError(
                .internalServerError, code: "internal_error",
                message: "The server failed while handling this request; its log has the details")
        }
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

/// The router's routes, filled in once they are all registered (``ErrorEnvelopeMiddleware`` is
/// added before them, as a router middleware applies only to routes added after it). Read only to
/// answer a request that matched no route.
final class RouteTableReference: Sendable {
    private let current = Mutex(RouteTable(routes: []))

    var table: RouteTable { current.withLock { $0 } }

    /// Takes the routes of `router`; with `.autoGenerateHeadEndpoints`, every `GET` path accepts `HEAD` too.
    func fill<Context>(from router: Router<Context>, generatesHead: Bool) {
        var routes = router.routes.map { (path: $0.path.description, method: $0.method) }
        if generatesHead { routes += routes.filter { $0.method == .get }.map { (path: $0.path, method: .head) } }
        let table = RouteTable(routes: routes)
        current.withLock { $0 = table }
    }
}

/// One access-log line per request: the client's address, method, path (never the query, which
/// may hold secrets), status and duration; never headers. At `warning` for 5xx answers, `info`
/// otherwise.
struct AccessLogMiddleware<Context: ClientAddressContext>: RouterMiddleware {
    let logger: Logger
    /// The sink and label of the logger's handler when it is a ``ServerLogHandler`` with no
    /// metadata of its own (what `outpost serve` runs): lines then go to the sink as bytes, the
    /// same text the handler would write, with no metadata dictionary built per request.
    let direct: (sink: ServerLogSink, label: String)?

    init(logger: Logger) {
        self.logger = logger
        if let handler = logger.handler as? ServerLogHandler, handler.metadata.isEmpty, handler.metadataProvider == nil {
            direct = (handler.sink, handler.label)
        } else {
            direct = nil
        }
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let started = ContinuousClock.now
        let response = try await next(request, context)
        let elapsed = ContinuousClock.now - started
        let level: Logger.Level = response.status.code >= 500 ? .warning : .info
        if let direct {
            if level >= logger.logLevel {
                direct.sink.appendRequestLine(
                    label: direct.label, level: level, client: context.clientAddress, method: request.method.rawValue,
                    path: request.uri.path,
                    status: response.status.code, milliseconds: elapsed.inMilliseconds)
            }
            return response
        }
        logger.log(
            level: level, "request",
            metadata: [
                "client": "\(context.clientAddress)", "method": "\(request.method.rawValue)", "path": "\(request.uri.path)",
                "status": "\(response.status.code)",
                "duration_ms": "\(elapsed.inMilliseconds)",
            ])
        return response
    }
}
