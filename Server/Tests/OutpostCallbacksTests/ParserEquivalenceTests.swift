import Foundation
import OutpostTestSupport
import Synchronization
import Testing

@testable import OutpostCallbacks

/// The parsing rules written the plain way, byte by byte, to check the word-at-a-time parser
/// against: any difference on any input is a bug in one of them.
enum ReferenceParser {
    struct Parsed: Equatable, CustomStringConvertible {
        var scheme: String
        var action: String
        var source, success, error, cancel: String?
        var parameters: [String: String]

        var description: String {
            "\(scheme) \(action) \(source ?? "-") \(success ?? "-") \(error ?? "-") \(cancel ?? "-") \(parameters.sorted { $0.key < $1.key })"
        }
    }

    enum Outcome: Equatable {
        case parsed(Parsed)
        case failed(CallbackError.Code)
    }

    static func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        default: return nil
        }
    }

    static func decode(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        let bytes = Array(bytes)
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "%"), i + 2 < bytes.count, let high = hex(bytes[i + 1]), let low = hex(bytes[i + 2]) {
                out.append(high << 4 | low)
                i += 3
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return out
    }

    static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    static func lower(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
    }

    static func parse(_ url: String) -> Outcome {
        let b = Array(url.utf8)
        func isAlpha(_ c: UInt8) -> Bool { (c >= 65 && c <= 90) || (c >= 97 && c <= 122) }
        func isSchemeByte(_ c: UInt8) -> Bool {
            isAlpha(c) || (c >= 48 && c <= 57) || c == UInt8(ascii: "+") || c == UInt8(ascii: "-") || c == UInt8(ascii: ".")
        }
        guard let first = b.first, isAlpha(first) else { return .failed(.unknownScheme) }
        var i = 1
        while i < b.count, isSchemeByte(b[i]) { i += 1 }
        guard i < b.count, b[i] == UInt8(ascii: ":") else { return .failed(.unknownScheme) }
        let scheme = text(b[0..<i].map(lower))
        i += 1
        guard b.count >= i + 2, b[i] == UInt8(ascii: "/"), b[i + 1] == UInt8(ascii: "/") else {
            return .failed(.invalidHost)
        }
        i += 2
        var hostEnd = i
        while hostEnd < b.count, ![UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#")].contains(b[hostEnd]) {
            hostEnd += 1
        }
        guard b[i..<hostEnd].map(lower) == Array("x-callback-url".utf8) else { return .failed(.invalidHost) }
        var pathEnd = hostEnd
        while pathEnd < b.count, b[pathEnd] != UInt8(ascii: "?"), b[pathEnd] != UInt8(ascii: "#") { pathEnd += 1 }
        var path = decode(b[hostEnd..<pathEnd])
        if path.first == UInt8(ascii: "/") { path.removeFirst() }
        if path.last == UInt8(ascii: "/") { path.removeLast() }
        var parsed = Parsed(scheme: scheme, action: text(path), parameters: [:])
        if pathEnd < b.count, b[pathEnd] == UInt8(ascii: "?") {
            var queryEnd = pathEnd + 1
            while queryEnd < b.count, b[queryEnd] != UInt8(ascii: "#") { queryEnd += 1 }
            for segment in b[(pathEnd + 1)..<queryEnd].split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: false) {
                guard let equals = segment.firstIndex(of: UInt8(ascii: "=")), equals > segment.startIndex else { continue }
                let name = text(decode(segment[segment.startIndex..<equals]))
                let value = text(decode(segment[(equals + 1)...]))
                if name.utf8.starts(with: "x-".utf8) {
                    let present: String? = value.isEmpty ? nil : value
                    switch name {
                    case "x-source": parsed.source = present
                    case "x-success": parsed.success = present
                    case "x-error": parsed.error = present
                    case "x-cancel": parsed.cancel = present
                    default: break
                    }
                } else {
                    parsed.parameters[name] = value
                }
            }
        }
        return parsed.action.isEmpty ? .failed(.missingAction) : .parsed(parsed)
    }

    static func actual(_ url: String) -> Outcome {
        do {
            let callback = try Callback(parsing: url, opener: RecordingURLOpener())
            return .parsed(
                Parsed(
                    scheme: callback.scheme, action: callback.action, source: callback.source,
                    success: callback.successURL, error: callback.errorURL, cancel: callback.cancelURL,
                    parameters: callback.parameters))
        } catch {
            return .failed(error.code)
        }
    }
}

@Suite("The parser agrees with a byte-by-byte reference")
struct ParserEquivalenceTests {
    static let seeds = [
        "notes://x-callback-url/create-note?x-source=Outpost%20Demo&x-success=outpost%3A%2F%2Fx-callback-url%2Fdone%3FrequestID%3D42&x-error=outpost%3A%2F%2Fx-callback-url%2Ffailed&title=Shopping%20list&body=milk%2C%20eggs%20%26%20bread&tags=home&pinned=true",
        "MyApp://X-Callback-URL/caf%C3%A9/?t=%E2%9C%93&raw=日本&%C3%A9=e&%78-success=a://b#frag&x=1",
        "myapp://x-callback-url/open?flag&=v&&a=b=c&%3D=eq&v=%2541&p=%&q=%4&r=%4g&s=%%41",
        "a+b.c-d://x-callback-url?x-source=&x-error=e://f&k=%ff%fe&u=%C3",
        "myapp://x-callback-url/open%2F?x-cancel=c%3A%2F%2F#x-success=ignored",
    ]

    static let alphabet: [UInt8] = Array("aA0%&=#?/:+-.x2FfG é%41%2".utf8)

    @Test("fixed cases")
    func fixed() {
        for url in Self.seeds + [
            "", "m", "m:", "m://", "m://x-callback-url", "m://x-callback-urlx/a", "m://x-callback-ur/a",
            "m://X-CALLBACK-URL#a", "m://x-callback-url/a?", "m://x-callback-url/a?%", "m://x-callback-url/a?a=%",
            "m://x-callback-url/a?a=%4", "m://x-callback-url/a?abcdefghijklmnop%41qrstuvwxyz=0123456789abcdef%42ghij",
            "m://x-callback-url/a?x-successs=1&x-succes=2&x-source=%41%42%43%44%45%46%47%48%49%4A",
            // Trailing slashes, literal and encoded; empty names and values; repeated names.
            "m://x-callback-url/%2F", "m://x-callback-url//", "m://x-callback-url/a%2F%2F", "m://x-callback-url/a/b/c/",
            "m://x-callback-url/a?=v&n=", "m://x-callback-url/a?x-source=a&x-source=", "m://x-callback-url/a?k=1&k=2",
            "m://x-callback-url/a?k=%26&%26=k&%3d=%3D", "m://x-callback-url/a?x-Success=1&X-success=2&x-=3",
            "m://x-callback-url/a?k=a#b&c=d", "m://x-callback-url/a?%78%2Dsuccess=s://t&x%2derror=e://f",
            // Exactly eight and nine bytes around the separators, where word-at-a-time scanning turns.
            "m://x-callback-url/a?abcdefg=12345678&abcdefgh=123456789&a=", "m://x-callback-url/abcdefgh?abcdefgh",
            "m://x-callback-url/a?k=\u{FF}%FF%C3%A9\u{1F600}",
        ] {
            #expect(ReferenceParser.actual(url) == ReferenceParser.parse(url), "\(url)")
        }
    }

    @Test("a long query of segments without '=' is read to its end, and a parameter after them counts")
    func longQuery() throws {
        let query = String(repeating: "abcdefghij&", count: 20_000) + "last=1"
        let callback = try Callback(parsing: "m://x-callback-url/a?" + query, opener: RecordingURLOpener())
        #expect(callback.parameters == ["last": "1"])
        let equalsOnly = String(repeating: "=", count: 200_000)
        #expect(
            ReferenceParser.actual("m://x-callback-url/a?" + equalsOnly)
                == ReferenceParser.parse("m://x-callback-url/a?" + equalsOnly))
    }

    @Test("random mutations of valid URLs")
    func mutations() {
        var random = SeededGenerator(state: 0x0_5EED)
        for _ in 0..<20_000 {
            var bytes = Array(Self.seeds.randomElement(using: &random)!.utf8)
            for _ in 0..<Int.random(in: 1...6, using: &random) {
                let position = Int.random(in: 0...bytes.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0: bytes.insert(Self.alphabet.randomElement(using: &random)!, at: position)
                case 1: if position < bytes.count { bytes.remove(at: position) }
                default: if position < bytes.count { bytes[position] = Self.alphabet.randomElement(using: &random)! }
                }
            }
            let url = String(decoding: bytes, as: UTF8.self)
            let expected = ReferenceParser.parse(url)
            let actual = ReferenceParser.actual(url)
            #expect(actual == expected, "\(url)")
            if actual != expected { return }
        }
    }

    @Test("random queries of every length around the word size")
    func queries() {
        var random = SeededGenerator(state: 42)
        for length in 0..<80 {
            for _ in 0..<100 {
                let query = (0..<length).map { _ in Self.alphabet.randomElement(using: &random)! }
                let url = "myapp://x-callback-url/a?" + String(decoding: query, as: UTF8.self)
                #expect(ReferenceParser.actual(url) == ReferenceParser.parse(url), "\(url)")
            }
        }
    }

    @Test("the router finds schemes case-insensitively and actions case-sensitively, with few or many actions")
    func routerLookup() throws {
        for count in [1, 3, 8, 9, 40] {
            let router = CallbackRouter(opener: RecordingURLOpener())
            let hits = Mutex(0)
            for k in 0..<count {
                router.register(scheme: "App\(k % 3)", action: "act\(k)") { _ in hits.withLock { $0 += 1 } }
            }
            router.register(scheme: "other", action: "act0") { _ in }
            for k in 0..<count {
                let callback = try router.route("APP\(k % 3)://x-callback-url/act\(k)?a=1")
                #expect(callback.action == "act\(k)")
                #expect(callback.scheme == "app\(k % 3)")
                #expect(throws: CallbackError.self) { try router.route("app\(k % 3)://x-callback-url/ACT\(k)") }
            }
            #expect(throws: CallbackError.self) { try router.route("ap://x-callback-url/act0") }
            #expect(throws: CallbackError.self) { try router.route("app9://x-callback-url/act0") }
            #expect(hits.withLock { $0 } == count)
        }
    }
}
