import NIOCore

/// The one buffer a download reads its pieces into, reused from piece to piece.
///
/// Copy-on-write keeps reuse safe: ``fill(count:_:)`` clears the buffer first, and clearing a
/// `ByteBuffer` whose storage another copy still holds (the connection, while it has not sent the
/// previous piece) gives it fresh storage rather than writing into the bytes being sent. Whether
/// that happened shows in the address of the bytes: the old storage is alive while the new one is
/// allocated, so they cannot share an address.
///
/// Used by one download, one call at a time (each `fill` runs on the file system's thread pool and
/// is awaited before the next piece is read or sent), hence unchecked `Sendable`.
final class PieceBuffer: @unchecked Sendable {
    private var buffer: ByteBuffer
    /// Storage allocations so far (the first one included).
    private(set) var allocations = 1

    init(capacity: Int) {
        buffer = ByteBufferAllocator().buffer(capacity: capacity)
    }

    /// The bytes of the last piece (a copy of the buffer sharing its storage).
    var bytes: ByteBuffer { buffer }

    /// Replaces the buffer's bytes with at most `count` bytes that `read` puts into the memory it
    /// is given, returning how many it put there.
    func fill(count: Int, _ read: (UnsafeMutableRawBufferPointer) throws -> Int) throws -> Int {
        let before = buffer.withVeryUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
        buffer.clear()
        let after = buffer.withVeryUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
        if after != before { allocations += 1 }
        return try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { target in
            try read(UnsafeMutableRawBufferPointer(rebasing: target.prefix(count)))
        }
    }
}
