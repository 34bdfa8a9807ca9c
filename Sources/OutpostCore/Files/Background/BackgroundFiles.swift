public import Foundation
import HTTPTypes
@_spi(OutpostInternal) import OutpostSupport
import Synchronization

extension OutpostFiles {
    /// Transfers that go on while the app is suspended, on `session` (a background `URLSession` on
    /// Apple platforms: `URLSessionTransferSession`). See ``BackgroundFiles``.
    ///
    /// One ``BackgroundFiles`` reads a session's events in a process: while the one made earlier
    /// for `session`'s identifier has not been stopped, it is returned, with the files, session and
    /// folder it was made with (make it once, at launch); otherwise a new one.
    public func background(_ session: any BackgroundTransferSession, folder: URL? = nil) -> BackgroundFiles {
        BackgroundFiles.registry.value(for: session.identifier, isUsable: { !$0.isStopped }) {
            BackgroundFiles(files: self, session: session, folder: folder, registering: false)
        }
    }
}

/// Uploads and downloads that the system carries on while the app is suspended or not running,
/// finished with the rules of ``OutpostFiles``: downloads resume from `<file>.part` with `Range`
/// and `If-Range` and are checked against the server's `Repr-Digest`; uploads send the file's
/// SHA-256, and after a break ask the server how much it holds and send the rest.
///
/// Make one at launch, for the app's lifetime, with the same session identifier each time: the
/// transfers an earlier launch started report their ends to it through ``results``.
///
/// ```swift
/// let background = client.files.background(URLSessionTransferSession(identifier: "com.example.transfers"))
/// let transfer = try await background.upload(from: videoURL, as: "holiday.mp4")
/// for await result in background.results where result.transfer == transfer { … }
/// ```
///
/// Each request is prepared when its task is created, through the client's middlewares, so
/// `AuthMiddleware` signs it then: the system sends it later as it is. A task that comes back
/// with 401 (its token expired while it waited) is signed and started again once.
///
/// When the system wakes the app for the session's events, the handler given to
/// `handleEvents(completionHandler:)` is called as soon as they are delivered (the session has
/// already moved received files out of the system's reach): checking SHA-256 digests and the
/// requests that resume a transfer come after it, so the handler never waits for them in the short
/// background time the system gives the app.
public final class BackgroundFiles: Sendable {
    public let files: OutpostFiles
    public let session: any BackgroundTransferSession
    /// Where remainders of resumed uploads wait while the system sends them.
    public let folder: URL
    /// The end of every transfer, those started by an earlier launch of the app included.
    public let results: AsyncStream<BackgroundTransferResult>
    /// Progress of the transfers as the session reports it.
    public let progress: AsyncStream<BackgroundTransferProgress>

    let resultSink: AsyncStream<BackgroundTransferResult>.Continuation
    let progressSink: AsyncStream<BackgroundTransferProgress>.Continuation
    let state = Mutex(State())
    private let loop = Mutex<Task<Void, Never>?>(nil)
    /// The finishing of ended tasks (digests, resumptions), one after the other, after the events.
    private let finishing = Mutex<Task<Void, Never>?>(nil)

    /// The one ``BackgroundFiles`` per session identifier that reads the session's events.
    static let registry = SessionRegistry<BackgroundFiles>(keepsValues: false)

    struct State {
        /// Why this object no longer starts transfers: ``stop()`` was called, or another took over
        /// its session.
        var stopped: String?
        /// The last progress reported per transfer id, so that it never decreases.
        var reported: [String: Int64] = [:]
        /// The handler the system gave the app with the session's events, until they are handled.
        var completionHandler: (@MainActor @Sendable () -> Void)?
        /// The session delivered its events before the app handed over the handler.
        var delivered = false
    }

    /// Starts reading `session`'s events, taking them over from any earlier reader: a
    /// ``BackgroundFiles`` made earlier in this process for the same identifier is stopped (its
    /// streams end, and it starts no more transfers). ``OutpostFiles/background(_:folder:)``
    /// returns the one in use instead.
    ///
    /// - Parameters:
    ///   - files: the client's files, whose middlewares sign each request and whose options give
    ///     the chunk size and the number of automatic resumes.
    ///   - session: runs the tasks; a background `URLSession` on Apple platforms.
    ///   - folder: where remainders of resumed uploads wait; default: a folder named after the
    ///     session in Application Support (not Caches, which the system may empty while a
    ///     transfer runs), excluded from backups.
    public convenience init(files: OutpostFiles, session: any BackgroundTransferSession, folder: URL? = nil) {
        self.init(files: files, session: session, folder: folder, registering: true)
    }

    init(files: OutpostFiles, session: any BackgroundTransferSession, folder: URL?, registering: Bool) {
        self.files = files
        self.session = session
        self.folder = folder ?? Self.defaultFolder(session.identifier)
        (results, resultSink) = AsyncStream.makeStream(of: BackgroundTransferResult.self)
        (progress, progressSink) = AsyncStream.makeStream(
            of: BackgroundTransferProgress.self, bufferingPolicy: .bufferingNewest(256))
        let events = session.events()
        loop.withLock {
            $0 = Task { [weak self] in
                for await event in events {
                    guard let self else { return }
                    await self.handle(event)
                }
            }
        }
        if registering {
            Self.registry.replace(session.identifier, with: self)?.retire(
                "another BackgroundFiles took over the session \(session.identifier)")
        }
    }

    deinit { stop() }

    /// Stops reading the session's events and ends ``results`` and ``progress``; ``upload(from:as:contentType:uploadID:)``
    /// and ``download(_:to:)`` throw from then on. The tasks go on; a new `BackgroundFiles` on the
    /// same session receives their ends.
    public func stop() {
        retire("it was stopped")
    }

    /// Whether ``stop()`` was called or another object took over the session.
    var isStopped: Bool { state.withLock { $0.stopped != nil } }

    func retire(_ reason: String) {
        state.withLock { state in
            if state.stopped == nil { state.stopped = reason }
        }
        Self.registry.remove(session.identifier, ifItIs: ObjectIdentifier(self))
        loop.withLock { $0?.cancel() }
        resultSink.finish()
        progressSink.finish()
    }

    /// Throws when this object no longer starts transfers.
    private func checkRunning() throws {
        guard let reason = state.withLock({ $0.stopped }) else { return }
        throw OutpostError(
            .invalidRequest, "This BackgroundFiles starts no more transfers: \(reason)",
            suggestion: "Use the one client.files.background(_:) returns for the session")
    }

    /// Runs `work` after the finishing work queued before it, without waiting for it.
    func afterEvents(_ work: @escaping @Sendable () async -> Void) {
        finishing.withLock { tail in
            let previous = tail
            tail = Task {
                await previous?.value
                await work()
            }
        }
    }

    /// Returns once the finishing work queued so far has ended (for tests).
    func finished() async {
        await finishing.withLock { $0 }?.value
    }

    /// Starts uploading the file at `fileURL` as `name`.
    ///
    /// The file is hashed first (its SHA-256 goes with the request, and the server refuses bytes
    /// that do not match it), so it must not change until the transfer ends. With the `uploadID`
    /// of an earlier upload, only what the server does not hold yet is sent.
    ///
    /// - Returns: the transfer, whose end ``results`` reports.
    public func upload(
        from fileURL: URL, as name: String, contentType: String = "application/octet-stream", uploadID: String? = nil
    ) async throws -> BackgroundTransfer {
        try checkRunning()
        let id = uploadID ?? OutpostFiles.newUploadID()
        var description = BackgroundTransferDescription(
            kind: .upload, id: id, name: name, path: fileURL.standardizedFileURL.path, resumesLeft: files.options.automaticResumes
        )
        let size = try OutpostFiles.size(of: fileURL)
        description.size = size
        description.sha256 = try OutpostFiles.hash(fileURL, upTo: size, chunkSize: files.options.chunkSize).finalize().hex
        description.contentType = contentType
        if let problem = description.problem {
            throw OutpostError(.invalidRequest, "The upload \(problem)", suggestion: "Check the name, upload id and file")
        }
        if uploadID != nil {
            description.offset = try await files.uploadOffset(of: name, uploadID: id) ?? 0
            description.resumedFrom = description.offset
        }
        try await startUpload(description)
        return description.transfer
    }

    /// Starts downloading `name` to `fileURL`, replacing what is there once the whole file has
    /// arrived and matched the server's SHA-256. Bytes that an earlier download left in
    /// `<fileURL>.part` are not asked for again.
    ///
    /// - Returns: the transfer, whose end ``results`` reports.
    public func download(_ name: String, to fileURL: URL) async throws -> BackgroundTransfer {
        try checkRunning()
        var description = BackgroundTransferDescription(
            kind: .download, id: OutpostFiles.newUploadID(), name: name, path: fileURL.standardizedFileURL.path,
            resumesLeft: files.options.automaticResumes)
        if let problem = description.problem {
            throw OutpostError(.invalidRequest, "The download \(problem)", suggestion: "Check the name and destination")
        }
        description.resumedFrom = PartialDownload(destination: fileURL).resumable()?.offset ?? 0
        try await startDownload(description)
        return description.transfer
    }

    /// Keeps the completion handler the system gave the app when it woke it for this session's
    /// events, and calls it (on the main actor) once they are handled: moved into place, checked,
    /// resumed, reported through ``results``.
    ///
    /// Call it from `application(_:handleEventsForBackgroundURLSession:completionHandler:)` when the
    /// identifier is ``BackgroundTransferSession/identifier``.
    public func handleEvents(completionHandler: @escaping @MainActor @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            guard state.delivered else {
                state.completionHandler = completionHandler
                return false
            }
            state.delivered = false
            return true
        }
        if now { Task { @MainActor in completionHandler() } }
    }

    /// The same, for UIKit's handler as the app delegate receives it
    /// (`@escaping () -> Void`, not `Sendable`): called on the main actor, as UIKit calls the
    /// delegate, and the handler is called there too. A closure written in place picks the other
    /// overload (this one is disfavoured), so calls from any isolation keep compiling.
    @MainActor @_disfavoredOverload
    public func handleEvents(completionHandler: @escaping () -> Void) {
        // Only ever called on the main actor (the other overload takes a main-actor handler), so
        // handing it across as Sendable is safe.
        nonisolated(unsafe) let handler = completionHandler
        handleEvents { @MainActor @Sendable in handler() }
    }

    /// Returns once the events the system woke the app for are handled: for SwiftUI's
    /// `.backgroundTask(.urlSession(_:))`, whose closure ends the background time when it returns.
    public func eventsHandled() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            handleEvents { continuation.resume() }
        }
    }

    // MARK: Starting tasks

    func startUpload(_ description: BackgroundTransferDescription) async throws {
        let source = URL(fileURLWithPath: description.path)
        let body = description.offset == 0 ? source : try writeRemainder(of: source, from: description.offset, id: description.id)
        var request = try OutpostFiles.request(
            .put, description.name, query: [URLQueryItem(name: "upload", value: description.id)])
        request.headers[.uploadOffset] = "\(description.offset)"
        // One request sends the bytes and ends the upload: the system then needs no second task,
        // which it might start only much later. The server checks the digest and keeps what
        // arrived when the connection breaks.
        request.headers[.uploadComplete] = "?1"
        if let sha256 = description.sha256, let digest = Hex.bytes(sha256) {
            request.headers[.reprDigest] = "sha-256=:\(Data(digest).base64EncodedString()):"
        }
        request.headers[.contentType] = description.contentType
        let signed = try await sign(request, operation: "files.upload")
        try session.startUpload(signed, fromFile: body, taskDescription: description.text)
    }

    func startDownload(_ description: BackgroundTransferDescription) async throws {
        var description = description
        var request = try OutpostFiles.request(.get, description.name)
        if let resumable = PartialDownload(destination: URL(fileURLWithPath: description.path)).resumable() {
            request.headers[.range] = "bytes=\(resumable.offset)-"
            request.headers[.ifRange] = resumable.etag
            description.offset = resumable.offset
        } else {
            description.offset = 0
        }
        let signed = try await sign(request, operation: "files.download")
        try session.startDownload(signed, taskDescription: description.text)
    }

    /// `request` as the client's middlewares leave it (signed by `AuthMiddleware`), without
    /// sending it: the last step answers `204 No Content` with `Cache-Control: no-store`.
    func sign(_ request: Request, operation: String) async throws -> HTTPRequest {
        let client = files.client
        let prepared = try client.prepare(request, operationName: operation)
        guard !client.middlewares.isEmpty else { return prepared.request }
        let captured = Mutex<HTTPRequest?>(nil)
        let context = MiddlewareContext(
            logger: client.configuration.logger, operationName: operation, baseURL: client.configuration.baseURL)
        _ = try await PreparedRequest.chain(client.middlewares[...], request: prepared.request, body: nil, context: context) {
            request, _ in
            captured.withLock { $0 = request }
            return ClientResponse(
                response: HTTPResponse(status: .noContent, headerFields: [.cacheControl: "no-store"]), body: Data())
        }
        guard let signed = captured.withLock({ $0 }) else {
            throw OutpostError(
                .middlewareFailed, "A middleware answered a background transfer's request itself, so there is nothing to send",
                suggestion: "Let file requests through to the transport", method: request.method.rawValue, path: request.path)
        }
        return signed
    }

    /// Copies the bytes of `source` from `offset` on into a file of ``folder`` (a background upload
    /// sends a whole file), owner-only.
    func writeRemainder(of source: URL, from offset: Int64, id: String) throws -> URL {
        try BackgroundFolder.prepare(folder)
        let target = remainderFile(id)
        try? FileManager.default.removeItem(at: target)
        guard FileManager.default.createFile(atPath: target.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw OutpostError(
                .invalidRequest, "Cannot write \(target.path) for the rest of an upload",
                suggestion: "Give BackgroundFiles a folder this program may write to")
        }
        let input = try FileHandle(forReadingFrom: source)
        defer { try? input.close() }
        let output = try FileHandle(forWritingTo: target)
        defer { try? output.close() }
        try input.seek(toOffset: UInt64(offset))
        while let chunk = try input.read(upToCount: files.options.chunkSize), !chunk.isEmpty {
            try output.write(contentsOf: chunk)
        }
        return target
    }

    func remainderFile(_ id: String) -> URL { folder.appendingPathComponent("\(id).remainder") }

    static func defaultFolder(_ identifier: String) -> URL { BackgroundFolder.defaultURL(identifier) }
}
