import Foundation
public import Hummingbird
@_spi(OutpostInternal) import OutpostCore

/// A ``ServerError`` is Hummingbird's `HTTPResponseError`: a route (or a plugin's lambda or handler)
/// throws it and Hummingbird's router answers with its status, its header fields and the JSON error
/// envelope `{"error": {"code": ..., "message": ..., "details": ...}}`.
extension ServerError: HTTPResponseError {
    /// The envelope with ``status`` and ``headers`` (`Retry-After`, `WWW-Authenticate`, `Allow` …).
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        envelopeResponse
    }

    /// The envelope as a response; it needs neither the request nor its context.
    var envelopeResponse: Response { Response.json(envelope, status: status, headers: headers) }
}

/// An RFC 6749 §5.2 error answers in RFC 6749's shape, `{"error": code, "error_description": text}`,
/// never cached (RFC 6749 §5.1).
extension OAuthError: HTTPResponseError {
    func response(from request: Request, context: some RequestContext) throws -> Response {
        var fields = headers
        fields[.cacheControl] = "no-store"
        return Response.json(
            ["error": .string(code), "error_description": .string(description)], status: status, headers: fields)
    }
}
