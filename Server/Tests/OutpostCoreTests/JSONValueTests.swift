import Foundation
import OutpostTesting
import Testing

@_spi(OutpostInternal) @testable import OutpostCore

@Suite("JSONValue numbers")
struct JSONValueNumberTests {
    @Test(
        "integers beyond Int64 stay exact",
        arguments: ["18446744073709551616", "-9223372036854775809", "123456789012345678901234567890", "9223372036854775808"])
    func largeIntegers(_ literal: String) throws {
        let value = try JSONValue(parsing: Data(literal.utf8))
        #expect(value == .largeInteger(literal))
        #expect(value.jsonString() == literal)
        let nested = try JSONValue(parsing: Data("{\"n\": [\(literal)]}".utf8))
        #expect(nested.jsonString() == "{\"n\":[\(literal)]}")
        #expect(value.intValue == nil)
        #expect(value.decimalValue == Decimal(string: literal))
    }

    @Test("Int64's own range stays .int, and floating-point literals stay .double")
    func ordinary() throws {
        #expect(try JSONValue(parsing: Data("9223372036854775807".utf8)) == .int(.max))
        #expect(try JSONValue(parsing: Data("-9223372036854775808".utf8)) == .int(.min))
        #expect(try JSONValue(parsing: Data("6.022e23".utf8)) == .double(6.022e23))
        #expect(try JSONValue(parsing: Data("1.5".utf8)) == .double(1.5))
        #expect(try JSONValue(parsing: Data("1e19".utf8)) == .double(1e19))
    }

    @Test("a largeInteger that is not digits cannot be encoded")
    func invalidLarge() {
        #expect(throws: EncodingError.self) { try JSONValue.largeInteger("12a").encoded() }
    }
}

@Suite("Non-finite numbers")
struct NonFiniteTests {
    @Test("a JSON body with nan or infinity is an encoding error, and nothing is sent", arguments: [Double.nan, .infinity])
    func nonFinite(_ number: Double) async throws {
        let transport = ScriptedTransport { _, _ in ScriptedTransport.reply(200, json: [:]) }
        let client = transport.client()
        let error = try await #require(throws: OutpostError.self) {
            try await client.send(.post("/x", json: ["value": .double(number)]))
        }
        #expect(error.code == .encodingFailed)
        #expect(transport.requests.isEmpty)
        #expect(throws: EncodingError.self) { try JSONValue.double(number).encoded() }
    }
}

@Suite("EntityStore completion handlers")
struct EntityStoreCompletionTests {
    @Test("push and pull report through completion handlers")
    func completion() async throws {
        let server = FakeRecordsServer()
        let store = server.transport().client().entities(.outpost)
        let pushed = await withCheckedContinuation { continuation in
            store.push(Person(name: "Ada")) { continuation.resume(returning: $0) }
        }
        let ada = try pushed.get()
        #expect(ada.id == "r1")
        let pulled = await withCheckedContinuation { continuation in
            store.pull(Person.self, id: "r1") { continuation.resume(returning: $0) }
        }
        #expect(try pulled.get().name == "Ada")
        let missing = await withCheckedContinuation { continuation in
            store.pull(Person.self, id: "nope") { continuation.resume(returning: $0) }
        }
        #expect(throws: OutpostError.self) { try missing.get() }
        let deleted = await withCheckedContinuation { continuation in
            store.delete(ada) { continuation.resume(returning: $0) }
        }
        #expect(throws: Never.self) { try deleted.get() }
    }
}
