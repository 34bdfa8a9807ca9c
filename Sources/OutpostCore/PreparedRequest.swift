public import Foundation
public import HTTPTypes
import HTTPTypesFoundation
import Logging
@_spi(OutpostInternal) import OutpostSupport
import Tracing

/// A request built by ``OutpostClient/prepare(_:operationName:)`` and not yet sent: inspect it,
/// keep it, and ``start()`` it when the time comes.
public struct PreparedRequest: Sendable {
    public let client: OutpostClient
    /// The request exactly as the first middleware will receive it.
    public let request: HTTPRequest
    public let body: Data?
    public let timeout: Duration
    public let operationName: String?

    /// Sends the request through the middlewares and the transport, with retries, and applies the
    /// default handling: a non-2xx status or a service error becomes an ``OutpostError``.
    public func start() async throws -> ClientResponse {
        try await send(checkingStatus: true)
    }

    /// Sends the request as ``start()`` does (middlewares, transport, retries, logging) but returns
    /// the response whatever its status: for callers that read every status themselves, such as
    /// OutpostOpenAPI's transport, whose generated clients decode each documented response.
    @_spi(OutpostInternal) public func exchange() async throws -> ClientResponse {
        try await send(checkingStatus: false)
    }

    private func send(checkingStatus: Bool) async throws -> ClientResponse {
        let method = request.method.rawValue
        let path = Self.pathWithoutQuery(request.path)
        var requestLogger = client.configuration.logger
        // Metadata only when something will be logged: this runs on every request.
        if requestLogger.logLevel < .critical {
            requestLogger[metadataKey: "outpost.method"] = .string(method)
            requestLogger[metadataKey: "outpost.path"] = .string(path)
        }
        let logger = requestLogger
        if let tracer = RequestTracing.tracer(client.configuration.tracer) {
            return try await RequestTracing.call(tracer, method: method, path: path, operationName: operationName) {
                try await send(checkingStatus: checkingStatus, method: method, path: path, logger: logger)
            }
        }
        return try await send(checkingStatus: checkingStatus, method: method, path: path, logger: logger)
    }

    private func send(checkingStatus: Bool, method: String, path: String, logger: Logger) async throws -> ClientResponse {
        do {
            try Task.checkCancellation()
            let response: ClientResponse
            if client.middlewares.isEmpty {
                // No chain to build: no context, no closure for the terminal step.
                response = try await sendWithRetries(request, body: body, logger: logger)
            } else {
                let context = MiddlewareContext(
                    logger: logger, operationName: operationName, baseURL: client.configuration.baseURL)
                response = try await Self.chain(
                    client.middlewares[...], request: request, body: body, context: context,
                    terminal: { request, body in
                        try await sendWithRetries(request, body: body, logger: logger)
                    })
            }
            if checkingStatus { try client.checkStatus(response, method: method, path: path) }
            return response
        } catch {
            throw OutpostError.wrap(error, method: method, path: path)
        }
    }

    /// The path for logs and errors: never the query, which may hold secrets.
    static func pathWithoutQuery(_ path: String?) -> String {
        guard let path else { return "" }
        guard let question = path.firstIndex(of: "?") else { return path }
        return String(path[..<question])
    }

    /// Sends the request and decodes the body as `T`.
    public func start<T: Decodable>(decoding type: T.Type) async throws -> T {
        let response = try await start()
        return try client.decode(type, from: response, method: request.method.rawValue, path: Self.pathWithoutQuery(request.path))
    }

    /// Runs `request` through `middlewares`, in order, then `terminal`; an error of a middleware's
    /// own becomes ``OutpostError/Code/middlewareFailed`` naming it. Shared with OutpostAuth's token
    /// endpoint, which runs its own middlewares.
    @_spi(OutpostInternal) public static func chain(
        _ middlewares: ArraySlice<any ClientMiddleware>, request: HTTPRequest, body: Data?, context: MiddlewareContext,
        terminal: @escaping @Sendable (HTTPRequest, Data?) async throws -> ClientResponse
    ) async throws -> ClientResponse {
        guard let first = middlewares.first else { return try await terminal(request, body) }
        let rest = middlewares.dropFirst()
        do {
            return try await first.intercept(request, body: body, context: context) { request, body in
                try await chain(rest, request: request, body: body, context: context, terminal: terminal)
            }
        } catch let error as OutpostError {
            throw error
        } catch {
            throw OutpostError.wrap(error, layer: .middleware("\(type(of: first))"), method: nil, path: nil)
        }
    }

    private func sendWithRetries(_ request: HTTPRequest, body: Data?, logger: Logger) async throws -> ClientResponse {
        let configuration = client.configuration
        let policy = configuration.retry
        let options = TransportOptions(timeout: timeout, maxResponseBytes: configuration.maxResponseBytes)
        let retrySafe = Request.isRetrySafe(method: request.method, headers: request.headerFields)
        let clock = ContinuousClock()
        var attempt = 1
        /// Logs why the next attempt comes, with its delay, then waits for it.
        func pause(_ message: Logger.Message, _ reason: (key: String, value: String), _ delay: Duration) async throws {
            logger.info(
                message,
                metadata: [
                    reason.key: "\(reason.value)", "outpost.delay_ms": "\(delay.inMilliseconds)", "outpost.attempt": "\(attempt)",
                ])
            try await policy.sleep(delay)
        }
        let tracer = RequestTracing.tracer(configuration.tracer)
        while true {
            let started = clock.now
            var span: (any Span)?
            do {
                let (head, data): (HTTPResponse, Data)
                if let tracer {
                    let (attemptSpan, traced) = RequestTracing.attempt(tracer, request, attempt: attempt)
                    span = attemptSpan
                    (head, data) = try await transportSend(traced, body: body, options: options)
                    RequestTracing.end(attemptSpan, status: head.status.code)
                    span = nil
                } else {
                    (head, data) = try await transportSend(request, body: body, options: options)
                }
                let elapsed = clock.now - started
                logger.debug(
                    "response",
                    metadata: [
                        "outpost.status": "\(head.status.code)", "outpost.duration_ms": "\(elapsed.inMilliseconds)",
                        "outpost.attempt": "\(attempt)", "outpost.query": "\(Redaction.query(of: request))",
                    ])
                let response = ClientResponse(response: head, body: data)
                if retrySafe, attempt < policy.maxAttempts, policy.retryableStatuses.contains(head.status.code) {
                    var delay = policy.backoff(afterAttempt: attempt)
                    if let header = head.headerFields[.retryAfterHeader] {
                        guard let wanted = RetryPolicy.parseRetryAfter(header), wanted <= policy.maxRetryAfter else {
                            return response
                        }
                        delay = wanted
                    }
                    try await pause("retrying after status", ("outpost.status", "\(head.status.code)"), delay)
                    attempt += 1
                    continue
                }
                return response
            } catch let error as OutpostError {
                if let span { RequestTracing.end(span, error: error) }
                let retryable = error.code == .cannotConnect || error.code == .connectionLost || error.code == .timeout
                if retrySafe, retryable, attempt < policy.maxAttempts {
                    let delay = policy.backoff(afterAttempt: attempt)
                    try await pause("retrying after failure", ("outpost.error", "\(error.code)"), delay)
                    attempt += 1
                    continue
                }
                // Debug, not error: the caller receives the error and decides how much it matters.
                logger.debug("request failed", metadata: ["outpost.error": "\(error.code)", "outpost.attempt": "\(attempt)"])
                throw error
            }
        }
    }

    /// The transport's answer, with an error of its own reported as ``OutpostError/Code/transportFailed``.
    private func transportSend(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> (
        HTTPResponse, Data
    ) {
        let transport = client.transport
        do {
            return try await transport.send(request, body: body, options: options)
        } catch let error as OutpostError {
            throw error
        } catch {
            throw OutpostError.wrap(error, layer: .transport("\(type(of: transport))"), method: nil, path: nil)
        }
    }
}

extension OutpostClient {
    /// The default handling of a response: non-2xx statuses and service errors become errors.
    func checkStatus(_ response: ClientResponse, method: String, path: String) throws {
        let format = configuration.errorFormat
        let status = response.status
        // 304 answers a conditional request the caller made (If-None-Match): a result, not a failure.
        if status == 304 { return }
        if (200..<300).contains(status) {
            guard !format.serviceErrorKeys.isEmpty, response.body.first(where: { !$0.isWhitespaceByte }) == UInt8(ascii: "{"),
                TopLevelKeys.contains(anyOf: format.serviceErrorKeys, in: response.body),
                case .object(let object)? = try? response.json()
            else { return }
            for key in format.serviceErrorKeys {
                guard let value = object[key], value != .null, value != .array([]) else { continue }
                let parsed = ParsedError(value, format: format)
                guard parsed.code != nil || parsed.message != nil else { continue }
                throw OutpostError(
                    .serviceError, "The server reported an error in a successful response",
                    suggestion: "Read the server's message; the request was received but not carried out",
                    status: status, serverCode: parsed.code, serverMessage: parsed.message, details: parsed.details,
                    method: method, path: path)
            }
            return
        }
        let parsed = ParsedError(errorBody: response, format: format)
        let code: OutpostError.Code
        let suggestion: String
        switch status {
        case 401:
            code = .unauthorized
            suggestion = "Sign in again, or check the credentials the client sends"
        case 412:
            code = .conflict
            suggestion = "The resource changed since it was read: pull it again, reapply the change, and retry"
        case 400..<500:
            code = .httpStatus
            suggestion = parsed.suggestion(status: status)
        default:
            code = .httpStatus
            suggestion = "The server failed; retry later, and check the server's logs if it persists"
        }
        var error = OutpostError(
            code, "The server answered \(Self.statusLine(status))", suggestion: suggestion,
            status: status, serverCode: parsed.code, serverMessage: parsed.message, details: parsed.details,
            method: method, path: path)
        error.fieldErrors = parsed.fieldErrors
        throw error
    }

    /// `404 Not Found`, for messages.
    static func statusLine(_ status: Int) -> String {
        let phrases: [Int: String] = [
            400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
            409: "Conflict", 410: "Gone", 412: "Precondition Failed", 413: "Content Too Large",
            415: "Unsupported Media Type", 422: "Unprocessable Content", 429: "Too Many Requests",
            500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
        ]
        return phrases[status].map { "\(status) \($0)" } ?? "\(status)"
    }
}

extension UInt8 {
    var isWhitespaceByte: Bool { self == 0x20 || self == 0x0A || self == 0x0D || self == 0x09 }
}
