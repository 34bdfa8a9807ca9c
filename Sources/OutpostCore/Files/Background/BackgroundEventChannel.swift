import Synchronization

/// Hands a session's events to its current reader, keeping those that come while there is none.
///
/// Progress that nobody reads is dropped; endings wait, so a later reader (a later launch of the
/// app) still finishes the transfer.
final class BackgroundEventChannel: Sendable {
    private struct State {
        var reader: AsyncStream<BackgroundTransferEvent>.Continuation?
        var waiting: [BackgroundTransferEvent] = []
    }

    private let state = Mutex(State())

    func send(_ event: BackgroundTransferEvent) {
        state.withLock { state in
            if let reader = state.reader, case .enqueued = reader.yield(event) { return }
            state.reader = nil
            if case .progress = event { return }
            state.waiting.append(event)
        }
    }

    /// A new reader: what waited first, then what comes. Ends the previous reader's sequence.
    func events() -> AsyncStream<BackgroundTransferEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: BackgroundTransferEvent.self)
        let previous = state.withLock { state in
            let previous = state.reader
            for event in state.waiting { continuation.yield(event) }
            state.waiting.removeAll()
            state.reader = continuation
            return previous
        }
        previous?.finish()
        return stream
    }
}
