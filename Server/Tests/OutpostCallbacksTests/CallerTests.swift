import Foundation
import OutpostTestSupport
import Testing

@testable import OutpostCallbacks

/// A caller, its router and a recording opener, with a simulated other app.
struct CallerHarness {
    let opener = RecordingURLOpener()
    let router: CallbackRouter
    let caller: CallbackCaller

    init(storeURL: URL? = nil, timeout: Duration = .seconds(60), expiry: Duration = .seconds(3600)) throws {
        router = CallbackRouter(opener: opener)
        caller = try CallbackCaller(
            configuration: .init(scheme: "me", source: "Me App", timeout: timeout, expiry: expiry, storeURL: storeURL),
            router: router)
    }

    /// Waits for the `count`-th opened URL and parses it as the other app would.
    func request(_ count: Int = 1) async throws -> Callback {
        let urls = await opener.waitForURLs(count: count)
        return try Callback(parsing: urls[count - 1].absoluteString, opener: opener)
    }
}

/// Runs `body` with a store file's URL in a fresh folder, and removes the folder afterwards.
///
/// A store may still be rewriting its file in the background when `body` returns, and a write that
/// lands while the folder is being removed keeps it; the removal is repeated until the folder is
/// gone (a write that starts after that fails, as the folder is missing).
func withTemporaryStore<T>(_ body: (URL) async throws -> T) async throws -> T {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-callbacks-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return try await withCleanup {
        try await body(folder.appendingPathComponent("pending.json"))
    } cleanup: {
        do {
            let removed = try await eventually(within: .seconds(10)) {
                try? FileManager.default.removeItem(at: folder)
                return !FileManager.default.fileExists(atPath: folder.path)
            }
            if !removed { Issue.record("\(folder.path) could not be removed") }
        } catch {
            Issue.record("removing \(folder.path) was given up: \(error)")
        }
    }
}

@Suite("Calling other apps")
struct CallerTests {
    @Test("the request carries parameters, x-source and reply URLs with the request id")
    func requestShape() async throws {
        let h = try CallerHarness()
        let task = Task { try await h.caller.call(scheme: "other", action: "do/it", parameters: [("q", "a b")]) }
        let request = try await h.request()
        #expect(request.scheme == "other")
        #expect(request.action == "do/it")
        #expect(request.source == "Me App")
        #expect(request.parameters == ["q": "a b"])
        let success = try Callback(parsing: try #require(request.successURL), opener: h.opener)
        let error = try Callback(parsing: try #require(request.errorURL), opener: h.opener)
        let cancel = try Callback(parsing: try #require(request.cancelURL), opener: h.opener)
        #expect(success.scheme == "me")
        #expect(success.action == "outpost-reply/success")
        #expect(error.action == "outpost-reply/error")
        #expect(cancel.action == "outpost-reply/cancel")
        let id = try #require(success.parameters["requestID"])
        #expect(error.parameters["requestID"] == id)
        #expect(cancel.parameters["requestID"] == id)
        #expect(
            h.caller.requestURL(scheme: "other", action: "do/it", parameters: [("q", "a b")], requestID: id)
                == h.opener.urls[0].absoluteString)
        task.cancel()
        _ = await task.result
    }

    @Test("a success answer returns its parameters")
    func success() async throws {
        let h = try CallerHarness()
        async let result = h.caller.call(scheme: "other", action: "upper", parameters: [("text", "hi")])
        let request = try await h.request()
        let reply = try #require(request.url(for: .success(parameters: [("text", "HI"), ("n", "2")])))
        try h.router.route(reply)
        #expect(try await result == ["text": "HI", "n": "2"])
    }

    @Test("an error answer throws its code and message")
    func error() async throws {
        let h = try CallerHarness()
        async let result = h.caller.call(scheme: "other", action: "upper")
        let request = try await h.request()
        try h.router.route(try #require(request.url(for: .error(code: "42", message: "Bad thing"))))
        do {
            _ = try await result
            Issue.record("no error")
        } catch let error as CallbackError {
            #expect(error.code == .remoteError)
            #expect(error.remoteCode == "42")
            #expect(error.remoteMessage == "Bad thing")
        }
    }

    @Test("a cancel answer throws remoteCancelled")
    func cancel() async throws {
        let h = try CallerHarness()
        let task = Task { try await h.caller.call(scheme: "other", action: "upper") }
        let request = try await h.request()
        try h.router.route(try #require(request.url(for: .cancel)))
        let error = await #expect(throws: CallbackError.self) { try await task.value }
        #expect(error?.code == .remoteCancelled)
    }

    @Test("concurrent calls get their own answers")
    func concurrent() async throws {
        let h = try CallerHarness()
        async let first = h.caller.call(scheme: "other", action: "a")
        let firstRequest = try await h.request(1)
        async let second = h.caller.call(scheme: "other", action: "b")
        let secondRequest = try await h.request(2)
        try h.router.route(try #require(secondRequest.url(for: .success(parameters: [("who", "b")]))))
        try h.router.route(try #require(firstRequest.url(for: .success(parameters: [("who", "a")]))))
        #expect(try await first == ["who": "a"])
        #expect(try await second == ["who": "b"])
    }

    @Test("no answer times out")
    func timeout() async throws {
        let h = try CallerHarness()
        let error = await #expect(throws: CallbackError.self) {
            try await h.caller.call(scheme: "other", action: "slow", timeout: .milliseconds(20))
        }
        #expect(error?.code == .timedOut)
    }

    @Test("an opener that fails throws cannotOpen and keeps nothing pending")
    func cannotOpen() async throws {
        try await withTemporaryStore { store in
            let router = CallbackRouter(opener: RecordingURLOpener(result: false))
            let caller = try CallbackCaller(configuration: .init(scheme: "me", source: "Me", storeURL: store), router: router)
            let error = await #expect(throws: CallbackError.self) { try await caller.call(scheme: "other", action: "x") }
            #expect(error?.code == .cannotOpen)
            #expect(caller.pendingRequestIDs.isEmpty)
        }
    }

    @Test("cancelling the task throws CancellationError and forgets the call")
    func taskCancellation() async throws {
        try await withTemporaryStore { store in
            let h = try CallerHarness(storeURL: store)
            let task = Task { try await h.caller.call(scheme: "other", action: "x") }
            _ = try await h.request()
            #expect(h.caller.pendingRequestIDs.count == 1)
            task.cancel()
            let result = await task.result
            #expect(throws: CancellationError.self) { try result.get() }
            #expect(h.caller.pendingRequestIDs.isEmpty)
        }
    }

    @Test("after a restart, a late answer comes out of lateReplies; the store is owner-only")
    func persistence() async throws {
        try await withTemporaryStore { store in
            let before = try CallerHarness(storeURL: store)
            // The first process gives up waiting (a tiny timeout) and "exits".
            await #expect(throws: CallbackError.self) {
                try await before.caller.call(scheme: "other", action: "translate", timeout: .milliseconds(1))
            }
            let request = try await before.request()
            let id = try #require(before.caller.pendingRequestIDs.first)
            let attributes = try FileManager.default.attributesOfItem(atPath: store.path)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)

            // A new process: new router, new caller, same file.
            let after = try CallerHarness(storeURL: store)
            #expect(after.caller.pendingRequestIDs == [id])
            try after.router.route(try #require(request.url(for: .success(parameters: [("text", "bonjour")]))))
            var replies = after.caller.lateReplies.makeAsyncIterator()
            let reply = await replies.next()
            #expect(
                reply
                    == CallbackCaller.LateReply(
                        requestID: id, scheme: "other", action: "translate", outcome: .success(["text": "bonjour"])))
            #expect(after.caller.pendingRequestIDs.isEmpty)
            try await after.caller.flushStore()
            #expect(try CallerHarness(storeURL: store).caller.pendingRequestIDs.isEmpty)
        }
    }

    @Test("expired pending calls are dropped and their answers ignored")
    func expiry() async throws {
        try await withTemporaryStore { store in
            let before = try CallerHarness(storeURL: store, expiry: .zero)
            await #expect(throws: CallbackError.self) {
                try await before.caller.call(scheme: "other", action: "old", timeout: .milliseconds(1))
            }
            let expired = try await before.request(1)
            let fresh = try CallerHarness(storeURL: store, expiry: .seconds(3600))
            #expect(fresh.caller.pendingRequestIDs.isEmpty)
            await #expect(throws: CallbackError.self) {
                try await fresh.caller.call(scheme: "other", action: "new", timeout: .milliseconds(1))
            }
            let live = try await fresh.request(1)

            let after = try CallerHarness(storeURL: store)
            #expect(after.caller.pendingRequestIDs.count == 1)
            try after.router.route(try #require(expired.url(for: .success(parameters: [("which", "expired")]))))
            try after.router.route(try #require(live.url(for: .error(code: "1", message: "late"))))
            var replies = after.caller.lateReplies.makeAsyncIterator()
            let reply = await replies.next()
            #expect(reply?.action == "new")
            #expect(reply?.outcome == .error(code: "1", message: "late"))
        }
    }

    @Test("the store drops expired entries on load and rejects a corrupt file")
    func storeFile() async throws {
        try await withTemporaryStore { url in
            let now = Date()
            let json = """
                {"version":1,"pending":[
                  {"id":"old","scheme":"a","action":"x","createdAt":\(now.timeIntervalSince1970 - 100),"expiresAt":\(now.timeIntervalSince1970 - 1)},
                  {"id":"new","scheme":"a","action":"y","createdAt":\(now.timeIntervalSince1970),"expiresAt":\(now.timeIntervalSince1970 + 100)}
                ]}
                """
            try Data(json.utf8).write(to: url)
            let store = try PendingCallStore(fileURL: url, now: now)
            #expect(store.all.map(\.id) == ["new"])
            try await store.flush()  // the file is rewritten without the expired entry, in the background
            #expect(!(try String(contentsOf: url, encoding: .utf8).contains("\"old\"")))
            #expect(try PendingCallStore(fileURL: url, now: now).all.map(\.id) == ["new"])

            try Data("not json".utf8).write(to: url)
            let error = #expect(throws: CallbackError.self) { try PendingCallStore(fileURL: url) }
            #expect(error?.code == .storeFailed)
            #expect(try Data(contentsOf: url) == Data("not json".utf8))
        }
    }

    @Test("a store in a folder that does not exist fails with storeFailed")
    func unwritableStore() async throws {
        let url = URL(fileURLWithPath: "/nonexistent-\(UUID().uuidString)/pending.json")
        let h = try CallerHarness(storeURL: url)
        let error = await #expect(throws: CallbackError.self) { try await h.caller.call(scheme: "o", action: "x") }
        #expect(error?.code == .storeFailed)
        #expect(h.opener.urls.isEmpty)
    }

    @Test("answers for unknown request ids are ignored: nothing pending changes, no late reply comes out")
    func unknownID() async throws {
        try await withTemporaryStore { store in
            let h = try CallerHarness(storeURL: store)
            await #expect(throws: CallbackError.self) {
                try await h.caller.call(scheme: "other", action: "known", timeout: .milliseconds(1))
            }
            let known = try await h.request()
            let id = try #require(h.caller.pendingRequestIDs.first)
            let unknown = try h.router.route("me://x-callback-url/outpost-reply/success?requestID=nobody&x=1")
            #expect(unknown.parameters["requestID"] == "nobody")
            try h.router.route("me://x-callback-url/outpost-reply/cancel")
            #expect(h.caller.pendingRequestIDs == [id])
            // The first late reply is the known call's: the unknown answers produced none.
            try h.router.route(try #require(known.url(for: .cancel)))
            var replies = h.caller.lateReplies.makeAsyncIterator()
            let reply = await replies.next()
            #expect(reply?.requestID == id)
            #expect(reply?.outcome == .cancel)
        }
    }
}
