import Dispatch
import Foundation
@_spi(OutpostInternal) import OutpostSupport
import Testing

@testable import OutpostCallbacks

@Suite("Loading the pending-call store off the cooperative pool")
struct StoreLoadingTests {
    static func storeJSON(now: Date) -> Data {
        Data(
            """
            {"version":1,"pending":[
              {"id":"old","scheme":"a","action":"x","createdAt":\(now.timeIntervalSince1970 - 100),"expiresAt":\(now.timeIntervalSince1970 - 1)},
              {"id":"new","scheme":"a","action":"y","createdAt":\(now.timeIntervalSince1970),"expiresAt":\(now.timeIntervalSince1970 + 100)}
            ]}
            """.utf8)
    }

    @Test("opening reads the file on the blocking pool, once the pool has a thread free, not in the calling task")
    func readsOnPool() async throws {
        try await withTemporaryStore { url in
            let now = Date()
            try Self.storeJSON(now: now).write(to: url)
            let pool = BlockingPool(threads: 1, name: "test-store-load")
            let gate = DispatchSemaphore(value: 0)
            pool.submit { gate.wait() }  // the pool's only thread is busy until the gate opens

            let (begun, begin) = AsyncStream.makeStream(of: Void.self)
            let openings = (0..<3).map { _ in
                Task { () async throws -> [String] in
                    begin.yield()
                    return try await PendingCallStore.opening(fileURL: url, now: now, pool: pool).all.map(\.id)
                }
            }
            var started = 0
            for await _ in begun {
                started += 1
                if started == openings.count { break }
            }
            // Every opening has begun; none may have read the file yet. Damage it: a read made in the
            // calling task would already have seen the good file.
            try Data("not json".utf8).write(to: url)
            gate.signal()
            for opening in openings {
                let result = await opening.result
                guard case .failure(let error) = result else {
                    Issue.record("an opening read the file before the pool ran it: \(result)")
                    continue
                }
                #expect((error as? CallbackError)?.code == .storeFailed)
            }
        }
    }

    @Test("opening loads like the initializer: expired entries dropped, a missing file is empty, a corrupt one fails")
    func loadsLikeInit() async throws {
        try await withTemporaryStore { url in
            let now = Date()
            #expect(try await PendingCallStore.opening(fileURL: url, now: now).all.isEmpty)
            try Self.storeJSON(now: now).write(to: url)
            let store = try await PendingCallStore.opening(fileURL: url, now: now)
            #expect(store.all.map(\.id) == ["new"])
            try await store.flush()  // rewritten without the expired entry, in the background
            #expect(!(try String(contentsOf: url, encoding: .utf8).contains("\"old\"")))

            try Data("not json".utf8).write(to: url)
            await #expect(throws: CallbackError.self) { try await PendingCallStore.opening(fileURL: url) }
        }
    }

    @Test("a caller made with opening keeps its calls across a restart, like one made with the initializer")
    func callerOpening() async throws {
        try await withTemporaryStore { url in
            let now = Date()
            try Self.storeJSON(now: now).write(to: url)
            let router = CallbackRouter(opener: RecordingURLOpener())
            let caller = try await CallbackCaller.opening(
                configuration: .init(scheme: "me", source: "Me", storeURL: url), router: router)
            #expect(caller.pendingRequestIDs == ["new"])
        }
    }
}
