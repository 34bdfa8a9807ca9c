#if canImport(Darwin)
    import OutpostSupport
    public import Foundation
    public import HTTPTypes

    // Apple platforms only: FoundationNetworking on Linux has neither `bytes(for:)` nor bound
    // streams that libcurl reads as it goes, so there URLSessionTransport keeps the collecting
    // default of `ClientTransport.stream` and AsyncHTTPClientTransport is the streaming transport.
    extension URLSessionTransport {
        /// Streams both bodies: the request body through a bound stream pair that `URLSession` reads
        /// as it sends, the response body through `URLSession.bytes(for:)`, in chunks of 64 KiB.
        public func stream(_ request: HTTPRequest, body: ByteStream?, options: TransportOptions) async throws -> (
            HTTPResponse, ByteStream
        ) {
            guard let url = request.url else {
                throw OutpostError(.invalidRequest, "The request has no absolute URL")
            }
            var outgoing = URLRequest(url: url)
            outgoing.httpMethod = request.method.rawValue
            outgoing.timeoutInterval =
                options.timeout.inSeconds
            for field in request.headerFields {
                outgoing.addValue(field.value, forHTTPHeaderField: field.name.rawName)
            }
            var pump: Task<Void, Never>?
            if let body {
                var input: InputStream?
                var output: OutputStream?
                Stream.getBoundStreams(withBufferSize: 256 * 1024, inputStream: &input, outputStream: &output)
                outgoing.httpBodyStream = input
                if let length = body.length { outgoing.setValue(String(length), forHTTPHeaderField: "Content-Length") }
                nonisolated(unsafe) let writer = output
                pump = Task.detached {
                    guard let writer else { return }
                    writer.open()
                    defer { writer.close() }
                    do {
                        for try await chunk in body {
                            var sent = 0
                            while sent < chunk.count {
                                let written = chunk[(chunk.startIndex + sent)...].withUnsafeBytes { bytes in
                                    writer.write(bytes.bindMemory(to: UInt8.self).baseAddress!, maxLength: bytes.count)
                                }
                                guard written > 0 else { return }
                                sent += written
                            }
                        }
                    } catch {
                        return
                    }
                }
            }
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
                let length = http.expectedContentLength >= 0 ? http.expectedContentLength : nil
                let head = HTTPResponse(status: .init(code: http.statusCode), headerFields: fields)
                return (head, ByteStream(ChunkedBytes(base: bytes, pump: pump), length: length))
            } catch {
                pump?.cancel()
                throw Self.classify(error, options: options, httpURL: true)
            }
        }
    }

    /// `URLSession.AsyncBytes` gathered into chunks of up to 64 KiB.
    struct ChunkedBytes: AsyncSequence, Sendable {
        typealias Element = Data
        let base: URLSession.AsyncBytes
        let pump: Task<Void, Never>?

        struct AsyncIterator: AsyncIteratorProtocol {
            var base: URLSession.AsyncBytes.AsyncIterator
            mutating func next() async throws -> Data? {
                var chunk = Data()
                chunk.reserveCapacity(64 * 1024)
                while chunk.count < 64 * 1024, let byte = try await base.next() { chunk.append(byte) }
                return chunk.isEmpty ? nil : chunk
            }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: base.makeAsyncIterator()) }
    }
#endif
