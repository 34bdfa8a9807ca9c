public import Foundation
public import HTTPTypes
public import Logging

/// What a middleware knows about the request it intercepts.
public struct MiddlewareContext: Sendable {
    /// The logger of this request, with its metadata.
    public var logger: Logger
    /// The name of the operation or lambda, when the request comes from one.
    public var operationName: String?
    /// The client's ``OutpostClient/Configuration/baseURL``: its origin is the backend's, e.g. the
    /// one origin credentials are for.
    public var baseURL: URL

    public init(logger: Logger, operationName: String? = nil, baseURL: URL) {
        self.logger = logger
        self.operationName = operationName
        self.baseURL = baseURL
    }
}

/// Intercepts every request a client sends: to add or change headers, to look at the response
/// (``ClientResponse/json()`` gives its parsed JSON), to take over a response or an error, or to
/// send the request again.
///
/// Middlewares run in the order given to the client: the first one sees the request first and the
/// response last. `next` sends the request on (through the remaining middlewares, then the
/// transport, with retries). A middleware may:
/// - change the request before calling `next` (headers, query, body);
/// - look at the response after `next`, and return it, or another one;
/// - catch the error `next` throws and recover from it, or rethrow;
/// - take over a response or an error entirely by throwing ``OutpostError/halted(_:)``, for example
///   to sign the user out on a 401 instead of surfacing it.
///
/// The client's default handling (turning non-2xx statuses into errors, decoding) happens after
/// the whole chain has returned, so a middleware sees error responses as responses.
public protocol ClientMiddleware: Sendable {
    func intercept(
        _ request: HTTPRequest,
        body: Data?,
        context: MiddlewareContext,
        next: @Sendable (HTTPRequest, Data?) async throws -> ClientResponse
    ) async throws -> ClientResponse
}

/// A middleware from a closure, for small jobs.
public struct ClosureMiddleware: ClientMiddleware {
    public typealias Body =
        @Sendable (
            HTTPRequest, Data?, MiddlewareContext, @Sendable (HTTPRequest, Data?) async throws -> ClientResponse
        ) async throws -> ClientResponse

    private let body: Body

    public init(_ body: @escaping Body) { self.body = body }

    public func intercept(
        _ request: HTTPRequest, body: Data?, context: MiddlewareContext,
        next: @Sendable (HTTPRequest, Data?) async throws -> ClientResponse
    ) async throws -> ClientResponse {
        try await self.body(request, body, context, next)
    }
}

/// Adds or replaces header fields on every request.
public struct HeaderMiddleware: ClientMiddleware {
    public var fields: HTTPFields

    public init(_ fields: HTTPFields) { self.fields = fields }

    public func intercept(
        _ request: HTTPRequest, body: Data?, context: MiddlewareContext,
        next: @Sendable (HTTPRequest, Data?) async throws -> ClientResponse
    ) async throws -> ClientResponse {
        var request = request
        for field in fields { request.headerFields[field.name] = field.value }
        return try await next(request, body)
    }
}
