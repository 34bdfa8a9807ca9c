import Foundation
import HTTPTypes
@_spi(OutpostInternal) import OutpostCore
import Synchronization
import Testing

/// What a streamed exchange keeps of a body once the reader has taken it: nothing. Counted through
/// the chunks' own deallocators, so the test sees bytes held, not timings.
@Suite("Streamed exchange memory")
struct StreamedExchangeMemoryTests {
    /// Chunks whose storage reports when it is freed.
    final class Chunks: Sendable {
        let size: Int
        private let freed = Atomic<Int>(0)

        init(size: Int) { self.size = size }

        /// How many chunks made here have been freed.
        var freedCount: Int { freed.load(ordering: .acquiring) }

        func make(_ fill: UInt8) -> Data {
            let memory = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
            memory.initializeMemory(as: UInt8.self, repeating: fill, count: size)
            return Data(
                bytesNoCopy: memory, count: size,
                deallocator: .custom { [self] pointer, _ in
                    pointer.deallocate()
                    freed.add(1, ordering: .releasing)
                })
        }
    }

    @Test("a chunk the reader took is freed while later chunks still wait, and the queue stays short")
    func takenChunksAreReleased() async throws {
        let exchange = StreamedExchange(options: TransportOptions(timeout: .seconds(60)))
        exchange.receive(head: HTTPResponse(status: .ok), length: nil)
        let (_, body) = try await exchange.open()
        var iterator = body.makeAsyncIterator()
        let chunks = Chunks(size: 4096)
        // The producer stays one chunk ahead of the reader, so the queue never empties, as on a
        // fast link with a reader that keeps up.
        exchange.append(chunks.make(0))
        let rounds = 200
        for round in 0..<rounds {
            exchange.append(chunks.make(UInt8((round + 1) % 256)))
            let chunk = try await iterator.next()
            #expect(chunk?.first == UInt8(round % 256))
            #expect(chunk?.count == chunks.size)
        }
        // Every chunk read is gone; the one the producer is ahead by is the only one held.
        #expect(chunks.freedCount == rounds)
        #expect(exchange.bufferedBytes == chunks.size)
        #expect(exchange.queueSlots <= 17)
        exchange.finish(nil)
        #expect(try await iterator.next()?.first == UInt8(rounds % 256))
        #expect(try await iterator.next() == nil)
        #expect(chunks.freedCount == rounds + 1)
    }
}
