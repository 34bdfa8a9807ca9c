import Foundation
@_spi(OutpostInternal) import OutpostCore
import Testing

@Suite("Server-Sent Events parser")
struct ServerSentEventParserTests {
    /// Parses `text` fed in chunks of `size` bytes.
    static func parse(_ text: String, chunk size: Int, limits: ServerSentEventParser.Limits = .init()) throws -> (
        [ServerSentEvent], ServerSentEventParser
    ) {
        var parser = ServerSentEventParser(limits: limits)
        let bytes = Array(text.utf8)
        var events: [ServerSentEvent] = []
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + size)
            events += try parser.parse(bytes[start..<end])
            start = end
        }
        return (events, parser)
    }

    @Test("fields, multi-line data, comments and every line ending, however the bytes are split", arguments: [1, 2, 3, 7, 1000])
    func fields(chunk: Int) throws {
        let text =
            "\u{FEFF}: a comment\r\nretry: 2500\nid: 7\nevent: created\ndata: {\"a\":\r\ndata:1}\r\n\r\n"
            + "data: plain\r\rid: 9\n\n: heartbeat\nid: 12\n\nevent: deleted\ndata\n\n"
        let (events, parser) = try Self.parse(text, chunk: chunk)
        #expect(
            events == [
                ServerSentEvent(event: "created", data: "{\"a\":\n1}", id: "7"),
                ServerSentEvent(event: "message", data: "plain", id: "7"),
                ServerSentEvent(event: "deleted", data: "", id: "12"),
            ])
        // An id without data moves the last event id without an event.
        #expect(parser.lastEventID == "12")
        #expect(parser.retry == 2500)
    }

    @Test("a line without end beyond maxLineBytes is refused, however it is split")
    func endlessLine() throws {
        let limits = ServerSentEventParser.Limits(maxLineBytes: 1024, maxEventBytes: 1 << 20)
        let text = "data: " + String(repeating: "x", count: 5000)
        for chunk in [1, 100, 10_000] {
            let error = #expect(throws: OutpostError.self) { _ = try Self.parse(text, chunk: chunk, limits: limits) }
            #expect(error?.code == .responseTooLarge)
            #expect(error?.message == "The event stream sent a line longer than 1024 bytes")
        }
        // Exactly at the limit is fine.
        let (events, _) = try Self.parse("data:" + String(repeating: "y", count: 1019) + "\n\n", chunk: 64, limits: limits)
        #expect(events.first?.data.count == 1019)
    }

    @Test("an event that never ends beyond maxEventBytes is refused")
    func endlessEvent() throws {
        let limits = ServerSentEventParser.Limits(maxLineBytes: 1024, maxEventBytes: 4096)
        let text = String(repeating: "data: 0123456789\n", count: 1000)
        let error = #expect(throws: OutpostError.self) { _ = try Self.parse(text, chunk: 512, limits: limits) }
        #expect(error?.code == .responseTooLarge)
        #expect(error?.message.contains("more than 4096 bytes of data") == true)
        // The same lines as separate events are fine: the bound is per event.
        let separate = String(repeating: "data: 0123456789\n\n", count: 1000)
        let (events, _) = try Self.parse(separate, chunk: 512, limits: limits)
        #expect(events.count == 1000)
    }

    @Test("an id holding NUL is ignored; unknown fields and an invalid retry are ignored")
    func ignored() throws {
        let (events, parser) = try Self.parse("id: 1\n\nid: a\u{0}b\nfoo: bar\nretry: soon\ndata: x\n\n", chunk: 3)
        #expect(events == [ServerSentEvent(event: "message", data: "x", id: "1")])
        #expect(parser.retry == nil)
    }
}
