import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
@_spi(OutpostInternal) import OutpostCore

extension Response {
    /// A JSON response from untyped JSON.
    static func json(_ value: JSONValue, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        bytes(value.jsonData(), contentType: "application/json", status: status, headers: headers)
    }

    static func bytes(_ data: Data, contentType: String, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response
    {
        var fields = headers
        fields[.contentType] = contentType
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}

extension Request {
    /// Reads the whole body, refusing more than `limit` bytes with 413, and a body that stops
    /// arriving (see ``ServerConfiguration/bodyReadTimeout``) with 408.
    func collectBody(limit: Int) async throws -> Data {
        var request = self
        do {
            let buffer = try await request.collectBody(upTo: limit)
            return Data(buffer.readableBytesView)
        } catch is NIOTooManyBytesError {
            throw ServerError(
                .contentTooLarge, code: "payload_too_large",
                message: "The request body is larger than \(limit) bytes; send less, or raise the server's body limit")
        } catch let error as RequestReadTimeout {
            throw error.serverError
        }
    }

    /// Reads the body as JSON; an empty body is `.null`. Nesting deeper than `maxDepth` is 400
    /// `json_too_deep`, found by a linear scan before any parsing; parsing is linear too.
    /// `maxKeys` and `exactNumbers` as ``parseJSON(_:maxDepth:maxKeys:exactNumbers:)`` takes them.
    func decodeJSON(
        limit: Int, maxDepth: Int = ServerConfiguration.defaultMaxJSONDepth,
        maxKeys: Int = ServerConfiguration.defaultMaxJSONKeys, exactNumbers: Bool = false
    ) async throws -> JSONValue {
        try Self.parseJSON(try await collectBody(limit: limit), maxDepth: maxDepth, maxKeys: maxKeys, exactNumbers: exactNumbers)
    }

    static func reason(_ error: any Error) -> String {
        if case DecodingError.dataCorrupted(let context) = error {
            if let underlying = context.underlyingError { return "\(underlying.localizedDescription)" }
            return context.debugDescription
        }
        return "\(error)"
    }
}

extension HTTPField.Name {
    static let pragma = HTTPField.Name("Pragma")!
    static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
    static let xFrameOptions = HTTPField.Name("X-Frame-Options")!
    static let xContentTypeOptions = HTTPField.Name("X-Content-Type-Options")!
    static let secFetchSite = HTTPField.Name("Sec-Fetch-Site")!
}
