import CoreMetrics
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
@_spi(OutpostInternal) import OutpostCore
import OutpostExpressions
@_spi(OutpostInternal) import OutpostSupport
import Synchronization

/// `/files/{name}`: files of any size, streamed to and from ``FileStorage`` without being held in
/// memory, with ETags, single byte ranges and resumable uploads. See docs/PROTOCOL.md.
///
/// Every route checks the access rules of files (``AccessRules/filesType``): by default reading is
/// open to everyone, creating needs a signed-in user, and a file belongs to the user who first
/// uploaded it, who alone may replace or delete it. A token, when sent, needs `records:read` to
/// read and `records:write` to write. A file the read rule hides is answered 404, as missing.
/// The server's ``ServerConfiguration/maxBodyBytes`` does not apply here:
/// ``ServerConfiguration/maxFileBytes`` does.
struct FileRoutes: Sendable {
    let files: any FileStorage
    let auth: AuthService
    let access: AccessControl
    let maxFileBytes: Int64
    /// Told about the pieces of watched downloads (``ServerConfiguration/downloadObserver``).
    var downloadObserver: (any DownloadObserver)? = nil
    /// Signed links to the separate files origin, when the server has one (``ServerConfiguration/filesURL``).
    var links: FileLinks? = nil
    /// The bytes of files and unfinished uploads each user may hold.
    var quotas = FileQuotas(defaults: Quotas(), storage: nil)
    /// One request at a time per upload (so an offset is never read while bytes are still arriving),
    /// and one completion at a time per name. In-process: across instances the store keeps an upload
    /// whole (``PendingUploadMoved``) and a completion atomic.
    let locks = KeyedLock()
    let hashes = UploadHashes()
    /// Follows the uploads whose body is being read (`outpost_uploads_in_flight`).
    var uploadsInFlight: Meter? = nil

    static let uploadOffset = HTTPField.Name("Upload-Offset")!
    static let uploadComplete = HTTPField.Name("Upload-Complete")!
    static let reprDigest = HTTPField.Name("Repr-Digest")!

    func add(to router: Router<OutpostRequestContext>) {
        let router = router.group().add(middleware: AuthenticationMiddleware(auth: auth))
        router.put("/files/{name}") { [uploadsInFlight] request, context in
            uploadsInFlight?.increment()
            defer { uploadsInFlight?.decrement() }
            return try await put(request, context)
        }
        router.get("/files/{name}") { request, context in try await get(request, context) }
        router.delete("/files/{name}") { request, context in try await delete(request, context) }
    }

    // MARK: Reading

    func get(_ request: Request, _ context: OutpostRequestContext) async throws -> Response {
        let name = try Self.name(context)
        if let links, links.isFilesOrigin(request) {
            // The files origin: a link this server signed is the whole permission.
            guard links.admits(request, name: name), let file = try await files.file(named: name) else {
                throw Self.notFound(name)
            }
            return try await serve(file, name: name, request, context)
        }
        let caller = try context.caller(requiring: Scope.recordsRead)
        if let id = try Self.uploadID(request) {
            return try await uploadStatus(UploadKey(owner: try Self.user(caller), name: name, id: id))
        }
        let rules = try await access.current()
        let ruleCaller = try await access.caller(caller)
        guard let file = try await files.file(named: name), Self.allows(rules, .read, ruleCaller, file: file.ruleValue) else {
            throw Self.notFound(name)
        }
        if let links {
            // Not for a shared cache: the link was made for this caller.
            return Response(
                status: .temporaryRedirect, headers: [.location: links.link(to: name), .cacheControl: "private, no-store"])
        }
        return try await serve(file, name: name, request, context)
    }

    /// The bytes of `file` (or the range asked for), with the fields that keep them from running as
    /// the server's origin (``FileServingHeaders``).
    func serve(_ file: StoredFile, name: String, _ request: Request, _ context: OutpostRequestContext) async throws
        -> Response
    {
        var headers: HTTPFields = [
            .eTag: file.etag, .acceptRanges: "bytes", .contentType: file.contentType, Self.reprDigest: file.reprDigest,
            .lastModified: Self.httpDate(file.updatedAt),
        ]
        headers.append(contentsOf: FileServingHeaders.fields(name: name, contentType: file.contentType))
        if let condition = request.headers[.ifNoneMatch], RecordRoutes.matches(condition, etag: file.etag, weak: true) {
            headers[.contentType] = nil
            return Response(status: .notModified, headers: headers)
        }
        var range: Range<Int64> = 0..<file.size
        var status = HTTPResponse.Status.ok
        // If-Range: the range only while the client's copy is still this file (strong comparison);
        // a date or another tag means "send it all".
        if let header = request.headers[.range], request.headers[.ifRange].map({ $0 == file.etag }) ?? true {
            switch ByteRange.parse(header, size: file.size) {
            case .whole: break
            case .partial(let bytes):
                range = bytes
                status = .partialContent
                headers[.contentRange] = "bytes \(bytes.lowerBound)-\(bytes.upperBound - 1)/\(file.size)"
            case .unsatisfiable:
                throw ServerError(
                    .rangeNotSatisfiable, code: "range_not_satisfiable",
                    message: "The file has \(file.size) bytes; ask for a range that starts before its end, e.g. Range: bytes=0-",
                    headers: [.contentRange: "bytes */\(file.size)"])
            }
        }
        let files = files
        let bytes = range
        let channel = context.channel
        let observer = downloadObserver.flatMap { $0.watches(name) ? $0 : nil }
        // Bounded per download whatever the reader's speed. `write` waits while the connection is
        // not writable, but while it is, it only queues the piece for the connection's event loop
        // and returns: a reader and disk faster than that loop would pile pieces up in its queue
        // (a 1 GiB download to a fast local reader peaked at 100 MB over the server's base). So after
        // each piece the download waits for the loop to have taken it (asking it how many bytes it
        // holds unsent) before reading the next: at most one piece queued, and NIO's own buffer,
        // which stops accepting at its high watermark.
        let body = ResponseBody(contentLength: Int(bytes.count)) { writer in
            try await files.read(file, range: bytes) { chunk in
                try await writer.write(chunk)
                let unsent = try await channel.getOption(.bufferedWritableBytes).get()
                observer?.handedOver(name, unsentBytes: unsent)
            }
            try await writer.finish(nil)
        }
        return Response(status: status, headers: headers, body: body)
    }

    func uploadStatus(_ key: UploadKey) async throws -> Response {
        let offset = try await locks.withLock("upload:" + key.digest) { try await files.uploadOffset(key) }
        guard let offset else { throw Self.uploadNotFound(key) }
        return Response.json(
            ["name": .string(key.name), "upload": .string(key.id), "offset": .int(Int(offset))],
            headers: [Self.uploadOffset: "\(offset)", .cacheControl: "no-store"])
    }

    // MARK: Writing

    func put(_ request: Request, _ context: OutpostRequestContext) async throws -> Response {
        let name = try Self.name(context)
        let caller = try writer(context)
        let uploadID = try Self.uploadID(request)
        // A resumable upload is kept per user between its requests; a single-request one needs a
        // user only when the rules say so.
        let user = uploadID == nil ? caller?.userID : try Self.user(caller)
        let contentType = request.headers[.contentType] ?? "application/octet-stream"
        guard FileNames.isValidContentType(contentType) else {
            throw ServerError.badRequest(
                "invalid_content_type",
                "Content-Type must be a media type of at most 255 visible ASCII characters, e.g. image/png")
        }
        let complete = try Self.isComplete(request)
        if !complete && uploadID == nil {
            throw ServerError.badRequest(
                "upload_id_required",
                "Upload-Complete: ?0 continues later, which needs an upload id: PUT /files/\(name)?upload=ID")
        }
        let expected = try Self.expectedDigest(request)
        let offset = try Self.offset(request, max: maxFileBytes)
        if uploadID == nil && offset != 0 {
            throw ServerError.badRequest("upload_id_required", "Upload-Offset needs an upload id: PUT /files/\(name)?upload=ID")
        }
        let declared = request.headers[.contentLength].flatMap { Int64($0) }
        if let declared, declared > maxFileBytes - offset { throw tooLarge() }
        let ruleCaller = try await access.caller(caller)
        // Checked before any byte is stored, and again when the file is committed.
        let existing = try await files.file(named: name)
        try await authorizeWrite(
            name, caller: ruleCaller, contentType: contentType, size: uploadID == nil ? declared : nil, existing: existing)
        let key = UploadKey(owner: user ?? "", name: name, id: uploadID ?? UUID().uuidString)
        do {
            return try await locks.withLock("upload:" + key.digest) {
                try await receive(
                    request, key: key, resumable: uploadID != nil, offset: offset, complete: complete, existing: existing
                ) {
                    sha256, size in
                    guard expected == nil || expected == sha256 else {
                        try await files.deleteUpload(key)
                        throw ServerError(
                            .unprocessableContent, code: "checksum_mismatch",
                            message:
                                "The bytes received do not match Repr-Digest; the upload was discarded: upload the file again from the start",
                            details: ["received_sha256": .string(sha256)])
                    }
                    return try await commit(key, sha256: sha256, size: size, contentType: contentType, caller: ruleCaller)
                }
            }
        } catch is PendingUploadMoved {
            // Another request (perhaps through another instance) wrote to the upload, or it expired.
            hashes.forget(key)
            guard let stored = try await files.uploadOffset(key) else { throw Self.uploadNotFound(key) }
            throw Self.offsetMismatch(stored)
        }
    }

    /// Streams the body into the pending upload, then completes it or reports the new offset.
    /// Bytes past the owner's quota of file bytes are refused with 507 as they arrive (and a
    /// declared length past it before any arrives); a resumable upload keeps what was stored.
    func receive(
        _ request: Request, key: UploadKey, resumable: Bool, offset: Int64, complete: Bool, existing: StoredFile?,
        finish: (String, Int64) async throws -> Response
    ) async throws -> Response {
        let stored = try await files.uploadOffset(key)
        if resumable {
            if stored == nil && offset != 0 { throw Self.uploadNotFound(key) }
            if let stored, stored != offset { throw Self.offsetMismatch(stored) }
        }
        let allowance = try await quotas.allowance(
            owner: key.owner, files: files, newUpload: resumable && stored == nil, replacing: existing)
        if let allowance, let declared = request.headers[.contentLength].flatMap({ Int64($0) }), declared > allowance.remaining {
            throw QuotaExceeded.error("file_bytes", limit: allowance.limit)
        }
        var hasher = try await hasher(for: key, offset: offset)
        var size = offset
        var arrived: Int64 = 0
        let limit = maxFileBytes
        let written: Int64
        do {
            written = try await files.appendUpload(key, at: offset, body: request.body) { chunk in
                size += Int64(chunk.readableBytes)
                arrived += Int64(chunk.readableBytes)
                guard size <= limit else { throw FileTooLarge() }
                if let allowance, arrived > allowance.remaining { throw FileQuotaPassed(limit: allowance.limit) }
                chunk.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
            }
        } catch is FileTooLarge {
            try await files.deleteUpload(key)
            hashes.forget(key)
            throw tooLarge()
        } catch let passed as FileQuotaPassed {
            hashes.forget(key)
            if !resumable { try? await files.deleteUpload(key) }
            throw QuotaExceeded.error("file_bytes", limit: passed.limit)
        } catch {
            // A resumable upload keeps what arrived; anything else is discarded.
            hashes.forget(key)
            if !resumable { try? await files.deleteUpload(key) }
            throw error
        }
        guard complete else {
            hashes.keep(key, hasher, bytes: written)
            return Response(status: .noContent, headers: [Self.uploadOffset: "\(written)"])
        }
        hashes.forget(key)
        return try await finish(hasher.finalize().hexString, written)
    }

    /// The checksum state for an upload at `offset`: kept from its last request when this process
    /// has it, otherwise computed again from the stored bytes.
    func hasher(for key: UploadKey, offset: Int64) async throws -> SHA256 {
        if let kept = hashes.take(key, bytes: offset) { return kept }
        var hasher = SHA256()
        guard offset > 0 else { return hasher }
        try await files.readUpload(key) { chunk in chunk.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) } }
        return hasher
    }

    func commit(_ key: UploadKey, sha256: String, size: Int64, contentType: String, caller: RuleCaller) async throws
        -> Response
    {
        try await locks.withLock("name:" + key.name) {
            let previous = try await files.file(named: key.name)
            do {
                try await authorizeWrite(key.name, caller: caller, contentType: contentType, size: size, existing: previous)
            } catch {
                try await files.deleteUpload(key)
                throw error
            }
            // A replaced file keeps its owner, whoever the rules let replace it.
            let file = StoredFile(
                name: key.name, size: size, contentType: contentType, sha256: sha256, owner: previous?.owner ?? key.owner,
                updatedAt: Date(), location: "")
            try await files.completeUpload(key, as: file)
            return Response.json(
                file.json, status: previous == nil ? .created : .ok,
                headers: [.eTag: file.etag, .location: "/files/\(key.name)", Self.reprDigest: file.reprDigest])
        }
    }

    func delete(_ request: Request, _ context: OutpostRequestContext) async throws -> Response {
        let name = try Self.name(context)
        let caller = try writer(context)
        if let id = try Self.uploadID(request) {
            let key = UploadKey(owner: try Self.user(caller), name: name, id: id)
            try await locks.withLock("upload:" + key.digest) { try await files.deleteUpload(key) }
            hashes.forget(key)
            return Response(status: .noContent)
        }
        let ruleCaller = try await access.caller(caller)
        try await locks.withLock("name:" + name) {
            let rules = try await access.current()
            guard let file = try await files.file(named: name), Self.allows(rules, .read, ruleCaller, file: file.ruleValue) else {
                throw Self.notFound(name)
            }
            guard Self.allows(rules, .delete, ruleCaller, file: file.ruleValue) else {
                throw Self.refusal(rules.rule(for: AccessRules.filesType, .delete), caller: ruleCaller)
            }
            _ = try await files.deleteFile(named: name)
        }
        return Response(status: .noContent)
    }

    // MARK: Checks

    /// The caller of a write: a signed-in user's token with `records:write`.
    func writer(_ context: OutpostRequestContext) throws -> AuthenticatedCaller? {
        try context.caller(requiring: Scope.recordsWrite)
    }

    /// Throws unless the rules let `caller` write `name`: the create rule when no file has that
    /// name, else the update rule. A refused replacement is answered alike whether or not the
    /// caller may read the file (401 or 403 naming the update rule), so a hidden file's name
    /// answers as a visible file of someone else's does, never as missing.
    /// `request` holds the upload's content type and its size when known (declared by a
    /// single-request upload, or counted at commit).
    func authorizeWrite(_ name: String, caller: RuleCaller, contentType: String, size: Int64?, existing: StoredFile?)
        async throws
    {
        let rules = try await access.current()
        let incoming: ExpressionValue = [
            "content_type": .string(contentType), "size": size.map { .number(Double($0)) } ?? .null,
        ]
        guard let existing else {
            let wouldBe = StoredFile.ruleValue(
                name: name, owner: caller.user, size: size, contentType: contentType, sha256: nil, updatedAt: nil)
            guard Self.allows(rules, .create, caller, file: wouldBe, request: incoming) else {
                throw Self.refusal(rules.rule(for: AccessRules.filesType, .create), caller: caller)
            }
            return
        }
        guard Self.allows(rules, .update, caller, file: existing.ruleValue, request: incoming) else {
            throw Self.refusal(rules.rule(for: AccessRules.filesType, .update), caller: caller)
        }
    }

    static func allows(
        _ rules: AccessRules, _ operation: RuleOperation, _ caller: RuleCaller, file: ExpressionValue,
        request: ExpressionValue = .null
    ) -> Bool {
        rules.rule(for: AccessRules.filesType, operation).condition.decide(
            in: AccessRules.fileEnvironment(caller: caller, file: file, request: request))
    }

    /// 401 `sign_in_required` with `WWW-Authenticate: Bearer` for any write a rule refuses to a
    /// caller without a token; 403 `forbidden_by_rule` to a signed-in one. Both name the rule.
    static func refusal(_ rule: AccessRule, caller: RuleCaller) -> ServerError {
        guard rule.isDefault && rule.operation == .create && !caller.signedIn else {
            return RecordRoutes.refusal(rule, type: AccessRules.filesType, caller: caller, noun: "file")
        }
        return ServerError(
            .unauthorized, code: "sign_in_required",
            message: "Uploading a file needs a signed-in user: sign in (send 'Authorization: Bearer <access token>'), "
                + "or ask the server's operator for a rule that allows it (outpost rules set @files create ...)",
            details: ["rule": "@files.create", "default": true], headers: [.wwwAuthenticate: "Bearer"])
    }

    static func user(_ caller: AuthenticatedCaller?) throws -> String {
        guard let caller else {
            throw ServerError(
                .unauthorized, code: "sign_in_required",
                message: "Resumable uploads belong to a signed-in user; send 'Authorization: Bearer <access token>'",
                headers: [.wwwAuthenticate: "Bearer"])
        }
        guard let user = caller.userID else {
            throw ServerError(
                .forbidden, code: "user_required",
                message:
                    "A resumable upload belongs to a user, and this token has none (a client credentials token); sign in as a user"
            )
        }
        return user
    }

    static func name(_ context: OutpostRequestContext) throws -> String {
        guard let name = try context.pathParameter("name"), FileNames.isValidName(name) else {
            throw ServerError.badRequest("invalid_file_name", FileNames.nameRule)
        }
        return name
    }

    static func uploadID(_ request: Request) throws -> String? {
        guard let id = try request.queryFields()["upload"] else { return nil }
        guard FileNames.isValidUploadID(id) else { throw ServerError.badRequest("invalid_upload_id", FileNames.uploadIDRule) }
        return id
    }

    /// `Upload-Complete`: `?1` (the default) ends the upload with this request; `?0` leaves it open.
    static func isComplete(_ request: Request) throws -> Bool {
        switch request.headers[uploadComplete] {
        case nil, "?1"?: return true
        case "?0"?: return false
        default:
            throw ServerError.badRequest("invalid_upload_complete", "Upload-Complete is ?1 (this request ends the upload) or ?0")
        }
    }

    static func offset(_ request: Request, max: Int64) throws -> Int64 {
        guard let text = request.headers[uploadOffset] else { return 0 }
        guard text.utf8.count <= 19, let value = Int64(text), value >= 0, value <= max else {
            throw ServerError.badRequest("invalid_upload_offset", "Upload-Offset is a byte count from 0 to \(max)")
        }
        return value
    }

    /// The SHA-256 that `Repr-Digest: sha-256=:BASE64:` (RFC 9530) announces, as hex; other
    /// algorithms in the field are ignored.
    static func expectedDigest(_ request: Request) throws -> String? {
        guard let field = request.headers[reprDigest] else { return nil }
        guard field.utf8.count <= 512 else {
            throw ServerError.badRequest("invalid_repr_digest", "Repr-Digest is longer than 512 bytes; send sha-256 only")
        }
        for member in field.split(separator: ",") {
            let member = member.trimmingCharacters(in: .whitespaces)
            guard member.lowercased().hasPrefix("sha-256=:"), member.hasSuffix(":"), member.count > 10 else { continue }
            guard let bytes = Data(base64Encoded: String(member.dropFirst(9).dropLast())), bytes.count == 32 else {
                throw ServerError.badRequest(
                    "invalid_repr_digest",
                    "Repr-Digest's sha-256 must be the 32-byte digest in base64 between colons: sha-256=:…=:")
            }
            return Hex.string(bytes)
        }
        throw ServerError.badRequest("invalid_repr_digest", "Repr-Digest must carry sha-256, e.g. sha-256=:…=:")
    }

    func tooLarge() -> ServerError {
        Self.tooLarge(maxFileBytes: maxFileBytes)
    }

    /// The answer to a file over `maxFileBytes`, declared or sent.
    static func tooLarge(maxFileBytes: Int64) -> ServerError {
        ServerError(
            .contentTooLarge, code: "file_too_large",
            message: "This server stores files of at most \(maxFileBytes) bytes (its maxFileBytes setting); send a smaller file",
            details: ["max_bytes": .int(Int(maxFileBytes))], headers: [.connection: "close"])
    }

    static func notFound(_ name: String) -> ServerError {
        ServerError.notFound("file_not_found", "No file named \(name); it may have been deleted")
    }

    static func uploadNotFound(_ key: UploadKey) -> ServerError {
        ServerError.notFound(
            "upload_not_found", "No pending upload \(key.id) of \(key.name) for this user; start it again with Upload-Offset: 0")
    }

    /// 409 `upload_offset_mismatch`: the upload holds `stored` bytes, not what the request said.
    static func offsetMismatch(_ stored: Int64) -> ServerError {
        ServerError(
            .conflict, code: "upload_offset_mismatch",
            message: "This upload holds \(stored) bytes; send the rest with Upload-Offset: \(stored)",
            details: ["offset": .int(Int(stored))], headers: [Self.uploadOffset: "\(stored)"])
    }

    static func httpDate(_ date: Date) -> String {
        HTTPDate.format(date)
    }
}

/// The SHA-256 state of uploads left open (`Upload-Complete: ?0`), so finishing one does not read
/// its bytes again. A cache: when it misses (another instance, a restart, too many uploads) the
/// state is computed again from storage. At most ``capacity`` entries.
final class UploadHashes: Sendable {
    static let capacity = 1024
    private let states = Mutex<[UploadKey: (bytes: Int64, hasher: SHA256)]>([:])

    func keep(_ key: UploadKey, _ hasher: SHA256, bytes: Int64) {
        states.withLock { states in
            if states.count >= Self.capacity, states[key] == nil, let any = states.keys.first { states[any] = nil }
            states[key] = (bytes, hasher)
        }
    }

    /// The state if it covers exactly `bytes` bytes; removed either way.
    func take(_ key: UploadKey, bytes: Int64) -> SHA256? {
        states.withLock { states in
            guard let state = states.removeValue(forKey: key), state.bytes == bytes else { return nil }
            return state.hasher
        }
    }

    func forget(_ key: UploadKey) {
        _ = states.withLock { $0.removeValue(forKey: key) }
    }
}
