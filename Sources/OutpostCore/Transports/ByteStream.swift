public import Foundation
import Synchronization

/// A body sent or received in pieces, for files that do not fit in memory: an `AsyncSequence` of
/// `Data` chunks, with its length when known.
///
/// A stream can be iterated once: its chunks are produced on demand (a file is read as the
/// transport asks for the next chunk) and never buffered as a whole.
public struct ByteStream: AsyncSequence, Sendable {
    public typealias Element = Data

    /// The total number of bytes, when known in advance (it becomes `Content-Length`).
    public let length: Int64?
    private let next: @Sendable () async throws -> Data?
    /// The transport's exchange this body comes from, when a built-in transport streamed it: its
    /// buffer can be observed (tests, benchmarks).
    @_spi(OutpostInternal) public let exchange: StreamedExchange?

    /// A stream whose chunks come from `next`, which returns `nil` at the end.
    public init(length: Int64?, next: @escaping @Sendable () async throws -> Data?) {
        self.init(length: length, exchange: nil, next: next)
    }

    /// For a stream read from a file: reads its next bytes straight into memory the caller
    /// provides, so that a transport can reuse one buffer instead of a new `Data` per chunk. A
    /// consumer uses either this or the iterator, never both.
    @_spi(OutpostInternal) public let direct: DirectRead?

    /// Makes the same stream again from its start, when its source can be read twice (a file, one
    /// chunk of memory): a transport asked to resend a body (a 307 or 308 redirect, an authentication
    /// challenge) uses it. `nil` for a stream that can be read only once.
    @_spi(OutpostInternal) public var reopen: (@Sendable () throws -> ByteStream)?

    @_spi(OutpostInternal) public init(
        length: Int64?, exchange: StreamedExchange?, direct: DirectRead? = nil,
        next: @escaping @Sendable () async throws -> Data?
    ) {
        self.length = length
        self.exchange = exchange
        self.direct = direct
        self.next = next
    }

    /// A stream over any sendable sequence of `Data` chunks.
    public init<Base: AsyncSequence & Sendable>(_ base: Base, length: Int64? = nil) where Base.Element == Data {
        let box = IteratorBox(base)
        self.init(length: length) { try await box.next() }
    }

    /// A stream of one chunk.
    public static func data(_ data: Data) -> ByteStream {
        let sent = OnceFlag()
        var stream = ByteStream(length: Int64(data.count)) { sent.take() ? data : nil }
        stream.reopen = { .data(data) }
        return stream
    }

    /// The bytes of the file at `url` from `offset` to its end, read in chunks of `chunkSize` bytes.
    ///
    /// - Throws: when the file cannot be opened.
    public static func file(at url: URL, from offset: Int64 = 0, chunkSize: Int = 256 * 1024) throws -> ByteStream {
        let reader = try FileChunkReader(url: url, offset: offset, chunkSize: chunkSize)
        var stream = ByteStream(
            length: reader.remaining, exchange: nil,
            direct: DirectRead(chunkSize: reader.chunkSize) { try reader.read(into: $0) }
        ) { try reader.next() }
        stream.reopen = { try .file(at: url, from: offset, chunkSize: chunkSize) }
        return stream
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let next: @Sendable () async throws -> Data?

        public mutating func next() async throws -> Data? {
            try await next()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(next: next) }

    /// The next chunk, as an iterator would return it.
    @_spi(OutpostInternal) public func nextChunk() async throws -> Data? { try await next() }

    /// All the chunks as one `Data`.
    ///
    /// - Throws: ``OutpostError/Code/responseTooLarge`` past `limit` bytes.
    public func collect(upTo limit: Int) async throws -> Data {
        var data = Data()
        for try await chunk in self {
            guard data.count + chunk.count <= limit else {
                throw OutpostError.responseTooLarge(TransportOptions(maxResponseBytes: limit), underlying: nil)
            }
            data.append(chunk)
        }
        return data
    }
}

/// Reads a stream's next bytes into the memory given (at most its size), returning how many; 0 at
/// the end. `chunkSize` is the size the source reads in.
@_spi(OutpostInternal) public struct DirectRead: Sendable {
    @_spi(OutpostInternal) public let chunkSize: Int
    @_spi(OutpostInternal) public let read: @Sendable (UnsafeMutableRawBufferPointer) throws -> Int
}

/// Holds a sequence's iterator so that `ByteStream`'s sendable closure can advance it.
private actor IteratorBox<Base: AsyncSequence> where Base.Element == Data {
    var iterator: Base.AsyncIterator

    init(_ base: Base) { iterator = base.makeAsyncIterator() }

    func next() async throws -> Data? {
        // One consumer at a time (a stream is iterated once), so the copy never races.
        var current = iterator
        defer { iterator = current }
        return try await current.next(isolation: self)
    }
}

/// True the first time only.
final class OnceFlag: Sendable {
    private let done = Mutex(false)
    func take() -> Bool {
        done.withLock { done in
            defer { done = true }
            return !done
        }
    }
}

/// Reads a file in chunks; one reader at a time (the lock serialises them).
final class FileChunkReader: Sendable {
    private let handle: Mutex<FileHandle?>
    let chunkSize: Int
    let remaining: Int64

    init(url: URL, offset: Int64, chunkSize: Int) throws {
        let file = try FileHandle(forReadingFrom: url)
        let size = try file.seekToEnd()
        try file.seek(toOffset: UInt64(max(0, offset)))
        self.handle = Mutex(file)
        self.chunkSize = max(1, chunkSize)
        self.remaining = max(0, Int64(size) - offset)
    }

    /// Reads the next bytes into `target` (at most its size); 0 at the end of the file.
    func read(into target: UnsafeMutableRawBufferPointer) throws -> Int {
        try handle.withLock { handle in
            guard let file = handle, target.count > 0 else { return 0 }
            while true {
                let count = Foundation.read(file.fileDescriptor, target.baseAddress, target.count)
                if count > 0 { return count }
                if count < 0 && errno == EINTR { continue }
                guard count == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
                try? file.close()
                handle = nil
                return 0
            }
        }
    }

    func next() throws -> Data? {
        try handle.withLock { handle in
            guard let file = handle else { return nil }
            if let data = try file.read(upToCount: chunkSize), !data.isEmpty { return data }
            try? file.close()
            handle = nil
            return nil
        }
    }

    deinit {
        handle.withLock { try? $0?.close() }
    }
}
