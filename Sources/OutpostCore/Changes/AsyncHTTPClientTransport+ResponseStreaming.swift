#if canImport(AsyncHTTPClient)
    public import Foundation
    public import HTTPTypes
    import AsyncHTTPClient
    import NIOCore
    import OutpostSupport

    extension AsyncHTTPClientTransport: StreamingClientTransport {
        /// Returns at the response head (within ``TransportOptions/timeout``); the body is read as it
        /// arrives, with no deadline, for as long as the caller iterates it. A transport that owns its
        /// client opens these streams on a connection pool of their own, so that open streams never
        /// leave the requests without a connection.
        public func streamResponse(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> (
            HTTPResponse, ResponseByteStream
        ) {
            let prepared = try Self.clientRequest(request, body: body)
            do {
                let response = try await eventStreams.client(fallback: client).execute(
                    prepared, timeout: .nanoseconds(options.timeout.inNanoseconds))
                let chunks = response.body.map { buffer in Data(buffer.readableBytesView) }
                return (Self.head(of: response), ResponseByteStream(chunks) { Self.classify($0, options: options) })
            } catch {
                throw Self.classify(error, options: options)
            }
        }
    }
#endif
