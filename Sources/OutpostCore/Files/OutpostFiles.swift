import Crypto
public import Foundation
import HTTPTypes
@_spi(OutpostInternal) import OutpostSupport
import Synchronization

extension OutpostClient {
    /// Files on the server (`/files/{name}`), moved in pieces with progress, cancellation and resumption.
    public var files: OutpostFiles { OutpostFiles(client: self) }
}

/// A file as the server describes it.
public struct RemoteFile: Sendable, Equatable, Decodable {
    public var name: String
    public var size: Int64
    public var contentType: String
    /// SHA-256 of the bytes, lowercase hex.
    public var sha256: String
    public var etag: String
    /// The user who uploaded it; only they may replace or delete it.
    public var owner: String?

    enum CodingKeys: String, CodingKey {
        case name, size, sha256, etag, owner
        case contentType = "content_type"
    }
}

/// What an upload did.
public struct FileUploadResult: Sendable, Equatable {
    /// The file as stored.
    public var file: RemoteFile
    /// The bytes the server already held from an earlier, broken attempt (0 for a fresh upload).
    public var resumedFrom: Int64
}

/// What a download did.
public struct FileDownloadResult: Sendable, Equatable {
    /// Where the file now is.
    public var url: URL
    public var size: Int64
    public var etag: String?
    public var contentType: String?
    /// SHA-256 of the bytes on disk, lowercase hex, checked against the server's `Repr-Digest`.
    public var sha256: String
    /// The bytes an earlier, broken download had left on disk (0 for a fresh download).
    public var resumedFrom: Int64
}

/// Uploads, downloads and deletes files on an Outpost server, streaming through the client's
/// transport and middlewares (so `AuthMiddleware` signs them), never holding a file in memory.
///
/// Get one from ``OutpostClient/files``. See <doc:FileTransfers>.
public struct OutpostFiles: Sendable {
    public let client: OutpostClient
    /// Limits of each transfer.
    public var options: Options

    /// Limits of each transfer.
    public struct Options: Sendable {
        /// The longest one request of a transfer may take. Default: one hour.
        public var timeout: Duration
        /// Bytes read from a file at a time. Default: 256 KiB.
        public var chunkSize: Int
        /// A transfer whose connection breaks starts again where it stopped, this many times,
        /// before it fails. Default: 3.
        public var automaticResumes: Int

        public init(timeout: Duration = .seconds(3600), chunkSize: Int = 256 * 1024, automaticResumes: Int = 3) {
            self.timeout = timeout
            self.chunkSize = chunkSize
            self.automaticResumes = automaticResumes
        }
    }

    public init(client: OutpostClient, options: Options = Options()) {
        self.client = client
        self.options = options
    }

    // MARK: Uploads

    /// Uploads the file at `fileURL` as `name`, resumably.
    ///
    /// The bytes go in one streamed request; when its connection breaks, the upload asks the server
    /// how much it holds and sends the rest (``Options/automaticResumes`` times). Passing the
    /// `uploadID` of an earlier upload that failed continues that one. The server checks the
    /// SHA-256 of the whole file at the end.
    ///
    /// - Parameters:
    ///   - fileURL: the local file to send.
    ///   - name: its name on the server: 1–128 letters, digits, `.`, `_` or `-`, not starting with `.`.
    ///   - contentType: stored and sent back on download; default `application/octet-stream`.
    ///   - uploadID: 16–64 letters, digits, `_` or `-`; a new random one by default.
    public func upload(
        from fileURL: URL, as name: String, contentType: String = "application/octet-stream", uploadID: String? = nil
    ) -> FileTransfer<FileUploadResult> {
        let id = uploadID ?? Self.newUploadID()
        let resuming = uploadID != nil
        return FileTransfer { meter in
            try await uploadFile(fileURL, as: name, contentType: contentType, id: id, resuming: resuming, meter: meter)
        }
    }

    /// Uploads the bytes of `bytes` as `name`, as they are produced.
    ///
    /// A sequence cannot be read twice, so a broken upload is not resumed automatically; it keeps
    /// what the server received under `uploadID`, and ``upload(from:as:contentType:uploadID:)``
    /// with the same id finishes it from a file.
    ///
    /// - Parameters:
    ///   - bytes: the chunks to send, in order.
    ///   - length: the total, when known (it becomes `Content-Length` and the progress total).
    ///   - name: its name on the server.
    ///   - contentType: stored and sent back on download; default `application/octet-stream`.
    ///   - uploadID: 16–64 letters, digits, `_` or `-`; a new random one by default.
    public func upload<Bytes: AsyncSequence & Sendable>(
        _ bytes: Bytes, length: Int64? = nil, as name: String, contentType: String = "application/octet-stream",
        uploadID: String? = nil
    ) -> FileTransfer<FileUploadResult> where Bytes.Element == Data {
        let id = uploadID ?? Self.newUploadID()
        let source = ByteStream(bytes, length: length)
        return FileTransfer { meter in
            meter.start(at: 0, total: length, hasher: SHA256())
            let used = OnceFlag()
            try await sendPart(name, id: id, offset: 0, contentType: contentType) {
                guard used.take() else {
                    throw OutpostError(
                        .invalidRequest, "A byte sequence can be sent once; upload from a file to resend or resume")
                }
                return meter.counting(source)
            }
            let file = try await finishUpload(name, id: id, size: meter.bytesDone, digest: meter.sha256, contentType: contentType)
            return FileUploadResult(file: file, resumedFrom: 0)
        }
    }

    func uploadFile(
        _ fileURL: URL, as name: String, contentType: String, id: String, resuming: Bool, meter: TransferMeter
    ) async throws -> FileUploadResult {
        let total = try Self.size(of: fileURL)
        var resumedFrom: Int64 = 0
        var ask = resuming
        var resumesLeft = options.automaticResumes
        while true {
            let offset = ask ? (try await uploadOffset(of: name, uploadID: id) ?? 0) : 0
            if ask && resumedFrom == 0 { resumedFrom = offset }
            meter.start(at: offset, total: total, hasher: try Self.hash(fileURL, upTo: offset, chunkSize: options.chunkSize))
            do {
                let chunkSize = options.chunkSize
                try await sendPart(name, id: id, offset: offset, contentType: contentType) {
                    meter.counting(try ByteStream.file(at: fileURL, from: offset, chunkSize: chunkSize))
                }
                break
            } catch let error as OutpostError where Self.isBreak(error) && resumesLeft > 0 {
                resumesLeft -= 1
                ask = true
            }
        }
        let file = try await finishUpload(name, id: id, size: total, digest: meter.sha256, contentType: contentType)
        return FileUploadResult(file: file, resumedFrom: resumedFrom)
    }

    /// Sends bytes of an open upload (`Upload-Complete: ?0`).
    func sendPart(
        _ name: String, id: String, offset: Int64, contentType: String, body: @escaping @Sendable () throws -> ByteStream
    ) async throws {
        var request = try Self.request(.put, name, query: [URLQueryItem(name: "upload", value: id)])
        request.headers[.uploadOffset] = "\(offset)"
        request.headers[.uploadComplete] = "?0"
        request.headers[.contentType] = contentType
        _ = try await exchange(request, operation: "files.upload", body: body) { _, stream in
            try await stream.discard()
            return Data()
        }
    }

    /// Ends an upload: an empty request with the whole file's SHA-256, which the server checks.
    func finishUpload(_ name: String, id: String, size: Int64, digest: SHA256.Digest, contentType: String) async throws
        -> RemoteFile
    {
        var request = try Self.request(.put, name, query: [URLQueryItem(name: "upload", value: id)])
        request.headers[.uploadOffset] = "\(size)"
        request.headers[.uploadComplete] = "?1"
        request.headers[.reprDigest] = "sha-256=:\(digest.base64):"
        request.headers[.contentType] = contentType
        let response = try await exchange(request, operation: "files.upload", body: { .data(Data()) }) { _, stream in
            try await stream.collect(upTo: 64 * 1024)
        }
        return try client.decode(RemoteFile.self, from: response, method: "PUT", path: "/files/\(name)")
    }

    /// How many bytes the server holds of an unfinished upload, or `nil` when it has none.
    public func uploadOffset(of name: String, uploadID: String) async throws -> Int64? {
        let request = try Self.request(.get, name, query: [URLQueryItem(name: "upload", value: uploadID)])
        do {
            let response = try await client.send(request, operationName: "files.uploadOffset")
            return response.headerFields[.uploadOffset].flatMap { Int64($0) }
        } catch let error as OutpostError where error.status == 404 && error.serverCode == "upload_not_found" {
            return nil
        }
    }

    // MARK: Downloads

    /// Downloads `name` to `fileURL`, replacing what is there once the whole file has arrived.
    ///
    /// Bytes go to `<fileURL>.part` first, with the file's ETag beside it in `<fileURL>.part.etag`.
    /// When the connection breaks or the transfer is cancelled, they stay, and the next download to
    /// the same place asks only for the rest (`Range` with `If-Range`, so a file that changed
    /// meanwhile is sent whole). The bytes are checked against the server's SHA-256 at the end.
    public func download(_ name: String, to fileURL: URL) -> FileTransfer<FileDownloadResult> {
        FileTransfer { meter in
            var resumesLeft = options.automaticResumes
            let initial = PartialDownload(destination: fileURL).resumable()?.offset ?? 0
            while true {
                do {
                    var result = try await downloadOnce(name, to: fileURL, meter: meter)
                    result.resumedFrom = initial
                    return result
                } catch let error as OutpostError where Self.isBreak(error) && resumesLeft > 0 {
                    resumesLeft -= 1
                }
            }
        }
    }

    func downloadOnce(_ name: String, to fileURL: URL, meter: TransferMeter) async throws -> FileDownloadResult {
        let part = PartialDownload(destination: fileURL)
        var request = try Self.request(.get, name)
        let resumable = part.resumable()
        if let resumable {
            request.headers[.range] = "bytes=\(resumable.offset)-"
            request.headers[.ifRange] = resumable.etag
        }
        let chunkSize = options.chunkSize
        let response: ClientResponse
        do {
            response = try await exchange(request, operation: "files.download", body: nil) { head, stream in
                let start: Int64
                if head.status.code == 206, let resumable,
                    head.headerFields[.contentRange]?.hasPrefix("bytes \(resumable.offset)-") == true
                {
                    start = resumable.offset
                } else {
                    start = 0
                    try part.restart(etag: head.headerFields[.eTag])
                }
                let total = stream.length.map { start + $0 }
                meter.start(at: start, total: total, hasher: try Self.hash(part.data, upTo: start, chunkSize: chunkSize))
                try await part.append(meter.counting(stream), at: start)
                if let total, meter.bytesDone != total {
                    throw OutpostError.connectionLost(underlying: CancellationError())
                }
                return Data()
            }
        } catch let error as OutpostError where error.status == 416 {
            // The partial file is not a prefix of what the server has: start again.
            part.remove()
            return try await downloadOnce(name, to: fileURL, meter: meter)
        }
        let digest = meter.sha256.hex
        if let announced = response.headerFields[.reprDigest].flatMap(Self.sha256(fromReprDigest:)), announced != digest {
            part.remove()
            throw Self.digestMismatch
        }
        try part.finish()
        return FileDownloadResult(
            url: fileURL, size: meter.bytesDone, etag: response.headerFields[.eTag],
            contentType: response.headerFields[.contentType], sha256: digest, resumedFrom: resumable?.offset ?? 0)
    }

    // MARK: Other operations

    /// The file's metadata (a `HEAD` request), or `nil` when there is no such file.
    public func info(_ name: String) async throws -> RemoteFile? {
        do {
            let response = try await client.send(try Self.request(.head, name), operationName: "files.info")
            let fields = response.headerFields
            return RemoteFile(
                name: name, size: fields[.contentLength].flatMap { Int64($0) } ?? 0,
                contentType: fields[.contentType] ?? "application/octet-stream",
                sha256: fields[.reprDigest].flatMap(Self.sha256(fromReprDigest:)) ?? "", etag: fields[.eTag] ?? "",
                owner: nil)
        } catch let error as OutpostError where error.status == 404 {
            return nil
        }
    }

    /// Deletes the file (owner only).
    ///
    /// - Throws: ``OutpostError`` with status 404 when there is no such file, 403 when it belongs to another user.
    public func delete(_ name: String) async throws {
        _ = try await client.send(try Self.request(.delete, name), operationName: "files.delete")
    }

    // MARK: Plumbing

    /// Runs `request` through the client's middlewares to the transport's streaming path, with
    /// ``Options/timeout`` bounding the whole exchange (see ``PreparedRequest/stream(options:body:receive:)``).
    func exchange(
        _ request: Request, operation: String, body: (@Sendable () throws -> ByteStream)?,
        receive: @escaping @Sendable (HTTPResponse, ByteStream) async throws -> Data
    ) async throws -> ClientResponse {
        let prepared = try client.prepare(request, operationName: operation)
        let transportOptions = TransportOptions(timeout: options.timeout, maxResponseBytes: client.configuration.maxResponseBytes)
        return try await prepared.stream(options: transportOptions, body: body, receive: receive)
    }

    static func request(_ method: HTTPRequest.Method, _ name: String, query: [URLQueryItem] = []) throws -> Request {
        guard isValidName(name) else {
            throw OutpostError(
                .invalidRequest, "'\(name.prefix(200))' is not a file name the server accepts",
                suggestion: "Use 1–128 letters, digits, '.', '_' or '-', not starting with '.'")
        }
        return Request(method: method, path: "/files/\(name)", query: query)
    }

    /// The server's rule for names, checked before sending anything.
    static func isValidName(_ name: String) -> Bool {
        let bytes = name.utf8
        guard (1...128).contains(bytes.count), bytes.first != UInt8(ascii: ".") else { return false }
        return bytes.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x2E || byte == 0x5F || byte == 0x2D
        }
    }

    /// Downloaded bytes whose SHA-256 is not the server's `Repr-Digest`.
    static var digestMismatch: OutpostError {
        OutpostError(
            .malformedResponse, "The downloaded bytes do not match the server's SHA-256",
            suggestion: "Download the file again; the partial copy was discarded")
    }

    /// A failure after which the transfer can go on from where it stopped.
    static func isBreak(_ error: OutpostError) -> Bool {
        error.code == .connectionLost || error.code == .timeout || error.code == .cannotConnect
    }

    static func newUploadID() -> String { UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased() }

    static func size(of url: URL) throws -> Int64 {
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        return (attributes[.size] as? NSNumber)?.int64Value ?? 0
    }

    /// The SHA-256 state after the first `count` bytes of the file at `url`.
    static func hash(_ url: URL, upTo count: Int64, chunkSize: Int) throws -> SHA256 {
        var hasher = SHA256()
        guard count > 0 else { return hasher }
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        var left = count
        while left > 0, let data = try handle.read(upToCount: Int(min(Int64(chunkSize), left))), !data.isEmpty {
            hasher.update(data: data)
            left -= Int64(data.count)
        }
        return hasher
    }

    /// The hex SHA-256 in `sha-256=:BASE64:`, if the field has one.
    static func sha256(fromReprDigest field: String) -> String? {
        for member in field.split(separator: ",") {
            let member = member.trimmingCharacters(in: .whitespaces)
            guard member.lowercased().hasPrefix("sha-256=:"), member.hasSuffix(":"), member.count > 10,
                let bytes = Data(base64Encoded: String(member.dropFirst(9).dropLast())), bytes.count == 32
            else { continue }
            return Hex.string(bytes)
        }
        return nil
    }
}

extension HTTPField.Name {
    static let uploadOffset = HTTPField.Name("Upload-Offset")!
    static let uploadComplete = HTTPField.Name("Upload-Complete")!
    static let reprDigest = HTTPField.Name("Repr-Digest")!
}
