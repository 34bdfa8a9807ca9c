import Foundation
@_spi(OutpostInternal) import OutpostSupport
import Synchronization
import Testing

@Suite("Worker thread")
struct WorkerThreadTests {
    @Test("jobs run in order on the thread of their own, and finish ends it after them")
    func ordered() async {
        let thread = WorkerThread(name: "outpost-worker")
        let seen = Mutex<[Int]>([])
        for index in 0..<20 {
            let onIt = await thread.run { () -> Bool in
                seen.withLock { $0.append(index) }
                return thread.isCurrentThread
            }
            #expect(onIt)
        }
        #expect(!thread.isCurrentThread)
        thread.finish()
        #expect(seen.withLock { $0 } == Array(0..<20))
    }
}
