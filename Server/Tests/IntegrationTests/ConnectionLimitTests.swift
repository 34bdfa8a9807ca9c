import Foundation
import NIOCore
import OutpostServer
import OutpostTestSupport
import Testing

/// The connections an instance holds are bounded below its file limit: one more is answered 503 and
/// closed at once, and a place comes free when a connection closes.
// The time limit bounds a hang, not the speed: with every suite running at once on two cores, a
// test can wait over a minute for its turn.
@Suite("Connection limit", .closesWhatItOpens, .timeLimit(.minutes(3)))
struct ConnectionLimitTests {
    @Test("past maxConnections a connection gets 503 too_many_connections and is closed; a closed one frees its place")
    func limit() async throws {
        let server = try await LiveServer.start { $0.maxConnections = 3 }
        do {
            let port = server.running.port
            // Three kept-alive connections, each with a request answered: all three places held.
            var held: [HeldConnection] = []
            for _ in 0..<3 { held.append(try await HeldConnection.open(port: port)) }
            // Answered as soon as it is accepted, before any request: the client only reads.
            let refused = try await RawHTTP(port: port).exchange([], timeout: .seconds(10))
            #expect(refused.status == 503)
            #expect(refused.headers["retry-after"] == "1")
            #expect(refused.body.contains("too_many_connections"))
            #expect(refused.closed)

            await held.removeLast().close()
            // The server learns of the close from the network: a new connection is let in once it has.
            #expect(
                try await eventually(within: .seconds(10), every: .milliseconds(20)) {
                    // A refused connection may be closed before the request is written: not yet.
                    let reply = try? await RawHTTP(port: port).exchange(
                        "GET /health HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", timeout: .seconds(10))
                    return reply?.status == 200
                })
            for connection in held { await connection.close() }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}

/// A connection kept open after one answered request, until ``close()``.
struct HeldConnection {
    let release: AsyncStream<Void>.Continuation
    let task: Task<Void, any Error>

    static func open(port: Int) async throws -> HeldConnection {
        let channel = try await RawHTTP(port: port).connect()
        let (answered, answer) = AsyncStream<Bool>.makeStream()
        let (released, release) = AsyncStream<Void>.makeStream()
        let task = Task {
            try await channel.executeThenClose { inbound, outbound in
                try await outbound.write(ByteBuffer(string: "GET /health HTTP/1.1\r\nHost: a\r\n\r\n"))
                var iterator = inbound.makeAsyncIterator()
                let first = try await iterator.next()
                answer.yield(first.map { String(buffer: $0).hasPrefix("HTTP/1.1 200") } ?? false)
                answer.finish()
                for await _ in released {}
            }
        }
        var answers = answered.makeAsyncIterator()
        let ok = await answers.next() ?? false
        #expect(ok, "a held connection's request was not answered 200")
        return HeldConnection(release: release, task: task)
    }

    func close() async {
        release.finish()
        _ = try? await task.value
    }
}
