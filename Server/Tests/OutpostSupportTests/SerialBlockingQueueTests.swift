import Foundation
@_spi(OutpostInternal) import OutpostSupport
import Synchronization
import Testing

@Suite("Serial blocking queue")
struct SerialBlockingQueueTests {
    private struct Record {
        var order: [Int] = []
        var running = 0
        var mostAtOnce = 0
        var offPool = 0
    }

    @Test("jobs run one at a time, in the order queued, on the pool's threads, however many threads it has")
    func serial() async {
        let pool = BlockingPool(threads: 4, name: "test-serial")
        let queue = SerialBlockingQueue(pool: pool)
        let record = Mutex(Record())
        for index in 0..<300 {
            queue.start {
                record.withLock { record in
                    record.running += 1
                    record.mostAtOnce = max(record.mostAtOnce, record.running)
                    if !pool.isCurrentThreadInPool { record.offPool += 1 }
                }
                // A little work, so that overlapping jobs would show.
                var sum = 0
                for step in 0..<2_000 { sum &+= step * index }
                record.withLock { record in
                    record.order.append(sum == -1 ? -1 : index)
                    record.running -= 1
                }
            }
        }
        await queue.drain()
        let seen = record.withLock { $0 }
        #expect(seen.order == Array(0..<300))
        #expect(seen.mostAtOnce == 1)
        #expect(seen.offPool == 0)
    }

    @Test("run gives the body's value or error, after the jobs queued before it")
    func runAfterEarlierJobs() async throws {
        let queue = SerialBlockingQueue(pool: BlockingPool(threads: 2, name: "test-serial-run"))
        let written = Mutex<[String]>([])
        queue.start { written.withLock { $0.append("first") } }
        queue.start { written.withLock { $0.append("second") } }
        let seen = try await queue.run { written.withLock { $0 } }
        #expect(seen == ["first", "second"])
        await #expect(throws: CocoaError.self) {
            try await queue.run { try Data(contentsOf: URL(fileURLWithPath: "/nonexistent-\(UUID().uuidString)")) }
        }
        // The queue goes on after a failed job.
        #expect(try await queue.run { 7 } == 7)
    }
}
