import Foundation
public import HTTPTypes
@_spi(OutpostInternal) import OutpostSupport
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a ``URLSessionTransport`` exchange sends: bytes in memory, or a stream.
enum URLSessionRequestBody: Sendable {
    case data(Data)
    case stream(ByteStream)
}

extension URLSessionTransport {
    /// Streams the response body (see ``ClientTransport/stream(_:body:options:)``) through a data
    /// task whose delegate hands each piece to the exchange. On Apple platforms the task is
    /// suspended while the exchange's buffer (about 1 MiB) is full. FoundationNetworking on Linux
    /// goes on receiving while a task is suspended, so there what arrives past the buffer waits in a
    /// temporary file (removed from its folder at once) until the reader takes it: memory stays
    /// bounded either way.
    ///
    /// The request body streams through a bound stream pair on Apple platforms; when the server asks
    /// for it again (a 307 or 308 redirect, an authentication challenge), a body read from a file or
    /// from memory is sent again from its start, and any other fails with a clear error.
    /// FoundationNetworking on Linux cannot read a body stream as it goes, so there the body is
    /// first written to a temporary file, which the upload task then reads: memory stays bounded,
    /// at the cost of a copy on disk.
    public func stream(_ request: HTTPRequest, body: ByteStream?, options: TransportOptions) async throws -> (
        HTTPResponse, ByteStream
    ) {
        try await start(request, body: body.map { .stream($0) }, options: options)
    }

    /// Starts an exchange and returns the response head with the body as it arrives.
    func start(_ request: HTTPRequest, body: URLSessionRequestBody?, options: TransportOptions) async throws -> (
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
        // Outpost's HTTPCache is the one cache: never an answer from the session's URLCache.
        outgoing.cachePolicy = .reloadIgnoringLocalCacheData
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
        var resend: (@Sendable () -> InputStream?)?
        switch body {
        case nil:
            task = streams.dataTask(with: outgoing)
        case .data(let data):
            outgoing.httpBody = data
            task = streams.dataTask(with: outgoing)
        case .stream(let body):
            if let length = body.length { outgoing.setValue(String(length), forHTTPHeaderField: "Content-Length") }
            #if canImport(Darwin)
                let pumps = BodyPumps()
                outgoing.httpBodyStream = pumps.start(body)
                task = streams.dataTask(with: outgoing)
                cleanup = { pumps.cancel() }
                if let reopen = body.reopen {
                    resend = { (try? reopen()).map { pumps.start($0) } }
                }
            #else
                let spool = try await Self.spool(body)
                task = streams.uploadTask(with: outgoing, fromFile: spool)
                cleanup = { try? FileManager.default.removeItem(at: spool) }
            #endif
        }
        streams.register(task, exchange: exchange, classify: classify, cleanup: cleanup, resend: resend)
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

    #if !canImport(Darwin)
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

/// The delegate of a ``URLSessionTransport``'s tasks, which routes each task's events to its
/// ``StreamedExchange``.
///
/// On Apple platforms the tasks run on the transport's session with this object as their own
/// delegate (`URLSessionTask.delegate`), so a borrowed session's delegate still answers the rest
/// (authentication challenges). FoundationNetworking does not call task delegates, so on Linux the
/// tasks run on a session of this object's own, with the transport's session's configuration.
final class URLSessionStreams: NSObject, URLSessionDataDelegate, Sendable {
    struct Entry {
        var task: URLSessionTask
        var exchange: StreamedExchange
        var classify: @Sendable (any Error) -> any Error
        var cleanup: (@Sendable () -> Void)?
        /// A new stream of the request body from its start, when the body can be read again.
        var resend: (@Sendable () -> InputStream?)?
    }

    private let entries = Mutex<[Int: Entry]>([:])
    #if canImport(Darwin)
        private let session: URLSession
    #else
        private let made = Mutex<URLSession?>(nil)
        private let configuration: URLSessionConfiguration
    #endif

    init(session: URLSession, owned: Bool) {
        #if canImport(Darwin)
            self.session = session
        #else
            // A copy: the caller's configuration object may change later.
            self.configuration = owned ? session.configuration : URLSessionTransport.prepared(session.configuration)
        #endif
    }

    #if canImport(Darwin)
        func dataTask(with request: URLRequest) -> URLSessionDataTask {
            let task = session.dataTask(with: request)
            task.delegate = self
            return task
        }
    #else
        /// The session the tasks run on, made on first use.
        private var session: URLSession {
            made.withLock { made in
                if let made { return made }
                let session = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
                made = session
                return session
            }
        }

        func dataTask(with request: URLRequest) -> URLSessionDataTask { session.dataTask(with: request) }

        func uploadTask(with request: URLRequest, fromFile file: URL) -> URLSessionUploadTask {
            session.uploadTask(with: request, fromFile: file)
        }
    #endif

    func register(
        _ task: URLSessionTask, exchange: StreamedExchange, classify: @escaping @Sendable (any Error) -> any Error,
        cleanup: (@Sendable () -> Void)?, resend: (@Sendable () -> InputStream?)?
    ) {
        entries.withLock {
            $0[task.taskIdentifier] = Entry(
                task: task, exchange: exchange, classify: classify, cleanup: cleanup, resend: resend)
        }
    }

    /// Cancels this transport's tasks in flight (a borrowed session stays the application's), and on
    /// Linux invalidates the session of its own.
    func shutdown() {
        for entry in entries.withLock({ Array($0.values) }) { entry.task.cancel() }
        #if !canImport(Darwin)
            made.withLock { $0 }?.invalidateAndCancel()
        #endif
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

    /// Nothing an exchange receives goes into a `URLCache`: Outpost's `HTTPCache` middleware is the
    /// one cache, and a borrowed session's configuration may name the app's cache, which would
    /// otherwise keep authenticated responses on disk. (The transport's own sessions have no
    /// `URLCache` at all.)
    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, willCacheResponse proposedResponse: CachedURLResponse,
        completionHandler: @escaping @Sendable (CachedURLResponse?) -> Void
    ) {
        completionHandler(nil)
    }

    #if canImport(Darwin)
        /// URLSession asks for the body again to follow a 307 or 308 redirect or to answer an
        /// authentication challenge: a body that can be read again starts over; any other ends the
        /// exchange with an error that says what to do.
        func urlSession(
            _ session: URLSession, task: URLSessionTask,
            needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void
        ) {
            guard let entry = entry(task) else { return completionHandler(nil) }
            if let stream = entry.resend?() { return completionHandler(stream) }
            entry.exchange.cancel(
                OutpostError(
                    .invalidRequest,
                    "The server asked for the request body again (a 307 or 308 redirect, or an authentication challenge), and this body can be read only once",
                    suggestion:
                        "Send the request to the final URL, or give a body that can be read again: Data or a file (ByteStream.file)"
                ))
            completionHandler(nil)
        }
    #endif

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let entry = entries.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        entry.cleanup?()
        entry.exchange.finish(error.map(entry.classify))
    }
}
