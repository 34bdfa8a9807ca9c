import Foundation
import Synchronization
import Testing

@testable import OutpostCallbacks

/// Collects what a target received.
final class Inbox: Sendable {
    private let received = Mutex<[Callback]>([])
    var callbacks: [Callback] { received.withLock { $0 } }
    func add(_ callback: Callback) { received.withLock { $0.append(callback) } }
}

final class RecordingDelegate: CallbackRouterDelegate {
    let inbox = Inbox()
    func router(_ router: CallbackRouter, didReceive callback: Callback) { inbox.add(callback) }
}

@Suite("Routing to targets")
struct RouterTests {
    let opener = RecordingURLOpener()

    @Test("a closure receives its callbacks, per scheme and action")
    func closure() throws {
        let router = CallbackRouter(opener: opener)
        let opens = Inbox()
        let others = Inbox()
        router.register(scheme: "myapp", action: "open", handler: opens.add)
        router.register(scheme: "second", action: "open", handler: others.add)
        try router.route("myapp://x-callback-url/open?a=1")
        try router.route("SECOND://x-callback-url/open?a=2")
        #expect(opens.callbacks.map(\.parameters) == [["a": "1"]])
        #expect(others.callbacks.map(\.parameters) == [["a": "2"]])
        #expect(router.schemes == ["myapp", "second"])
    }

    @Test("a delegate receives its callbacks and is held weakly")
    func delegate() throws {
        let router = CallbackRouter(opener: opener)
        var delegate: RecordingDelegate? = RecordingDelegate()
        let inbox = try #require(delegate?.inbox)
        router.register(scheme: "myapp", action: "open", delegate: try #require(delegate))
        try router.route("myapp://x-callback-url/open")
        #expect(inbox.callbacks.count == 1)
        delegate = nil
        #expect(throws: CallbackError.self) { try router.route("myapp://x-callback-url/open") }
        #expect(inbox.callbacks.count == 1)
    }

    @Test("a notification is posted with the callback as its object")
    func notification() throws {
        let router = CallbackRouter(opener: opener)
        let center = NotificationCenter()
        let name = Notification.Name("OutpostCallbacksTests.open")
        let inbox = Inbox()
        let observer = center.addObserver(forName: name, object: nil, queue: nil) { note in
            if let callback = note.object as? Callback { inbox.add(callback) }
        }
        defer { center.removeObserver(observer) }
        router.register(scheme: "myapp", action: "open", notification: name, center: center)
        try router.route("myapp://x-callback-url/open?n=1")
        #expect(inbox.callbacks.map(\.parameters) == [["n": "1"]])
    }

    @Test("an AsyncStream yields callbacks in order and finishes when the action is removed")
    func stream() async throws {
        let router = CallbackRouter(opener: opener)
        let stream = router.callbacks(scheme: "myapp", action: "open")
        try router.route("myapp://x-callback-url/open?n=1")
        try router.route("myapp://x-callback-url/open?n=2")
        router.removeAction("open", scheme: "MYAPP")
        var received: [String] = []
        for await callback in stream { received.append(callback.parameters["n"] ?? "") }
        #expect(received == ["1", "2"])
        #expect(throws: CallbackError.self) { try router.route("myapp://x-callback-url/open") }
    }

    @Test("registering an action again replaces its target")
    func replace() throws {
        let router = CallbackRouter(opener: opener)
        let first = Inbox()
        let second = Inbox()
        router.register(scheme: "myapp", action: "open", handler: first.add)
        router.register(scheme: "myapp", action: "open", handler: second.add)
        try router.route("myapp://x-callback-url/open")
        #expect(first.callbacks.isEmpty)
        #expect(second.callbacks.count == 1)
    }

    @Test("routing can be switched off and on")
    func disable() throws {
        let router = CallbackRouter(opener: opener)
        let inbox = Inbox()
        router.register(scheme: "myapp", action: "open", handler: inbox.add)
        router.isEnabled = false
        let error = #expect(throws: CallbackError.self) { try router.route("myapp://x-callback-url/open") }
        #expect(error?.code == .routingDisabled)
        #expect(inbox.callbacks.isEmpty)
        router.isEnabled = true
        try router.route("myapp://x-callback-url/open")
        #expect(inbox.callbacks.count == 1)
    }

    @Test("actions and schemes can be removed")
    func remove() throws {
        let router = CallbackRouter(opener: opener)
        router.register(scheme: "myapp", action: "open") { _ in }
        router.register(scheme: "myapp", action: "close") { _ in }
        router.removeAction("open", scheme: "myapp")
        #expect((#expect(throws: CallbackError.self) { try router.route("myapp://x-callback-url/open") })?.code == .unknownAction)
        try router.route("myapp://x-callback-url/close")
        router.removeScheme("MyApp")
        #expect(
            (#expect(throws: CallbackError.self) { try router.route("myapp://x-callback-url/close") })?.code == .unknownScheme)
        #expect(router.schemes.isEmpty)
    }

    @Test("unknown and missing actions are answered through x-error when configured")
    func autoAnswer() async throws {
        let router = CallbackRouter(configuration: .init(unknownActionErrorCode: "404"), opener: opener)
        router.register(scheme: "myapp", action: "open") { _ in }
        #expect(throws: CallbackError.self) { try router.route("myapp://x-callback-url/nope?x-error=o%3A%2F%2Ferr") }
        #expect(throws: CallbackError.self) { try router.route("myapp://x-callback-url/?x-error=o%3A%2F%2Ferr2") }
        let urls = await opener.waitForURLs(count: 2).map(\.absoluteString).sorted()
        #expect(
            urls == [
                "o://err2?errorCode=404&errorMessage=The%20URL%20names%20no%20action.",
                "o://err?errorCode=404&errorMessage=Unknown%20action%20%27nope%27.",
            ])
    }

    @Test("without configuration nothing is answered")
    func noAutoAnswer() async throws {
        let router = CallbackRouter(opener: opener)
        #expect(throws: CallbackError.self) { try router.route("myapp://x-callback-url/nope?x-error=o%3A%2F%2Ferr") }
        router.register(scheme: "myapp", action: "open") { _ in }
        #expect(throws: CallbackError.self) { try router.route("myapp://x-callback-url/nope?x-error=o%3A%2F%2Ferr") }
        // A later success answer is the first URL opened, so no error answer came before it.
        let callback = try router.route("myapp://x-callback-url/open?x-success=o%3A%2F%2Fok")
        await callback.succeed()
        #expect(opener.urls.map(\.absoluteString) == ["o://ok"])
    }

    @Test("a handler may route and register from inside the router")
    func reentrant() throws {
        let router = CallbackRouter(opener: opener)
        let inbox = Inbox()
        router.register(scheme: "myapp", action: "inner", handler: inbox.add)
        router.register(scheme: "myapp", action: "outer") { _ in
            router.register(scheme: "myapp", action: "late") { _ in }
            _ = try? router.route("myapp://x-callback-url/inner")
        }
        try router.route("myapp://x-callback-url/outer")
        #expect(inbox.callbacks.count == 1)
        try router.route("myapp://x-callback-url/late")
    }
}

@Suite("Conformance JSON")
struct ConformanceJSONTests {
    @Test("a parsed callback renders keys in order with nulls")
    func success() throws {
        let callback = try Callback(
            parsing: "myapp://x-callback-url/open?x-source=S&x-cancel=c%3A%2F%2Fx&b=%22q%22&a=%5C%0A%01&c=%C3%A9",
            opener: RecordingURLOpener())
        #expect(
            callback.conformanceJSON
                == #"{"action":"open","source":"S","x-success":null,"x-error":null,"x-cancel":"c://x","parameters":{"a":"\\\n\u0001","b":"\"q\"","c":"é"}}"#
        )
        let data = Data(callback.conformanceJSON.utf8)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["action"] as? String == "open")
        #expect((object["parameters"] as? [String: String])?["a"] == "\\\n\u{01}")
    }

    @Test("a routing error renders the kind and what could be parsed")
    func failure() {
        let router = CallbackRouter(opener: RecordingURLOpener())
        router.register(scheme: "myapp", action: "open") { _ in }
        func json(_ url: String) -> String? {
            do {
                try router.route(url)
                return nil
            } catch {
                return error.conformanceJSON
            }
        }
        #expect(
            json("myapp://x-callback-url/nope?x-error=e%3A%2F%2Ff&p=1")
                == #"{"error":"unknownAction","action":"nope","source":null,"x-success":null,"x-error":"e://f","x-cancel":null,"parameters":{"p":"1"}}"#
        )
        #expect(
            json("myapp://x-callback-url/?x-source=S")
                == #"{"error":"missingAction","action":null,"source":"S","x-success":null,"x-error":null,"x-cancel":null,"parameters":{}}"#
        )
        #expect(
            json("myapp://host/open?x-source=S")
                == #"{"error":"invalidHost","action":null,"source":null,"x-success":null,"x-error":null,"x-cancel":null,"parameters":{}}"#
        )
        #expect(
            json("zzz://x-callback-url/open?x-source=S")
                == #"{"error":"unknownScheme","action":null,"source":null,"x-success":null,"x-error":null,"x-cancel":null,"parameters":{}}"#
        )
    }
}
