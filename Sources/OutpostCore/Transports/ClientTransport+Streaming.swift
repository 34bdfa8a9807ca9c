import Foundation
public import HTTPTypes

extension ClientTransport {
    /// Collects the request body, sends it with ``send(_:body:options:)`` and hands the whole
    /// response body back as one chunk: correct for any transport, but it holds both bodies in
    /// memory. ``AsyncHTTPClientTransport`` and ``URLSessionTransport`` (on Apple platforms) stream.
    public func stream(_ request: HTTPRequest, body: ByteStream?, options: TransportOptions) async throws -> (
        HTTPResponse, ByteStream
    ) {
        let data = try await body?.collect(upTo: Int.max)
        let (response, received) = try await send(request, body: data, options: options)
        return (response, .data(received))
    }
}
