import Foundation
@_spi(OutpostInternal) import OutpostSupport
import Synchronization
import Testing

@_spi(OutpostInternal) @testable import OutpostCore

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("URLSession transport configuration")
struct URLSessionTransportTests {
    @Test("an owned session has no URLCache and enough connections per host for feeds and transfers")
    func preparedConfiguration() {
        let given = URLSessionConfiguration.default
        given.urlCache = URLCache.shared
        given.httpMaximumConnectionsPerHost = 4
        let prepared = URLSessionTransport.prepared(given)
        #expect(prepared.urlCache == nil)
        #expect(prepared.requestCachePolicy == .reloadIgnoringLocalCacheData)
        #expect(prepared.httpMaximumConnectionsPerHost == URLSessionTransport.connectionsPerHost)
        // A copy: the caller's configuration is left as it was.
        #expect(given.urlCache != nil)
        #expect(given.httpMaximumConnectionsPerHost == 4)
        // A higher limit the caller chose stays.
        given.httpMaximumConnectionsPerHost = 64
        #expect(URLSessionTransport.prepared(given).httpMaximumConnectionsPerHost == 64)
    }

    @Test("a body from memory or a file can be sent again from its start; another stream cannot")
    func reopenableBodies() async throws {
        let data = Data("outpost".utf8)
        let again = try #require(try ByteStream.data(data).reopen?())
        #expect(try await again.collect(upTo: 100) == data)

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-reopen-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("body.bin")
        try Data("0123456789".utf8).write(to: file)
        let stream = try ByteStream.file(at: file, from: 3)
        #expect(try await stream.collect(upTo: 100) == Data("3456789".utf8))
        let reopened = try #require(try stream.reopen?())
        #expect(try await reopened.collect(upTo: 100) == Data("3456789".utf8))

        #expect(ByteStream(length: nil) { nil }.reopen == nil)
    }

    @Test("the transport's delegate keeps no response in a URLCache, a borrowed session's included")
    func noURLCache() throws {
        let borrowed = URLSessionConfiguration.default
        borrowed.urlCache = URLCache(memoryCapacity: 1 << 20, diskCapacity: 0, diskPath: nil)
        let session = URLSession(configuration: borrowed)
        defer { session.invalidateAndCancel() }
        let transport = URLSessionTransport(borrowing: session)
        let url = try #require(URL(string: "http://127.0.0.1:9/private"))
        let task = session.dataTask(with: url)
        let response = try #require(
            HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: ["Cache-Control": "max-age=600"]))
        let answered = Mutex<[CachedURLResponse?]>([])
        transport.streams.urlSession(
            session, dataTask: task, willCacheResponse: CachedURLResponse(response: response, data: Data("secret".utf8))
        ) { answer in answered.withLock { $0.append(answer) } }
        let answers = answered.withLock { $0 }
        #expect(answers.count == 1)
        #expect(answers.first.map { $0 == nil } == true, "a response was offered to the cache")
        task.cancel()
    }

    /// A sink whose writes block until the test opens it, as a bound stream pair's do until
    /// URLSession reads; it notes the thread of each call.
    final class BlockingSink: BlockingByteSink, @unchecked Sendable {
        // Unchecked: every field is constant, behind the lock, or a semaphore.
        let log = Mutex<(onPumpThread: Set<Bool>, bytes: Data, closed: Bool)>(([], Data(), false))
        let gate = DispatchSemaphore(value: 0)
        let blocking: Bool
        let entered = DispatchSemaphore(value: 0)
        let pump = WorkerThread(name: BodyPump.threadName)

        init(blocking: Bool) { self.blocking = blocking }

        private func note() {
            let onPump = pump.isCurrentThread
            log.withLock { _ = $0.onPumpThread.insert(onPump) }
        }

        func open() { note() }

        func write(_ buffer: UnsafePointer<UInt8>, maxLength len: Int) -> Int {
            note()
            if blocking {
                entered.signal()
                gate.wait()
            }
            let count = min(len, 3)
            log.withLock { $0.bytes.append(buffer, count: count) }
            return count
        }

        func close() {
            note()
            log.withLock { $0.closed = true }
        }
    }

    @Test("the streamed-upload pump writes on a thread of its own, in order, and closes the stream")
    func pumpThread() async throws {
        let sink = BlockingSink(blocking: false)
        let chunks = [Data("hello ".utf8), Data("streamed ".utf8), Data("body".utf8)]
        let next = Mutex(0)
        let body = ByteStream(length: nil) {
            next.withLock { index in
                defer { index += 1 }
                return index < chunks.count ? chunks[index] : nil
            }
        }
        await BodyPump.run(body, into: sink, on: sink.pump)
        let log = sink.log.withLock { $0 }
        #expect(String(decoding: log.bytes, as: UTF8.self) == "hello streamed body")
        #expect(log.onPumpThread == [true])
        #expect(log.closed)
    }

    /// More pumps blocked in a write than the cooperative pool has threads: other tasks still run.
    @Test("pumps blocked in their writes hold no cooperative thread")
    func blockedPumpsLeaveThePoolFree() async throws {
        let count = ProcessInfo.processInfo.activeProcessorCount + 2
        let sinks = (0..<count).map { _ in BlockingSink(blocking: true) }
        let pumps = sinks.map { sink in
            Task { await BodyPump.run(.data(Data("x".utf8)), into: sink, on: sink.pump) }
        }
        // Wait, off the pool, until every pump is inside its write. Pumps that block the pool's
        // threads would keep the others from starting: then they are let go after 20 s, so that
        // the test fails instead of hanging.
        let entered = await Thread.waitOffPool {
            let deadline = DispatchTime.now() + 20
            let all = sinks.allSatisfy { $0.entered.wait(timeout: deadline) == .success }
            if !all { for sink in sinks { sink.gate.signal() } }
            return all
        }
        #expect(entered, "the pumps did not all start writing: some blocked the cooperative pool")
        // With every pump blocked, the pool still runs this task group.
        let ran = await withTaskGroup(of: Int.self) { group in
            for index in 0..<(count * 2) { group.addTask { index } }
            return await group.reduce(0, +)
        }
        #expect(ran == (0..<(count * 2)).reduce(0, +))
        for sink in sinks { sink.gate.signal() }
        for pump in pumps { await pump.value }
        #expect(sinks.allSatisfy { $0.log.withLock { $0.closed } })
    }
}

extension Thread {
    /// Runs `body` on a new thread and returns its result, leaving the cooperative pool free.
    fileprivate static func waitOffPool(_ body: @escaping @Sendable () -> Bool) async -> Bool {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: body()) }.start()
        }
    }
}
