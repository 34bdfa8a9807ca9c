import Foundation
import Testing

@testable import OutpostCallbacks

/// One parsing rule and what a URL that exercises it parses to.
struct ParseCase: CustomTestStringConvertible, Sendable {
    var rule: String
    var url: String
    var action: String
    var source: String? = nil
    var success: String? = nil
    var error: String? = nil
    var cancel: String? = nil
    var parameters: [String: String] = [:]

    var testDescription: String { rule }
}

@Suite("Parsing incoming URLs")
struct ParsingTests {
    static let cases: [ParseCase] = [
        ParseCase(rule: "plain action", url: "myapp://x-callback-url/open", action: "open"),
        ParseCase(
            rule: "x- fields and parameters",
            url: "myapp://x-callback-url/open?x-source=Other&x-success=other://ok&x-error=other://err&x-cancel=other://no&id=42",
            action: "open", source: "Other", success: "other://ok", error: "other://err", cancel: "other://no",
            parameters: ["id": "42"]),
        ParseCase(
            rule: "nested encoded callback URL with its own query and fragment",
            url: "myapp://x-callback-url/open?x-success=other%3A%2F%2Fx-callback-url%2Fdone%3Fa%3D1%26b%3D2%23frag",
            action: "open", success: "other://x-callback-url/done?a=1&b=2#frag"),
        ParseCase(
            rule: "doubly encoded values are decoded exactly once",
            url: "myapp://x-callback-url/open?x-success=other%253A%252F%252Fdone&v=%2541",
            action: "open", success: "other%3A%2F%2Fdone", parameters: ["v": "%41"]),
        ParseCase(
            rule: "unicode, encoded and raw",
            url: "myapp://x-callback-url/caf%C3%A9?t=%E2%9C%93&raw=日本&%C3%A9=e",
            action: "café", parameters: ["t": "✓", "raw": "日本", "é": "e"]),
        ParseCase(
            rule: "+ stays a plus, %20 is a space",
            url: "myapp://x-callback-url/open?a=1+2&b=1%202&c=%2B",
            action: "open", parameters: ["a": "1+2", "b": "1 2", "c": "+"]),
        ParseCase(
            rule: "empty values are kept for parameters, absent for x- fields",
            url: "myapp://x-callback-url/open?empty=&x-success=&x-source=&x-error=&x-cancel=",
            action: "open", parameters: ["empty": ""]),
        ParseCase(
            rule: "the last duplicate wins",
            url: "myapp://x-callback-url/open?a=1&a=2&x-success=one://&x-success=two://",
            action: "open", success: "two://", parameters: ["a": "2"]),
        ParseCase(
            rule: "an empty last duplicate makes an x- field absent",
            url: "myapp://x-callback-url/open?x-success=one://&x-success=",
            action: "open"),
        ParseCase(
            rule: "segments without = or with an empty name are ignored",
            url: "myapp://x-callback-url/open?flag&=v&&a=b=c&%3D=eq",
            action: "open", parameters: ["a": "b=c", "=": "eq"]),
        ParseCase(
            rule: "every x- name stays out of parameters",
            url: "myapp://x-callback-url/open?x-foo=1&x-=2&X-Bar=3&%78-baz=4",
            action: "open", parameters: ["X-Bar": "3"]),
        ParseCase(
            rule: "an encoded x- name counts as x-",
            url: "myapp://x-callback-url/open?%78-success=a://b",
            action: "open", success: "a://b"),
        ParseCase(
            rule: "upper-case scheme and host",
            url: "MYAPP://X-CALLBACK-URL/open?a=1", action: "open", parameters: ["a": "1"]),
        ParseCase(rule: "one trailing slash is dropped", url: "myapp://x-callback-url/open/", action: "open"),
        ParseCase(rule: "only one trailing slash is dropped", url: "myapp://x-callback-url/open//", action: "open/"),
        ParseCase(
            rule: "several path segments are one action", url: "myapp://x-callback-url/notes/create/",
            action: "notes/create"),
        ParseCase(
            rule: "an encoded slash is decoded before stripping",
            url: "myapp://x-callback-url/open%2F", action: "open"),
        ParseCase(
            rule: "the fragment is ignored",
            url: "myapp://x-callback-url/open?a=1#x-success=evil://&b=2", action: "open", parameters: ["a": "1"]),
        ParseCase(
            rule: "a fragment without a query is ignored", url: "myapp://x-callback-url/open#frag", action: "open"),
        ParseCase(
            rule: "a malformed escape is kept as it is",
            url: "myapp://x-callback-url/open?a=100%&b=%zz&c=%4", action: "open",
            parameters: ["a": "100%", "b": "%zz", "c": "%4"]),
        ParseCase(
            rule: "invalid UTF-8 after decoding becomes U+FFFD",
            url: "myapp://x-callback-url/open?a=%FF", action: "open", parameters: ["a": "\u{FFFD}"]),
        ParseCase(
            rule: "action case is kept", url: "myapp://x-callback-url/Open", action: "Open"),
    ]

    @Test("parses", arguments: cases)
    func parses(_ c: ParseCase) throws {
        let callback = try Callback(parsing: c.url, opener: RecordingURLOpener())
        #expect(callback.url == c.url)
        #expect(callback.scheme == "myapp")
        #expect(callback.action == c.action)
        #expect(callback.source == c.source)
        #expect(callback.successURL == c.success)
        #expect(callback.errorURL == c.error)
        #expect(callback.cancelURL == c.cancel)
        #expect(callback.parameters == c.parameters)
    }

    @Test("parses through the router the same way", arguments: cases)
    func routes(_ c: ParseCase) throws {
        let router = CallbackRouter(opener: RecordingURLOpener())
        router.register(scheme: "MyApp", action: c.action) { _ in }
        let callback = try router.route(c.url)
        #expect(callback == (try Callback(parsing: c.url, opener: RecordingURLOpener())))
    }

    struct Failure: Sendable, CustomTestStringConvertible {
        var url: String
        var code: CallbackError.Code
        var parsedAction: String?
        var testDescription: String { "\(code): \(url)" }
    }

    /// The router knows `myapp:open`; errors come in the order unknownScheme, invalidHost,
    /// missingAction, unknownAction.
    static let failures: [Failure] = [
        Failure(url: "", code: .unknownScheme),
        Failure(url: "not a url", code: .unknownScheme),
        Failure(url: "://x-callback-url/open", code: .unknownScheme),
        Failure(url: "1app://x-callback-url/open", code: .unknownScheme),
        Failure(url: "other://x-callback-url/open", code: .unknownScheme),
        Failure(url: "other://wrong-host", code: .unknownScheme),
        Failure(url: "myap://x-callback-url/open", code: .unknownScheme),
        Failure(url: "myapp://wrong-host/open", code: .invalidHost),
        Failure(url: "myapp://wrong-host", code: .invalidHost),
        Failure(url: "myapp:x-callback-url/open", code: .invalidHost),
        Failure(url: "myapp:/x-callback-url/open", code: .invalidHost),
        Failure(url: "myapp://x-callback-url.example/open", code: .invalidHost),
        Failure(url: "myapp://user@x-callback-url/open", code: .invalidHost),
        Failure(url: "myapp://x-callback-url:80/open", code: .invalidHost),
        Failure(url: "myapp://", code: .invalidHost),
        Failure(url: "myapp://x-callback-url", code: .missingAction),
        Failure(url: "myapp://x-callback-url/", code: .missingAction),
        Failure(url: "myapp://x-callback-url?x-error=a://b", code: .missingAction),
        Failure(url: "myapp://x-callback-url#open", code: .missingAction),
        Failure(url: "myapp://x-callback-url/close", code: .unknownAction, parsedAction: "close"),
        Failure(url: "myapp://x-callback-url/Open", code: .unknownAction, parsedAction: "Open"),
        Failure(url: "myapp://x-callback-url/open/more", code: .unknownAction, parsedAction: "open/more"),
    ]

    @Test("fails with the first failing check", arguments: failures)
    func fails(_ f: Failure) {
        let router = CallbackRouter(opener: RecordingURLOpener())
        router.register(scheme: "myapp", action: "open") { _ in }
        let error = #expect(throws: CallbackError.self) { try router.route(f.url) }
        #expect(error?.code == f.code)
        #expect(error?.url == f.url)
        if f.code == .unknownScheme || f.code == .invalidHost {
            #expect(error?.callback == nil)
        } else {
            #expect(error?.callback?.action == (f.parsedAction ?? ""))
        }
    }

    @Test("x- fields are still parsed when the action is unknown or missing")
    func partialParse() throws {
        let router = CallbackRouter(opener: RecordingURLOpener())
        router.register(scheme: "myapp", action: "open") { _ in }
        for url in [
            "myapp://x-callback-url/nope?x-source=S&x-error=e%3A%2F%2Ff&p=1",
            "myapp://x-callback-url/?x-source=S&x-error=e%3A%2F%2Ff&p=1",
        ] {
            do {
                try router.route(url)
                Issue.record("\(url) routed")
            } catch {
                #expect(error.callback?.source == "S")
                #expect(error.callback?.errorURL == "e://f")
                #expect(error.callback?.parameters == ["p": "1"])
            }
        }
    }

    @Test("a 100 KB URL routes, and one with a 100 KB host fails cleanly")
    func hugeURL() throws {
        let value = String(repeating: "%C3%A9a+", count: 100_000 / 8)
        let url = "myapp://x-callback-url/open?big=\(value)&x-success=a%3A%2F%2Fb&small=1"
        #expect(url.utf8.count > 100_000)
        let router = CallbackRouter(opener: RecordingURLOpener())
        router.register(scheme: "myapp", action: "open") { _ in }
        let callback = try router.route(url)
        #expect(callback.parameters["big"] == String(repeating: "éa+", count: 100_000 / 8))
        #expect(callback.parameters["small"] == "1")
        #expect(callback.successURL == "a://b")

        let hugeHost = "myapp://" + String(repeating: "h", count: 100_000) + "/open"
        #expect(throws: CallbackError.self) { try router.route(hugeHost) }
        let hugeScheme = String(repeating: "s", count: 100_000) + "://x-callback-url/open"
        #expect(throws: CallbackError.self) { try router.route(hugeScheme) }
    }

    @Test("a URL value routes like its text")
    func urlConvenience() throws {
        let router = CallbackRouter(opener: RecordingURLOpener())
        router.register(scheme: "myapp", action: "open") { _ in }
        let url = try #require(URL(string: "myapp://x-callback-url/open?a=%20"))
        #expect(try router.route(url).parameters == ["a": " "])
        #expect(try Callback(parsing: url).action == "open")
    }

    @Test("errors describe what to do and stay short for huge URLs")
    func errorDescriptions() {
        let huge = "myapp://wrong/" + String(repeating: "a", count: 10_000)
        let error = CallbackError(code: .invalidHost, url: huge)
        #expect(error.description.contains("x-callback-url"))
        #expect(error.description.utf8.count < 500)
        #expect(CallbackError.Code.unknownAction.name == "unknownAction")
    }
}
