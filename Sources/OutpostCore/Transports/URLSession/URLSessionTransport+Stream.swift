import Foundation
public import HTTPTypes
@_spi(OutpostInternal) import OutpostSupport
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension URLSessionTransport {
    /// Streams the response body (see ``ClientTransport/stream(_:body:options:)``) through a data
    /// task of the transport's streaming session, whose delegate hands each piece to the exchange.
    /// On Apple platforms the task is suspended while the exchange's buffer (about 1 MiB) is full.
    /// FoundationNetworking on Linux goes on receiving while a task is suspended, so there what
    /// arrives past the buffer waits in a temporary file (removed from its folder at once) until the
    /// reader takes it: memory stays bounded either way.
    ///
    /// The request body streams through a bound stream pair on Apple platforms. FoundationNetworking
    /// on Linux cannot read a body stream as it goes, so there the body is first written to a
    /// temporary file, which the upload task then reads: memory stays bounded, at the cost of a
    /// copy on disk.
    public func stream(_ request: HTTPRequest, body: ByteStream?, options: TransportOptions) async throws -> (
        HTTPResponse, ByteStream
    ) {
        guard let url = request.url else {
            throw OutpostError(.invalidRequest, "The request has no absolute URL")
        }
        var outgoing = URLRequest(url: url)
        outgoing.httpMethod = request.method.rawValue
        // URLSession's own timeout is the longest silence; the exchange's watchdog enforces the
        // real limits, so this one only has to be no shorter than them.
        outgoing.timeoutInterval = max(options.timeout, options.idleTimeout ?? .zero).inSeconds
        for field in request.headerFields {
            outgoing.addValue(field.value, forHTTPHeaderField: field.name.rawName)
        }
        let isHTTP = ["http", "https"].contains(url.scheme?.lowercased() ?? "")
        #if canImport(Darwin)
            let exchange = StreamedExchange(options: options)
        #else
            // FoundationNetworking keeps receiving while a task is suspended: past the bound, the
            // body waits in a temporary file instead of memory.
            let exchange = StreamedExchange(options: options, spills: true)
        #endif
        let classify: @Sendable (any Error) -> any Error = { Self.classify($0, options: options, httpURL: isHTTP) }
        let task: URLSessionDataTask
        var cleanup: (@Sendable () -> Void)?
        if let body {
            if let length = body.length { outgoing.setValue(String(length), forHTTPHeaderField: "Content-Length") }
            #if canImport(Darwin)
                let pump = Self.boundStream(for: body, into: &outgoing)
                task = streams.session.dataTask(with: outgoing)
                cleanup = { pump.cancel() }
            #else
                let spool = try await Self.spool(body)
                task = streams.session.uploadTask(with: outgoing, fromFile: spool)
                cleanup = { try? FileManager.default.removeItem(at: spool) }
            #endif
        } else {
            task = streams.session.dataTask(with: outgoing)
        }
        streams.register(task, exchange: exchange, classify: classify, cleanup: cleanup)
        exchange.onCancel { task.cancel() }
        task.resume()
        return try await exchange.open()
    }

    /// The request head of a response, as swift-http-types fields.
    static func head(of http: HTTPURLResponse) -> HTTPResponse {
        var fields = HTTPFields()
        for (key, value) in http.allHeaderFields {
            if let key = key as? String, let name = HTTPField.Name(key), let value = value as? String {
                fields.append(HTTPField(name: name, value: value))
            }
        }
        return HTTPResponse(status: .init(code: http.statusCode), headerFields: fields)
    }

    #if canImport(Darwin)
        /// Sets `request`'s body stream to a bound stream pair fed from `body` by a task, which is returned.
        static func boundStream(for body: ByteStream, into request: inout URLRequest) -> Task<Void, Never> {
            var input: InputStream?
            var output: OutputStream?
            Stream.getBoundStreams(withBufferSize: 256 * 1024, inputStream: &input, outputStream: &output)
            request.httpBodyStream = input
            nonisolated(unsafe) let writer = output
            return Task.detached {
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
    #else
        /// Writes `body` to a new temporary file, owner-only, chunk by chunk.
        static func spool(_ body: ByteStream) async throws -> URL {
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-upload-\(UUID().uuidString)")
            guard FileManager.default.createFile(atPath: url.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw OutpostError(
                    .invalidRequest,
                    "Cannot create a temporary file for the request body in \(url.deletingLastPathComponent().path)",
                    suggestion: "Make the temporary folder writable, or use AsyncHTTPClientTransport, which streams without one")
            }
            do {
                let handle = try FileHandle(forWritingTo: url)
                defer { try? handle.close() }
                for try await chunk in body { try handle.write(contentsOf: chunk) }
                return url
            } catch {
                try? FileManager.default.removeItem(at: url)
                throw error
            }
        }
    #endif
}

/// The session a ``URLSessionTransport`` streams through, and its delegate, which routes each
/// task's events to its ``StreamedExchange``.
///
/// Its own session (with the transport's session's configuration), because URLSession hands a
/// body over piece by piece only to a session delegate.
final class URLSessionStreams: NSObject, URLSessionDataDelegate, Sendable {
    struct Entry {
        var exchange: StreamedExchange
        var classify: @Sendable (any Error) -> any Error
        var cleanup: (@Sendable () -> Void)?
    }

    private let entries = Mutex<[Int: Entry]>([:])
    private let made = Mutex<URLSession?>(nil)
    private let configuration: URLSessionConfiguration

    init(configuration: URLSessionConfiguration) {
        // Copied: the caller's configuration object may change later.
        self.configuration = configuration.copy() as? URLSessionConfiguration ?? configuration
    }

    /// The streaming session, made on first use.
    var session: URLSession {
        made.withLock { made in
            if let made { return made }
            let session = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
            made = session
            return session
        }
    }

    func register(
        _ task: URLSessionTask, exchange: StreamedExchange, classify: @escaping @Sendable (any Error) -> any Error,
        cleanup: (@Sendable () -> Void)?
    ) {
        entries.withLock { $0[task.taskIdentifier] = Entry(exchange: exchange, classify: classify, cleanup: cleanup) }
    }

    /// Cancels the streams in flight and invalidates the session.
    func shutdown() {
        made.withLock { $0 }?.invalidateAndCancel()
    }

    private func entry(_ task: URLSessionTask) -> Entry? {
        entries.withLock { $0[task.taskIdentifier] }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        guard let entry = entry(dataTask) else { return completionHandler(.cancel) }
        guard let http = response as? HTTPURLResponse else {
            entry.exchange.cancel(OutpostError(.malformedResponse, "The response was not an HTTP response"))
            return completionHandler(.cancel)
        }
        let length = http.expectedContentLength >= 0 ? http.expectedContentLength : nil
        entry.exchange.receive(head: URLSessionTransport.head(of: http), length: length)
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let exchange = entry(dataTask)?.exchange else { return }
        if exchange.append(data), !exchange.spills {
            // The buffer is full: no more from the network until the reader has made room.
            dataTask.suspend()
            exchange.whenDrained { dataTask.resume() }
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let entry = entries.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        entry.cleanup?()
        entry.exchange.finish(error.map(entry.classify))
    }
}
