public import Foundation
public import HTTPTypes
public import Logging
public import OpenAPIRuntime
@_spi(OutpostInternal) public import OutpostCore

/// Runs Outpost middlewares (`AuthMiddleware`, `HTTPCache`, `HeaderMiddleware`, your own) as one
/// swift-openapi-runtime `ClientMiddleware`, in front of any transport of the runtime.
///
/// ```swift
/// let client = Client(
///     serverURL: serverURL, transport: OutpostTransport(client: outpost),
///     middlewares: [OutpostMiddleware(AuthMiddleware(authenticator: authenticator), baseURL: serverURL)])
/// ```
///
/// The middlewares run in the order given, as in an `OutpostClient`: the first one sees the request
/// first and the response last. They see what they see in an `OutpostClient`: an absolute request
/// (the generated client's server URL joined with the operation's path), the whole body as `Data`,
/// and a `MiddlewareContext` whose `operationName` is the operation's `operationId` and whose
/// `baseURL` is ``baseURL``. A request a middleware sends elsewhere (another origin, another path)
/// goes there.
///
/// ``baseURL`` plays the part of an `OutpostClient`'s base URL: an `AuthMiddleware` sends the token
/// only to its origin (and to its own trusted origins), so a generated client pointed at another
/// server gets `OutpostError.Code.untrustedDestination` instead of leaking the token.
///
/// Bodies are collected into memory, each bounded by ``Configuration``; a body over its bound fails
/// with an `OutpostError` that names the bound. Errors of the middlewares reach the generated client,
/// which reports them as the `underlyingError` of its `ClientError`; a failure of the next step that
/// wraps an `OutpostError` (from ``OutpostTransport``) is handed to the middlewares as that
/// `OutpostError`, so that, for example, an `HTTPCache` can serve a stale entry when offline.
public struct OutpostMiddleware: OpenAPIRuntime.ClientMiddleware {
    /// Bounds and the logger of the middlewares.
    public struct Configuration: Sendable {
        /// A larger request body fails with `OutpostError.Code.invalidRequest`. Default: 32 MiB.
        public var maxRequestBytes: Int
        /// A larger response body fails with `OutpostError.Code.responseTooLarge`. Default: 32 MiB.
        public var maxResponseBytes: Int
        /// The `MiddlewareContext`'s logger. Default: discards everything.
        public var logger: Logger

        public init(
            maxRequestBytes: Int = 32 * 1024 * 1024, maxResponseBytes: Int = 32 * 1024 * 1024,
            logger: Logger = Logger(label: "outpost.openapi", factory: { _ in SwiftLogNoOpLogHandler() })
        ) {
            self.maxRequestBytes = maxRequestBytes
            self.maxResponseBytes = maxResponseBytes
            self.logger = logger
        }
    }

    /// The Outpost middlewares, in the order they run.
    public let middlewares: [any OutpostCore.ClientMiddleware]
    /// The backend's base URL, given to the middlewares as `MiddlewareContext.baseURL`: the origin
    /// an `AuthMiddleware` sends its token to.
    public let baseURL: URL
    public var configuration: Configuration

    /// Runs `middlewares`, in this order, for the backend at `baseURL`.
    public init(
        _ middlewares: [any OutpostCore.ClientMiddleware], baseURL: URL, configuration: Configuration = Configuration()
    ) {
        self.middlewares = middlewares
        self.baseURL = baseURL
        self.configuration = configuration
    }

    /// Runs `middlewares`, in this order, for the backend at `baseURL`.
    public init(
        _ middlewares: any OutpostCore.ClientMiddleware..., baseURL: URL, configuration: Configuration = Configuration()
    ) {
        self.init(middlewares, baseURL: baseURL, configuration: configuration)
    }

    /// Runs the middlewares on `request`, then `next` with what they send on.
    public func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        guard !middlewares.isEmpty else { return try await next(request, body, baseURL) }
        let absolute = try RequestTarget.absolute(request, baseURL: baseURL)
        var data: Data?
        if let body { data = try await collectRequest(body, request: request) }
        let context = MiddlewareContext(logger: configuration.logger, operationName: operationID, baseURL: self.baseURL)
        let maxResponseBytes = configuration.maxResponseBytes
        let response = try await run(middlewares[...], absolute, data, context) { request, data in
            let (target, targetBase) = RequestTarget.relative(request, baseURL: baseURL)
            let head: HTTPResponse
            let body: HTTPBody?
            do {
                (head, body) = try await next(target, data.map { HTTPBody($0) }, targetBase)
            } catch let error as ClientError {
                // What an Outpost transport failed with, for the middlewares to recognize.
                if let outpost = error.underlyingError as? OutpostError { throw outpost }
                throw error
            }
            var collected = Data()
            if let body {
                collected = try await BodyCollector.collect(body, upTo: maxResponseBytes) { limit in
                    OutpostError(
                        .responseTooLarge,
                        "The response body is larger than \(limit) bytes, the middleware's limit (OutpostMiddleware.Configuration.maxResponseBytes)",
                        suggestion: "Raise maxResponseBytes or ask for less (a smaller page)", status: Int(head.status.code),
                        method: request.method.rawValue, path: request.path)
                }
            }
            return ClientResponse(response: head, body: collected)
        }
        return (response.response, request.method == .head ? nil : HTTPBody(response.body))
    }

    private func collectRequest(_ body: HTTPBody, request: HTTPRequest) async throws -> Data {
        try await BodyCollector.collect(body, upTo: configuration.maxRequestBytes) { limit in
            OutpostError(
                .invalidRequest,
                "The request body is larger than \(limit) bytes, the middleware's limit (OutpostMiddleware.Configuration.maxRequestBytes)",
                suggestion: "Raise maxRequestBytes, or send large files with OutpostCore's streamed file transfers",
                method: request.method.rawValue, path: request.path)
        }
    }

    /// `middlewares` in order, then `terminal`; errors pass through as thrown.
    private func run(
        _ middlewares: ArraySlice<any OutpostCore.ClientMiddleware>, _ request: HTTPRequest, _ body: Data?,
        _ context: MiddlewareContext, terminal: @Sendable (HTTPRequest, Data?) async throws -> ClientResponse
    ) async throws -> ClientResponse {
        guard let first = middlewares.first else { return try await terminal(request, body) }
        let rest = middlewares.dropFirst()
        return try await first.intercept(request, body: body, context: context) { request, body in
            try await run(rest, request, body, context, terminal: terminal)
        }
    }
}
