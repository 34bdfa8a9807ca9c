public import Foundation
public import HTTPTypes

/// What a transport needs to know besides the request itself.
public struct TransportOptions: Sendable {
    /// The longest one attempt may take, from sending to the last byte of the response. For a
    /// streamed exchange with an ``idleTimeout``, the longest wait for the response head only.
    public var timeout: Duration
    /// A response body larger than this fails with ``OutpostError/Code/responseTooLarge``.
    public var maxResponseBytes: Int
    /// For ``ClientTransport/stream(_:body:options:)`` only: when set, the exchange has no overall
    /// deadline; instead the body fails with ``OutpostError/Code/timeout`` after this long without
    /// a byte (while the caller is ready for more: a slow reader is not a silent server). For
    /// responses that do not end, such as a change feed; `nil` (the default) keeps ``timeout`` as a
    /// deadline for the whole exchange, as for a file transfer.
    public var idleTimeout: Duration?

    public init(timeout: Duration = .seconds(10), maxResponseBytes: Int = 32 * 1024 * 1024, idleTimeout: Duration? = nil) {
        self.timeout = timeout
        self.maxResponseBytes = maxResponseBytes
        self.idleTimeout = idleTimeout
    }
}

/// Sends one HTTP request and returns the response with its whole body.
///
/// The shape follows swift-openapi-runtime's `ClientTransport`, on swift-http-types. A transport
/// reports failures as ``OutpostError`` with the codes ``OutpostError/Code/cannotConnect`` (no
/// connection), ``OutpostError/Code/connectionLost`` (the connection broke after the request was
/// sent), ``OutpostError/Code/malformedResponse`` (the reply is not HTTP), ``OutpostError/Code/timeout``
/// (the whole exchange, body included, took longer than ``TransportOptions/timeout``),
/// ``OutpostError/Code/cancelled`` or ``OutpostError/Code/responseTooLarge``; it never turns an HTTP
/// status into an error, which is the client's job. Any other error it throws is reported as
/// ``OutpostError/Code/transportFailed``. `shutdown()` should cancel what is in flight and return promptly.
///
/// Outpost ships ``URLSessionTransport`` (the default on Apple platforms) and, off Apple platforms,
/// `AsyncHTTPClientTransport` (the default there).
public protocol ClientTransport: Sendable {
    /// Sends `request` (whose URL is absolute) with an optional body.
    func send(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> (HTTPResponse, Data)

    /// Sends `request` with an optional body that is read as it goes out, and returns as soon as the
    /// response head arrives, with a body that is read as it comes in: files larger than memory and
    /// responses that do not end (Server-Sent Events). The one streaming path of the SDK: file
    /// transfers and ``EntityStore/changes(of:after:retry:limits:)`` both use it.
    ///
    /// - The request body's length, when known, is sent as `Content-Length`.
    /// - Timeouts: the head must come within ``TransportOptions/timeout``. Without an
    ///   ``TransportOptions/idleTimeout``, `timeout` also bounds the whole exchange (a file
    ///   transfer); with one, only silences of the body are bounded (a stream that may never end).
    ///   ``TransportOptions/maxResponseBytes`` does not apply: the reader decides what it keeps.
    /// - Backpressure: the built-in transports read from the network only as fast as the body is
    ///   iterated, holding at most about 1 MiB ahead of the reader.
    /// - Cancellation: cancelling the calling task, the task iterating the body, or dropping the
    ///   body stream stops the request and closes its connection.
    /// - Failures are reported as by ``send(_:body:options:)``, also while the body is read.
    ///
    /// The default implementation collects both bodies in memory through ``send(_:body:options:)``
    /// (right for any transport, but neither bounded nor endless); the built-in transports replace it.
    func stream(_ request: HTTPRequest, body: ByteStream?, options: TransportOptions) async throws -> (HTTPResponse, ByteStream)

    /// Releases the transport's resources. Called by a client that owns the transport.
    func shutdown() async throws
}

extension ClientTransport {
    public func shutdown() async throws {}
}

/// The failures every transport reports, worded once.
extension OutpostError {
    @_spi(OutpostInternal) public static func transportTimeout(_ options: TransportOptions, underlying: any Error) -> OutpostError
    {
        OutpostError(
            .timeout, "No complete response within \(options.timeout)",
            suggestion: "Retry later, or raise Configuration.timeout if the operation is slow by nature", underlying: underlying)
    }

    @_spi(OutpostInternal) public static func transportCancelled(underlying: any Error) -> OutpostError {
        OutpostError(.cancelled, "The request was cancelled", underlying: underlying)
    }

    @_spi(OutpostInternal) public static func connectionLost(underlying: any Error) -> OutpostError {
        OutpostError(
            .connectionLost, "The connection closed before the response was complete",
            suggestion: "The server may have stopped mid-request; check its logs, then retry", underlying: underlying)
    }

    @_spi(OutpostInternal) public static func malformedResponse(underlying: any Error) -> OutpostError {
        OutpostError(
            .malformedResponse, "The server's reply is not a valid HTTP response",
            suggestion:
                "Check that the base URL's host and port are those of an HTTP server (not TLS on a plain-http URL, or another protocol)",
            underlying: underlying)
    }

    @_spi(OutpostInternal) public static func cannotConnect(_ detail: String, underlying: any Error) -> OutpostError {
        OutpostError(
            .cannotConnect, "Could not connect to the server (\(detail))",
            suggestion: "Check that the server is running and that the base URL is right", underlying: underlying)
    }

    @_spi(OutpostInternal) public static func responseTooLarge(_ options: TransportOptions, underlying: (any Error)?)
        -> OutpostError
    {
        OutpostError(
            .responseTooLarge, "The response was larger than \(options.maxResponseBytes) bytes",
            suggestion: "Raise Configuration.maxResponseBytes or ask for less (a smaller page)", underlying: underlying)
    }
}
