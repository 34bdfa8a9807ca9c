import Foundation
import OutpostTestSupport
import Testing

@testable import OutpostCallbacks

@Suite("Fuzzing the parser")
struct FuzzTests {
    static let seeds = [
        "myapp://x-callback-url/open?x-source=S&x-success=o%3A%2F%2Fok%3Fa%3D1%23f&x-error=o://e&x-cancel=o://c&a=1+2&b=%C3%A9",
        "MYAPP://X-CALLBACK-URL/open/?a=&a=2&flag&=x#frag",
        "myapp://x-callback-url/notes/create?title=%E2%9C%93%20done&x-foo=bar",
    ]
    static let alphabet: [UInt8] = Array("myapx-clbkur:/?#&=%+2FAz0 .é".utf8)

    /// Routes `text` and checks the invariants that must hold whatever the input.
    func check(_ text: String, router: CallbackRouter) {
        do {
            let callback = try router.route(text)
            #expect(!callback.action.isEmpty)
            #expect(callback.parameters.keys.allSatisfy { !$0.isEmpty && !$0.hasPrefix("x-") })
            _ = callback.url(for: .success(parameters: [("k", text)]))
            isJSON(callback.conformanceJSON)
        } catch {
            #expect(!error.description.isEmpty)
            isJSON(error.conformanceJSON)
        }
    }

    func isJSON(_ text: String) {
        #expect((try? JSONSerialization.jsonObject(with: Data(text.utf8))) is [String: Any])
    }

    func router() -> CallbackRouter {
        let router = CallbackRouter(opener: RecordingURLOpener())
        for action in ["open", "open/", "notes/create"] { router.register(scheme: "myapp", action: action) { _ in } }
        return router
    }

    @Test("random bytes never crash the router")
    func randomBytes() {
        var rng = SeededGenerator(state: 0x5EED_0001)
        let router = router()
        for _ in 0..<2_000 {
            let count = Int.random(in: 0...200, using: &rng)
            let bytes: [UInt8] =
                Bool.random(using: &rng)
                ? (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
                : (0..<count).map { _ in Self.alphabet.randomElement(using: &rng) ?? 0 }
            check(String(decoding: bytes, as: UTF8.self), router: router)
        }
    }

    @Test("random mutations of valid URLs never crash the router")
    func mutations() {
        var rng = SeededGenerator(state: 0x5EED_0002)
        let router = router()
        var routed = 0
        for _ in 0..<3_000 {
            var bytes: [UInt8] = Array((Self.seeds.randomElement(using: &rng) ?? "").utf8)
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                let position = Int.random(in: 0...bytes.count, using: &rng)
                let byte =
                    Bool.random(using: &rng)
                    ? (Self.alphabet.randomElement(using: &rng) ?? 0) : UInt8.random(in: 0...255, using: &rng)
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: bytes.insert(byte, at: position)
                case 1 where position < bytes.count: bytes.remove(at: position)
                default: if position < bytes.count { bytes[position] = byte }
                }
            }
            let text = String(decoding: bytes, as: UTF8.self)
            if (try? router.route(text)) != nil { routed += 1 }
            check(text, router: router)
        }
        // Most small mutations leave a routable URL: the fuzzer reaches past the early checks.
        #expect(routed > 300)
    }
}
