import Foundation
import HTTPTypes
import HTTPTypesFoundation
import OutpostTesting
import Testing

@_spi(OutpostInternal) @testable import OutpostCore

/// `prepare` builds the common request from the base URL's parts without parsing a URL; it must
/// build exactly what parsing builds.
@Suite("Request building without parsing")
struct RequestShortcutTests {
    static let bases = [
        "http://example.test", "http://example.test/", "http://example.test/api", "http://example.test/api/v1/",
        "https://example.test:8443/a%20b", "http://127.0.0.1:8080", "http://[::1]:9000/root",
    ]

    static let paths = [
        "/small", "small", "", "/", "//double", "/records/a%2Fb", "/records/a%2fb", "/x/y/z/",
        "/items/-_~!$&'()*+,;=@", "/lambdas/hello:someone", "/.well-known/openid-configuration", "/a/./b",
        "/a/../b", "./x", "/q?limit=20", "/frag#x", "/space here", "/unicode/é", "http://other.test/next?page=2",
        "/bad%zz", "/bad%2",
    ]

    @Test("the shortcut builds what parsing builds", arguments: bases)
    func sameAsParsing(_ base: String) throws {
        let client = OutpostClient(
            configuration: .init(baseURL: try #require(URL(string: base))),
            transport: ScriptedTransport { _, _ in throw OutpostError(.cancelled, "not sent") })
        for path in Self.paths {
            let parsed = try? client.prepareByParsing(.get(path))
            let built = try? client.prepare(.get(path)).request
            #expect(built == parsed, "\(base) + \(path)")
            #expect(built?.headerFields[.userAgent]?.hasPrefix("Outpost/") ?? (parsed == nil))
        }
    }

    #if os(Linux) || os(Android) || os(Windows) || os(OpenBSD)
        @Test("the transport spells the URL as HTTPRequest.url does", arguments: bases)
        func urlString(_ base: String) throws {
            let client = OutpostClient(
                configuration: .init(baseURL: try #require(URL(string: base))),
                transport: ScriptedTransport { _, _ in throw OutpostError(.cancelled, "not sent") })
            for path in Self.paths {
                guard let request = try? client.prepare(.get(path)).request else { continue }
                #expect(AsyncHTTPClientTransport.absoluteURLString(of: request) == request.url?.absoluteString, "\(path)")
            }
            let options = HTTPRequest(method: .options, scheme: "http", authority: "example.test", path: "*")
            #expect(AsyncHTTPClientTransport.absoluteURLString(of: options) == nil)
        }
    #endif
}

/// The whole-exchange deadline and shutdown of ``InFlightExchanges``, without a network.
@Suite("In-flight exchanges")
struct InFlightExchangesTests {
    @Test("an exchange past its deadline fails with timeout, even when a later one has an earlier deadline")
    func deadlines() async throws {
        let exchanges = InFlightExchanges<Int>()
        // The first exchange arms the watchdog for a minute; the second must re-arm it.
        let (started, start) = AsyncStream.makeStream(of: Void.self)
        let long = Task {
            try await exchanges.run(options: TransportOptions(timeout: .seconds(60))) {
                start.yield()
                return try await forever()
            }
        }
        var starts = started.makeAsyncIterator()
        await starts.next()  // the long exchange is in flight
        let error = await #expect(throws: OutpostError.self) {
            try await exchanges.run(options: TransportOptions(timeout: .milliseconds(50))) { try await forever() }
        }
        #expect(error?.code == .timeout)
        // A quick exchange is untouched by the deadlines of others.
        let value = try await exchanges.run(options: TransportOptions(timeout: .milliseconds(50))) { 7 }
        #expect(value == 7)
        await exchanges.cancelAll()
        let cancelled = await #expect(throws: OutpostError.self) { try await long.value }
        #expect(cancelled?.code == .cancelled)
        let late = await #expect(throws: OutpostError.self) {
            try await exchanges.run(options: TransportOptions()) { 1 }
        }
        #expect(late?.code == .cancelled)
    }

    @Test("several exchanges time out one after another under one watchdog")
    func several() async throws {
        let exchanges = InFlightExchanges<Int>()
        try await withThrowingTaskGroup(of: OutpostError.Code?.self) { group in
            for index in 0..<5 {
                group.addTask {
                    do {
                        _ = try await exchanges.run(options: TransportOptions(timeout: .milliseconds(30 * (index + 1)))) {
                            try await forever()
                        }
                        return nil
                    } catch let error as OutpostError {
                        return error.code
                    }
                }
            }
            for try await code in group { #expect(code == .timeout) }
        }
        await exchanges.cancelAll()
    }
}

/// Sleeps until cancelled.
private func forever() async throws -> Int {
    while true { try await Task.sleep(for: .seconds(3600)) }
}
