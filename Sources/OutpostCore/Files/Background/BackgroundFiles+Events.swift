import Foundation
import HTTPTypes

extension BackgroundFiles {
    /// Handles one event of the session: progress is reported, an ending is finished (checked,
    /// moved into place, or started again) after the events, and the end of the system's delivery
    /// calls the app's handler at once: the digests and the requests of the endings come after it.
    func handle(_ event: BackgroundTransferEvent) async {
        switch event {
        case .progress(let text, let bytes, let expected):
            report(text, bytes: bytes, expected: expected)
        case .downloaded(let text, let response, let file):
            afterEvents {
                defer { try? FileManager.default.removeItem(at: file) }
                await self.conclude(text) { try await self.finishDownload($0, response: response, file: file) }
            }
        case .uploaded(let text, let response, let body):
            afterEvents {
                await self.conclude(text) {
                    try await self.finishUpload($0, response: ClientResponse(response: response, body: body))
                }
            }
        case .failed(let text, let error):
            afterEvents {
                await self.conclude(text) { description in
                    guard OutpostFiles.isBreak(error) else { throw error }
                    return try await self.again(description, after: error)
                }
            }
        case .eventsDelivered:
            let handler = state.withLock { state in
                defer { state.completionHandler = nil }
                state.delivered = state.completionHandler == nil
                return state.completionHandler
            }
            if let handler { await handler() }
        }
    }

    func report(_ text: String, bytes: Int64, expected: Int64?) {
        guard let description = try? BackgroundTransferDescription(parsing: text) else { return }
        let done = description.offset + bytes
        let total = description.kind == .upload ? description.size : expected.map { description.offset + $0 }
        let fresh = state.withLock { state in
            guard done > state.reported[description.id, default: -1] else { return false }
            state.reported[description.id] = done
            return true
        }
        if fresh {
            progressSink.yield(
                BackgroundTransferProgress(
                    transfer: description.transfer, progress: FileTransferProgress(bytesDone: done, totalBytes: total)))
        }
    }

    /// Reads the task's description and runs `finish` on it; reports the outcome through
    /// ``results``, unless `finish` started a new task (it returns `nil`).
    func conclude(
        _ text: String, _ finish: (BackgroundTransferDescription) async throws -> BackgroundTransferResult.Outcome?
    ) async {
        let description: BackgroundTransferDescription
        do {
            description = try BackgroundTransferDescription(parsing: text)
        } catch {
            resultSink.yield(
                BackgroundTransferResult(transfer: nil, outcome: .failed(error)))
            return
        }
        let outcome: BackgroundTransferResult.Outcome?
        do {
            outcome = try await finish(description)
        } catch {
            let method = description.kind == .upload ? "PUT" : "GET"
            outcome = .failed(OutpostError.wrap(error, method: method, path: "/files/\(description.name)"))
        }
        guard let outcome else { return }
        state.withLock { _ = $0.reported.removeValue(forKey: description.id) }
        try? FileManager.default.removeItem(at: remainderFile(description.id))
        resultSink.yield(BackgroundTransferResult(transfer: description.transfer, outcome: outcome))
    }

    /// Starts the transfer again where it stopped, when it has resumptions left; otherwise throws `error`.
    func again(_ description: BackgroundTransferDescription, after error: OutpostError) async throws
        -> BackgroundTransferResult.Outcome?
    {
        guard description.resumesLeft > 0 else { throw error }
        var next = description
        next.resumesLeft -= 1
        switch description.kind {
        case .upload:
            next.offset = try await files.uploadOffset(of: description.name, uploadID: description.id) ?? 0
            // As in the foreground: a resumed upload reports where it first went on from.
            if next.resumedFrom == 0 { next.resumedFrom = next.offset }
            try await startUpload(next)
        case .download:
            try await startDownload(next)
        }
        return nil
    }

    func finishUpload(_ description: BackgroundTransferDescription, response: ClientResponse) async throws
        -> BackgroundTransferResult.Outcome?
    {
        let path = "/files/\(description.name)"
        do {
            try files.client.checkStatus(response, method: "PUT", path: path)
        } catch let error as OutpostError {
            // An expired token, or the server holds other bytes than the task was made for.
            guard error.status == 401 || error.serverCode == "upload_offset_mismatch" else { throw error }
            return try await again(description, after: error)
        }
        let file = try files.client.decode(RemoteFile.self, from: response, method: "PUT", path: path)
        return .uploaded(FileUploadResult(file: file, resumedFrom: description.resumedFrom))
    }

    func finishDownload(_ description: BackgroundTransferDescription, response: HTTPResponse, file: URL) async throws
        -> BackgroundTransferResult.Outcome?
    {
        let part = PartialDownload(destination: URL(fileURLWithPath: description.path))
        let status = response.status.code
        guard (200..<300).contains(status) else {
            do {
                try files.client.checkStatus(
                    ClientResponse(response: response, body: try Self.prefix(of: file)), method: "GET",
                    path: "/files/\(description.name)")
                throw OutpostError(.malformedResponse, "The server answered a download with status \(status) and no file")
            } catch let error as OutpostError where status == 416 || status == 401 {
                // 416: the partial file is not a prefix of the server's file; 401: the token expired.
                if status == 416 { part.remove() }
                return try await again(description, after: error)
            }
        }
        let start: Int64
        if status == 206 {
            guard description.offset > 0, part.resumable()?.offset == description.offset,
                response.headerFields[.contentRange]?.hasPrefix("bytes \(description.offset)-") == true
            else {
                part.remove()
                return try await again(
                    description,
                    after: OutpostError(.malformedResponse, "The server sent a range that does not continue the partial download")
                )
            }
            try await part.append(try ByteStream.file(at: file), at: description.offset)
            start = description.offset
        } else {
            try part.restart(etag: response.headerFields[.eTag])
            try FileManager.default.removeItem(at: part.data)
            try FileManager.default.moveItem(at: file, to: part.data)
            start = 0
        }
        let size = try OutpostFiles.size(of: part.data)
        let digest = try OutpostFiles.hash(part.data, upTo: size, chunkSize: files.options.chunkSize).finalize().hex
        if let announced = response.headerFields[.reprDigest].flatMap(OutpostFiles.sha256(fromReprDigest:)), announced != digest {
            part.remove()
            throw OutpostFiles.digestMismatch
        }
        try part.finish()
        return .downloaded(
            FileDownloadResult(
                url: part.destination, size: size, etag: response.headerFields[.eTag],
                contentType: response.headerFields[.contentType], sha256: digest, resumedFrom: start))
    }

    /// The first 64 KiB of an error response's body, for the error.
    static func prefix(of file: URL) throws -> Data {
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        return try handle.read(upToCount: 64 * 1024) ?? Data()
    }
}
