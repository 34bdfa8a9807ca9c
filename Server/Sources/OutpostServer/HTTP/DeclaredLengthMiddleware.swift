import HTTPTypes
import Hummingbird

/// Refuses a request by its declared `Content-Length` before any of its body is read: a length
/// over the route's limit is 413 `payload_too_large`, and a length that is not a decimal number
/// that fits in 63 bits (`2^63`, `-1`, `12a`, or two different values) is 400
/// `invalid_content_length`. Both answers close the connection: its body was never read, so the
/// next bytes on it are not the start of a request, and reading them only to drop them would let a
/// client make the server read any amount of data. The connection's input is closed at once
/// (the answer still goes out), so the server neither reads nor waits for the body.
///
/// Without this, a route reading a body finds out the size only while collecting it, and a client
/// that declares a large body but sends it slowly is answered only when the read timer fires.
struct DeclaredLengthMiddleware: RouterMiddleware {
    typealias Context = OutpostRequestContext

    /// The largest body a request may send, and the answer to one that declares more.
    struct Limit: Sendable {
        var bytes: Int64
        var refusal: ServerError
    }

    /// Each request's limit: ``ServerConfiguration/maxFileBytes`` for a file upload,
    /// ``ServerConfiguration/maxBodyBytes`` for everything else.
    let limit: @Sendable (Request) -> Limit

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let values = request.headers[values: .contentLength]
        guard let first = values.first else { return try await next(request, context) }
        guard let declared = Self.length(first), values.allSatisfy({ Self.length($0) == declared }) else {
            context.channel.close(mode: .input, promise: nil)
            throw ServerError(
                .badRequest, code: "invalid_content_length",
                message: "Content-Length must be one decimal number of bytes below 2^63; send the body's exact length",
                headers: [.connection: "close"])
        }
        let limit = limit(request)
        guard declared <= limit.bytes else {
            context.channel.close(mode: .input, promise: nil)
            throw limit.refusal
        }
        return try await next(request, context)
    }

    /// The value of one `Content-Length` field: ASCII digits only (RFC 9110 §8.6, no sign or
    /// space), of a number that fits in an `Int64`.
    static func length(_ value: String) -> Int64? {
        guard !value.isEmpty, value.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            return nil
        }
        return Int64(value)
    }
}
