#if canImport(Darwin)
    import Foundation
    import Synchronization

    /// Feeds a streamed request body into the bound stream pair URLSession reads it from: one task
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
                writer.open()
                defer { writer.close() }
                do {
                    for try await chunk in body {
                        var sent = 0
                        while sent < chunk.count {
                            guard !Task.isCancelled else { return }
                            let written = chunk[(chunk.startIndex + sent)...].withUnsafeBytes { bytes in
                                writer.write(bytes.bindMemory(to: UInt8.self).baseAddress!, maxLength: bytes.count)
                            }
                            guard written > 0 else { return }
                            sent += written
                        }
                    }
                } catch {
                    return
                }
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
