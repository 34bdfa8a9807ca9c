/// Where an error that is not an ``OutpostError`` came from, so that it is reported as such and
/// not as a network failure (in the manner of swift-openapi-runtime's `ClientError`).
@_spi(OutpostInternal) public enum FailingLayer: Sendable {
    /// The middleware of this type.
    case middleware(String)
    /// The transport of this type.
    case transport(String)
    /// A ``ClientOperation``'s `makeRequest` or `handleResponse`, by operation name.
    case handler(String)
}

extension OutpostError {
    /// Turns an error thrown by `layer` into an `OutpostError` that names the layer and keeps the
    /// cause; an `OutpostError` stays as it is, a cancellation becomes ``Code/cancelled`` and a
    /// `DecodingError` becomes ``Code/decodingFailed``.
    @_spi(OutpostInternal) public static func wrap(_ error: any Error, layer: FailingLayer, method: String?, path: String?)
        -> OutpostError
    {
        if let error = error as? OutpostError {
            guard let method, let path else { return error }
            return error.attributed(method: method, path: path)
        }
        if error is CancellationError {
            return OutpostError(.cancelled, "The request was cancelled", method: method, path: path, underlying: error)
        }
        switch layer {
        case .middleware(let name):
            return OutpostError(
                .middlewareFailed, "The middleware \(name) failed: \(error)",
                suggestion: "The request did not fail on the network; see the middleware's error", method: method, path: path,
                underlying: error)
        case .transport(let name):
            return OutpostError(
                .transportFailed, "The transport \(name) failed: \(error)",
                suggestion: "See the transport's error; a transport should report failures as OutpostError", method: method,
                path: path, underlying: error)
        case .handler(let name):
            if error is DecodingError {
                var failure = OutpostError.decoding(error, type: Any.self)
                failure.message = "The response handler of \(name) could not decode the response: \(error)"
                failure.method = method
                failure.path = path
                return failure
            }
            return OutpostError(
                .handlerFailed, "The operation \(name) failed while building its request or reading the response: \(error)",
                suggestion: "The request did not fail on the network; see the operation's error", method: method, path: path,
                underlying: error)
        }
    }
}
