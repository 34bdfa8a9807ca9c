#if os(Linux) || os(Android) || os(Windows) || os(OpenBSD)
    import Foundation
    import HTTPTypes
    import NIOCore
    import NIOHTTP1

    /// What ``AsyncHTTPClientTransport`` needs to go between swift-http-types and NIOHTTP1: header
    /// fields both ways, the method, and the errors of a NIO channel as ``OutpostError``s.
    enum NIOHTTP1Conversions {
        /// The request's header fields as NIO headers.
        static func headers(of request: HTTPRequest) -> HTTPHeaders {
            var headers = HTTPHeaders()
            headers.reserveCapacity(request.headerFields.count)
            for field in request.headerFields {
                headers.add(name: field.name.rawName, value: field.value)
            }
            return headers
        }

        /// NIO header fields as swift-http-types fields.
        static func fields(_ headers: HTTPHeaders) -> HTTPFields {
            var fields = HTTPFields()
            fields.reserveCapacity(headers.count)
            for header in headers {
                if let name = HTTPField.Name(header.name) { fields.append(HTTPField(name: name, value: header.value)) }
            }
            return fields
        }

        /// NIO's method, without a string comparison for the common ones.
        static func method(_ method: HTTPRequest.Method) -> HTTPMethod {
            switch method {
            case .get: return .GET
            case .post: return .POST
            case .put: return .PUT
            case .delete: return .DELETE
            case .patch: return .PATCH
            case .head: return .HEAD
            default: return HTTPMethod(rawValue: method.rawValue)
            }
        }

        /// A NIO response head as swift-http-types' response.
        static func response(_ head: HTTPResponseHead) -> HTTPResponse {
            HTTPResponse(status: .init(code: Int(head.status.code)), headerFields: fields(head.headers))
        }

        /// The errors every NIO HTTP/1 connection can end with, as ``OutpostError``s; `nil` for an
        /// error that is not one of them (each transport classifies its own first).
        static func classify(_ error: any Error, options: TransportOptions) -> OutpostError? {
            if let error = error as? OutpostError { return error }
            if error is CancellationError { return .transportCancelled(underlying: error) }
            if error is NIOTooManyBytesError { return .responseTooLarge(options, underlying: error) }
            // The connection was made and the request sent; what came back was not HTTP.
            if error is HTTPParserError { return .malformedResponse(underlying: error) }
            if isConnectionEnd(error) { return .connectionLost(underlying: error) }
            return nil
        }

        /// Whether `error` says the connection closed or was reset under the exchange.
        static func isConnectionEnd(_ error: any Error) -> Bool {
            if let error = error as? IOError { return [ECONNRESET, EPIPE].contains(error.errnoCode) }
            if let error = error as? ChannelError {
                return error == .eof || error == .ioOnClosedChannel || error == .outputClosed
            }
            return false
        }
    }
#endif
