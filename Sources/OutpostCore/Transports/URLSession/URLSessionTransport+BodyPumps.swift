import Foundation
@_spi(OutpostInternal) import OutpostSupport
import Synchronization

/// What a body pump writes into: the `OutputStream` of a bound stream pair, whose `write` blocks
/// while the pair's buffer is full, that is until URLSession has sent what is in it.
protocol BlockingByteSink: AnyObject {
    func open()
    func write(_ buffer: UnsafePointer<UInt8>, maxLength len: Int) -> Int
    func close()
}

extension OutputStream: BlockingByteSink {}

/// Writes a streamed request body into a ``BlockingByteSink`` on a thread of its own
/// (`WorkerThread`), one chunk at a time: the writes block for as long as the upload lasts, and
/// a cooperative thread blocked that long would stall every other task on it. The chunks are read
/// from the body on the calling task, which is free while the thread writes.
enum BodyPump {
    /// The name of the pump's threads.
    static let threadName = "outpost-pump"

    /// Opens `sink`, writes `body` into it and closes it. Stops early when the task is cancelled
    /// (between chunks), when the body fails, or when `sink` takes no more (URLSession closed its
    /// side: the task ended).
    /// `thread` (made for the pump by default) is ended when the body has been written.
    static func run(
        _ body: ByteStream, into sink: any BlockingByteSink, on thread: WorkerThread = WorkerThread(name: threadName)
    ) async {
        nonisolated(unsafe) let sink = sink
        defer { thread.finish() }
        await thread.run { sink.open() }
        do {
            for try await chunk in body {
                guard !Task.isCancelled else { break }
                guard await thread.run({ writeAll(chunk, into: sink) }) else { break }
            }
        } catch {
            // The body failed: URLSession sees the stream end, and the exchange reports the error.
        }
        await thread.run { sink.close() }
    }

    /// Writes the whole of `chunk`; false when `sink` refused more.
    static func writeAll(_ chunk: Data, into sink: any BlockingByteSink) -> Bool {
        var sent = 0
        while sent < chunk.count {
            let written = chunk[(chunk.startIndex + sent)...].withUnsafeBytes { bytes in
                sink.write(bytes.bindMemory(to: UInt8.self).baseAddress!, maxLength: bytes.count)
            }
            guard written > 0 else { return false }
            sent += written
        }
        return true
    }
}

#if canImport(Darwin)
    /// Feeds a streamed request body into the bound stream pair URLSession reads it from: one pump
    /// per send of the body (a resend after a redirect stops the one before).
    final class BodyPumps: Sendable {
        private let running = Mutex<Task<Void, Never>?>(nil)

        /// A new bound stream pair fed from `body`; returns the side URLSession reads.
        func start(_ body: ByteStream) -> InputStream? {
            var input: InputStream?
            var output: OutputStream?
            Stream.getBoundStreams(withBufferSize: 256 * 1024, inputStream: &input, outputStream: &output)
            nonisolated(unsafe) let writer = output
            let task = Task.detached {
                guard let writer else { return }
                await BodyPump.run(body, into: writer)
            }
            let previous = running.withLock { current in
                defer { current = task }
                return current
            }
            previous?.cancel()
            return input
        }

        /// Stops the pump in flight.
        func cancel() {
            running.withLock { $0 }?.cancel()
        }
    }
#endif
