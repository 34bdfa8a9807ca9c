import Crypto
import Foundation
@_spi(OutpostInternal) import OutpostSupport
import Synchronization

/// How far a transfer has come.
public struct FileTransferProgress: Sendable, Equatable {
    /// Bytes of the file that are done: on the server for an upload, on disk for a download
    /// (including what an earlier, broken transfer had already moved).
    public var bytesDone: Int64
    /// The file's size, when known.
    public var totalBytes: Int64?

    public init(bytesDone: Int64, totalBytes: Int64?) {
        self.bytesDone = bytesDone
        self.totalBytes = totalBytes
    }

    /// `bytesDone / totalBytes`, when the total is known and not zero.
    public var fractionDone: Double? {
        guard let totalBytes, totalBytes > 0 else { return nil }
        return Double(bytesDone) / Double(totalBytes)
    }
}

/// An upload or download under way: its progress as it happens, its result, and a way to stop it.
///
/// ```swift
/// let transfer = client.files.upload(from: videoURL, as: "holiday.mp4")
/// for await step in transfer.progress { print(step.bytesDone, "of", step.totalBytes ?? -1) }
/// let file = try await transfer.result
/// ```
/// The transfer runs whether or not anybody reads ``progress``; progress that nobody reads is
/// dropped, oldest first, so a slow reader still sees the last step.
public final class FileTransfer<Success: Sendable>: Sendable {
    /// Progress steps, `bytesDone` never decreasing; ends when the transfer ends.
    public let progress: AsyncStream<FileTransferProgress>
    private let task: Task<Success, any Error>

    init(operation: @escaping @Sendable (TransferMeter) async throws -> Success) {
        let (progress, continuation) = AsyncStream.makeStream(
            of: FileTransferProgress.self, bufferingPolicy: .bufferingNewest(256))
        self.progress = progress
        let meter = TransferMeter(continuation: continuation)
        task = Task {
            defer { continuation.finish() }
            return try await operation(meter)
        }
    }

    /// Waits for the transfer to end.
    ///
    /// - Throws: ``OutpostError``: ``OutpostError/Code/cancelled`` after ``cancel()``, the server's
    ///   refusal, or the failure that broke the transfer. A broken transfer can be started again
    ///   and goes on from where it stopped.
    public var result: Success {
        get async throws { try await task.value }
    }

    /// Stops the transfer. What was moved stays: the next transfer of the same file resumes.
    public func cancel() { task.cancel() }
}

/// Counts the bytes of a transfer, hashes them, and reports progress.
final class TransferMeter: Sendable {
    private let continuation: AsyncStream<FileTransferProgress>.Continuation
    private let state = Mutex<(done: Int64, total: Int64?, hasher: SHA256)>((0, nil, SHA256()))

    init(continuation: AsyncStream<FileTransferProgress>.Continuation) {
        self.continuation = continuation
    }

    /// Starts counting again from `done` bytes whose hash so far is `hasher`.
    func start(at done: Int64, total: Int64?, hasher: SHA256) {
        state.withLock { $0 = (done, total, hasher) }
        continuation.yield(FileTransferProgress(bytesDone: done, totalBytes: total))
    }

    func count(_ chunk: Data) {
        chunk.withUnsafeBytes { count($0) }
    }

    var bytesDone: Int64 { state.withLock { $0.done } }

    var sha256: SHA256.Digest { state.withLock { $0.hasher.finalize() } }

    func count(_ bytes: UnsafeRawBufferPointer) {
        let step = state.withLock { state in
            state.hasher.update(bufferPointer: bytes)
            state.done += Int64(bytes.count)
            return FileTransferProgress(bytesDone: state.done, totalBytes: state.total)
        }
        continuation.yield(step)
    }

    /// The stream of `source`, counted as it is read (through its iterator or its direct reads).
    func counting(_ source: ByteStream) -> ByteStream {
        let direct = source.direct.map { direct in
            DirectRead(chunkSize: direct.chunkSize) { [self] target in
                let count = try direct.read(target)
                if count > 0 { self.count(UnsafeRawBufferPointer(rebasing: target.prefix(count))) }
                return count
            }
        }
        return ByteStream(length: source.length, exchange: nil, direct: direct) { [self] in
            let chunk = try await source.nextChunk()
            if let chunk { count(chunk) }
            return chunk
        }
    }
}

extension Digest {
    var hex: String { Hex.string(self) }
    var base64: String { Data(self).base64EncodedString() }
}
