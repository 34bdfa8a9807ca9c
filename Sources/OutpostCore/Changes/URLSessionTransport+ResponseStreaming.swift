#if canImport(Darwin)
    public import Foundation
    public import HTTPTypes

    extension URLSessionTransport: StreamingClientTransport {
        /// The longest silence a streamed response may keep (`URLRequest.timeoutInterval`): long
        /// enough for a change feed's heartbeats, which come every 15 s by default.
        static var streamSilenceTimeout: TimeInterval { 90 }

        /// Returns at the response head, read with `URLSession.bytes(for:)`; the body arrives in
        /// chunks that end at line feeds.
        public func streamResponse(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> (
            HTTPResponse, ResponseByteStream
        ) {
            guard let url = request.url else {
                throw OutpostError(.invalidRequest, "The request has no absolute URL")
            }
            var outgoing = URLRequest(url: url)
            outgoing.httpMethod = request.method.rawValue
            outgoing.timeoutInterval = Self.streamSilenceTimeout
            for field in request.headerFields {
                outgoing.addValue(field.value, forHTTPHeaderField: field.name.rawName)
            }
            outgoing.httpBody = body
            let isHTTP = ["http", "https"].contains(url.scheme?.lowercased() ?? "")
            do {
                let (bytes, response) = try await session.bytes(for: outgoing)
                guard let http = response as? HTTPURLResponse else {
                    throw OutpostError(.malformedResponse, "The response was not an HTTP response")
                }
                var fields = HTTPFields()
                for (key, value) in http.allHeaderFields {
                    if let key = key as? String, let name = HTTPField.Name(key), let value = value as? String {
                        fields.append(HTTPField(name: name, value: value))
                    }
                }
                let head = HTTPResponse(status: .init(code: http.statusCode), headerFields: fields)
                // The bytes are handed over as line-sized chunks by a task that stops with the reader.
                let (chunks, sink) = AsyncThrowingStream.makeStream(of: Data.self)
                let pump = Task {
                    do {
                        for try await chunk in LineChunks(base: bytes) { sink.yield(chunk) }
                        sink.finish()
                    } catch {
                        sink.finish(throwing: error)
                    }
                }
                sink.onTermination = { _ in pump.cancel() }
                return (head, ResponseByteStream(chunks) { Self.classify($0, options: options, httpURL: isHTTP) })
            } catch {
                throw Self.classify(error, options: options, httpURL: isHTTP)
            }
        }
    }
#endif
