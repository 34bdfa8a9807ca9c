public import Foundation
public import HTTPTypes
public import OpenAPIRuntime
@_spi(OutpostInternal) public import OutpostCore

/// A swift-openapi-runtime `ClientTransport` that sends a generated client's requests through an
/// `OutpostClient`: its middlewares (`AuthMiddleware`, `HTTPCache`, …), its transport, retries with
/// backoff (`RetryPolicy`), timeouts, request logs with secrets redacted, and its size limits.
///
/// ```swift
/// let outpost = OutpostClient(configuration: .init(baseURL: serverURL), middlewares: [HTTPCache()])
/// let client = Client(serverURL: serverURL, transport: OutpostTransport(client: outpost))
/// ```
///
/// Every status reaches the generated client, which decodes the responses the document declares
/// (a 404 with its error envelope included): the transport does not turn statuses into errors.
/// Failures before a response (no connection, timeout, cancellation, a body over a limit) are thrown
/// as `OutpostError`, which the generated client reports as the `underlyingError` of its
/// `ClientError`.
///
/// The request goes to the generated client's server URL. The `OutpostClient`'s base URL is the
/// origin its middlewares trust: an `AuthMiddleware` among them signs only requests to that origin
/// (and its trusted ones), so give both clients the same server URL.
///
/// Bodies are held in memory: a request body larger than ``Configuration/maxRequestBytes`` fails
/// before anything is sent, and a response body larger than the `OutpostClient`'s
/// `maxResponseBytes` fails with `OutpostError.Code.responseTooLarge`. Files larger than memory go
/// through OutpostCore's streamed file transfers instead.
public struct OutpostTransport: OpenAPIRuntime.ClientTransport {
    /// How the transport hands requests to the client.
    public struct Configuration: Sendable {
        /// A larger request body fails with `OutpostError.Code.invalidRequest` before anything is sent.
        /// Default: 32 MiB.
        public var maxRequestBytes: Int
        /// The longest one attempt may take; `nil` (the default) takes the client's `timeout`.
        public var timeout: Duration?
        /// Gives each `POST` and `PATCH` without an `Idempotency-Key` a new random one, so that the
        /// client's retry policy may send it again after a lost connection or a retryable status.
        /// Turn it on only for a server that answers a repeated key with the first response (the
        /// Outpost server does); without a key, only idempotent methods are retried. Default: `false`.
        public var addsIdempotencyKeys: Bool

        public init(maxRequestBytes: Int = 32 * 1024 * 1024, timeout: Duration? = nil, addsIdempotencyKeys: Bool = false) {
            self.maxRequestBytes = maxRequestBytes
            self.timeout = timeout
            self.addsIdempotencyKeys = addsIdempotencyKeys
        }
    }

    /// The client every request goes through. The transport borrows it: shut it down when done.
    public let client: OutpostClient
    public var configuration: Configuration

    /// A transport over `client`, which it borrows: the caller shuts the client down.
    public init(client: OutpostClient, configuration: Configuration = Configuration()) {
        self.client = client
        self.configuration = configuration
    }

    /// Sends `request` (its path relative to `baseURL`) through the client and returns the response
    /// whatever its status. The `operationID` is the request's operation name in the client's logs
    /// and in its middlewares' `MiddlewareContext`.
    public func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws -> (
        HTTPResponse, HTTPBody?
    ) {
        var absolute = try RequestTarget.absolute(request, baseURL: baseURL)
        var data: Data?
        if let body {
            data = try await BodyCollector.collect(body, upTo: configuration.maxRequestBytes) { limit in
                OutpostError(
                    .invalidRequest,
                    "The request body is larger than \(limit) bytes, the transport's limit (OutpostTransport.Configuration.maxRequestBytes)",
                    suggestion: "Raise maxRequestBytes, or send large files with OutpostCore's streamed file transfers",
                    method: request.method.rawValue, path: request.path)
            }
        }
        if configuration.addsIdempotencyKeys, absolute.method == .post || absolute.method == .patch,
            absolute.headerFields[.idempotencyKey] == nil
        {
            absolute.headerFields[.idempotencyKey] = UUID().uuidString
        }
        let response = try await client.prepare(
            absolute, body: data, timeout: configuration.timeout, operationName: operationID
        ).exchange()
        // The built-in transports stop reading at the bound; this holds it for any other transport too.
        let maxResponseBytes = client.configuration.maxResponseBytes
        guard response.body.count <= maxResponseBytes else {
            throw OutpostError(
                .responseTooLarge, "The response was larger than \(maxResponseBytes) bytes",
                suggestion: "Raise Configuration.maxResponseBytes or ask for less (a smaller page)",
                status: response.status, method: request.method.rawValue, path: absolute.path)
        }
        // No body for a HEAD request, as other transports of the runtime do.
        let responseBody = request.method == .head ? nil : HTTPBody(response.body)
        return (response.response, responseBody)
    }
}
