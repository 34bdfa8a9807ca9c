#if canImport(AsyncHTTPClient)
    import OutpostSupport
    import AsyncHTTPClient
    import Foundation
    public import HTTPTypes
    import NIOCore

    extension AsyncHTTPClientTransport {
        /// Streams both bodies: the request body is read chunk by chunk as AsyncHTTPClient writes it,
        /// and the response body is handed over as it arrives, so memory stays flat whatever the size.
        public func stream(_ request: HTTPRequest, body: ByteStream?, options: TransportOptions) async throws -> (
            HTTPResponse, ByteStream
        ) {
            var outgoing = try Self.outgoing(request)
            if let body {
                let length = body.length.map { HTTPClientRequest.Body.Length.known($0) } ?? .unknown
                outgoing.body = .stream(ByteBufferChunks(base: body), length: length)
            }
            do {
                let response = try await client.execute(outgoing, deadline: .now() + .nanoseconds(options.timeout.inNanoseconds))
                let length = response.headers.first(name: "content-length").flatMap { Int64($0) }
                let head = HTTPResponse(status: .init(code: Int(response.status.code)), headerFields: Self.fields(of: response))
                return (head, ByteStream(DataChunks(base: response.body, options: options), length: length))
            } catch {
                throw Self.classify(error, options: options)
            }
        }
    }

    /// A ``ByteStream`` as AsyncHTTPClient's body chunks.
    struct ByteBufferChunks: AsyncSequence, Sendable {
        typealias Element = ByteBuffer
        let base: ByteStream

        struct AsyncIterator: AsyncIteratorProtocol {
            var base: ByteStream.AsyncIterator
            mutating func next() async throws -> ByteBuffer? {
                guard let data = try await base.next() else { return nil }
                return ByteBuffer(bytes: data)
            }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: base.makeAsyncIterator()) }
    }

    /// AsyncHTTPClient's response body as `Data` chunks, with its failures classified.
    struct DataChunks: AsyncSequence, Sendable {
        typealias Element = Data
        let base: HTTPClientResponse.Body
        let options: TransportOptions

        struct AsyncIterator: AsyncIteratorProtocol {
            var base: HTTPClientResponse.Body.AsyncIterator
            let options: TransportOptions
            mutating func next() async throws -> Data? {
                do {
                    guard let buffer = try await base.next() else {
                        // A cancelled body ends early rather than failing: never report it as complete.
                        try Task.checkCancellation()
                        return nil
                    }
                    return Data(buffer.readableBytesView)
                } catch {
                    throw AsyncHTTPClientTransport.classify(error, options: options)
                }
            }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: base.makeAsyncIterator(), options: options) }
    }
#endif
