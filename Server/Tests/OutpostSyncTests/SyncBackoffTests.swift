import Testing

@testable import OutpostSync

@Suite struct SyncBackoffTests {
    @Test func delaysDoubleWithJitterUpToTheMaximum() {
        let backoff = SyncBackoff(initial: .milliseconds(500), maximum: .seconds(30))
        for attempt in 1...40 {
            let step = min(Duration.seconds(30), .milliseconds(500) * (1 << min(attempt - 1, 20)))
            for _ in 0..<50 {
                let delay = backoff.delay(after: attempt)
                #expect(delay >= step / 2 && delay <= step, "attempt \(attempt): \(delay)")
            }
        }
        #expect(SyncBackoff(initial: .seconds(10), maximum: .seconds(1)).maximum == .seconds(10))
    }

    @Test func aWakeEndsTheWaitAndOneBeforeTheWaitIsKept() async {
        let wakeup = Wakeup()
        let clock = ContinuousClock()
        // Woken before waiting: the wait ends at once instead of in an hour.
        wakeup.wake()
        let early = await clock.measure { await wakeup.wait(upTo: .seconds(3600)) }
        #expect(early < .seconds(60))
        // A cleared wake is forgotten: this wait runs its (short) course.
        wakeup.wake()
        wakeup.clear()
        let waited = await clock.measure { await wakeup.wait(upTo: .milliseconds(50)) }
        #expect(waited >= .milliseconds(50))
        // Woken while waiting (or just before: either way the wait ends).
        let waiting = Task { await clock.measure { await wakeup.wait(upTo: .seconds(3600)) } }
        wakeup.wake()
        #expect(await waiting.value < .seconds(60))
    }
}
