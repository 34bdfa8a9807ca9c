import Foundation
@_spi(OutpostInternal) import OutpostSupport
import Testing

@testable import OutpostCallbacks

@Suite("Building callback URLs")
struct BuildingTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var rule: String
        var base: String
        var parameters: [(name: String, value: String)]
        var expected: String
        var testDescription: String { rule }
    }

    static let cases: [Case] = [
        Case(
            rule: "no query: add ?", base: "other://x-callback-url/done", parameters: [("a", "1")],
            expected: "other://x-callback-url/done?a=1"),
        Case(
            rule: "empty query: nothing", base: "other://done?", parameters: [("a", "1")],
            expected: "other://done?a=1"),
        Case(
            rule: "query ending in &: nothing", base: "other://done?x=1&", parameters: [("a", "1")],
            expected: "other://done?x=1&a=1"),
        Case(
            rule: "other query: &", base: "other://done?x=1", parameters: [("a", "1"), ("b", "2")],
            expected: "other://done?x=1&a=1&b=2"),
        Case(
            rule: "parameters go before the fragment", base: "other://done#frag", parameters: [("a", "1")],
            expected: "other://done?a=1#frag"),
        Case(
            rule: "query and fragment", base: "other://done?x=1#f?g&h", parameters: [("a", "1")],
            expected: "other://done?x=1&a=1#f?g&h"),
        Case(
            rule: "empty query before a fragment", base: "other://done?#f", parameters: [("a", "1")],
            expected: "other://done?a=1#f"),
        Case(
            rule: "the existing query is kept byte for byte", base: "other://done?q=a+b%2fc%20&Z=%zz",
            parameters: [("a", "1")], expected: "other://done?q=a+b%2fc%20&Z=%zz&a=1"),
        Case(
            rule: "percent-encoding with upper-case hex, space as %20",
            base: "o://d", parameters: [("a b", "x+y/z?&=#%"), ("é", "✓")],
            expected: "o://d?a%20b=x%2By%2Fz%3F%26%3D%23%25&%C3%A9=%E2%9C%93"),
        Case(
            rule: "unreserved characters are not encoded", base: "o://d",
            parameters: [("AZaz09-._~", "AZaz09-._~")], expected: "o://d?AZaz09-._~=AZaz09-._~"),
        Case(rule: "empty values", base: "o://d", parameters: [("a", "")], expected: "o://d?a="),
        Case(rule: "no parameters leaves the URL unchanged", base: "o://d#f", parameters: [], expected: "o://d#f"),
        Case(
            rule: "a nested callback URL is encoded whole", base: "o://d",
            parameters: [("x-success", "me://x-callback-url/ok?id=1&b=2#f")],
            expected: "o://d?x-success=me%3A%2F%2Fx-callback-url%2Fok%3Fid%3D1%26b%3D2%23f"),
    ]

    @Test("success URLs", arguments: cases)
    func success(_ c: Case) {
        #expect(CallbackAnswer.success(parameters: c.parameters).url(base: c.base) == c.expected)
    }

    @Test("an error carries errorCode then errorMessage")
    func error() {
        #expect(
            CallbackAnswer.error(code: "42", message: "Bad thing & more").url(base: "o://d?x=1#f")
                == "o://d?x=1&errorCode=42&errorMessage=Bad%20thing%20%26%20more#f")
    }

    @Test("cancel opens its URL unchanged")
    func cancel() {
        #expect(CallbackAnswer.cancel.url(base: "o://d?x=%20#f") == "o://d?x=%20#f")
    }

    @Test("an empty base means nothing to open")
    func emptyBase() {
        #expect(CallbackAnswer.success(parameters: [("a", "1")]).url(base: "") == nil)
        #expect(CallbackAnswer.error(code: "1", message: "m").url(base: "") == nil)
        #expect(CallbackAnswer.cancel.url(base: "") == nil)
    }

    @Test("a built URL parses back to the same parameters")
    func roundTrip() throws {
        let values = ["plain", "a b", "x+y", "100%", "é✓日本", "a=b&c", "#frag", ""]
        let parameters = values.enumerated().map { (name: "p\($0.offset)", value: $0.element) }
        let url = try #require(CallbackAnswer.success(parameters: parameters).url(base: "me://x-callback-url/ok"))
        let callback = try Callback(parsing: url, opener: RecordingURLOpener())
        #expect(callback.parameters == Dictionary(uniqueKeysWithValues: parameters.map { ($0.name, $0.value) }))
    }
}

@Suite("Answering the caller")
struct AnsweringTests {
    let incoming =
        "myapp://x-callback-url/open?x-success=other%3A%2F%2Fok%3Fa%3D1%23f&x-error=other%3A%2F%2Ferr"
        + "&x-cancel=other%3A%2F%2Fno%3Fq"

    @Test("succeed, fail and cancel open the right URL through the opener")
    func answers() async throws {
        let opener = RecordingURLOpener()
        let router = CallbackRouter(opener: opener)
        router.register(scheme: "myapp", action: "open") { _ in }
        let callback = try router.route(incoming)
        #expect(await callback.succeed(additionalParameters: [("b", "2 3")]))
        #expect(await callback.succeed(additionalParameters: ["z": "1", "y": "2"]))
        #expect(await callback.fail(code: "7", message: "No."))
        #expect(await callback.cancel())
        #expect(
            opener.urls.map(\.absoluteString) == [
                "other://ok?a=1&b=2%203#f", "other://ok?a=1&y=2&z=1#f",
                "other://err?errorCode=7&errorMessage=No.", "other://no?q",
            ])
    }

    @Test("a missing callback URL opens nothing and is not an error")
    func missing() async throws {
        let opener = RecordingURLOpener()
        let callback = try Callback(parsing: "myapp://x-callback-url/open?x-success=", opener: opener)
        #expect(await callback.succeed() == false)
        #expect(await callback.fail(code: "1", message: "m") == false)
        #expect(await callback.cancel() == false)
        #expect(opener.urls.isEmpty)
    }

    @Test("an opener that fails is reported")
    func openerFails() async throws {
        let opener = RecordingURLOpener(result: false)
        let callback = try Callback(parsing: incoming, opener: opener)
        #expect(await callback.succeed() == false)
        #expect(opener.urls.count == 1)
    }

    #if os(Linux)
        @Test("the Linux opener reports a program that cannot run or fails")
        func systemOpener() async {
            #expect(await SystemOpener.run(executable: "/nonexistent/xdg-open", arguments: []) != .opened)
            #expect(await SystemOpener.run(executable: "/bin/sh", arguments: ["-c", "exit 3"]) == .declined(status: 3))
            #expect(await SystemOpener.run(executable: "/bin/sh", arguments: ["-c", "exit 0"]) == .opened)
        }
    #endif
}
