import Synchronization

/// The stream the last transport call of a streaming request opened, handed from the end of the
/// middleware chain back to its start.
final class OpenedStream: Sendable {
    private let stream = Mutex<ResponseByteStream?>(nil)

    func set(_ value: ResponseByteStream) { stream.withLock { $0 = value } }

    func take() -> ResponseByteStream? { stream.withLock { $0.take() } }
}
