import AsyncHTTPClient
import Foundation
import HTTPTypes
import Outpost
import Testing

extension ListQueryIntegrationTests {
    static func change(_ event: ServerSentEvent?) throws -> String {
        let event = try #require(event)
        let data = try JSONValue(parsing: Data(event.data.utf8))
        #expect(data["change"]?.stringValue == event.event)
        return "\(event.event) \(data["id"]?.stringValue ?? "?") v\(data["version"]?.intValue ?? 0)"
    }

    @Test("the change feed's filter: only matching changes, left when a record stops matching, one per leaving")
    func changeFeedFilter() async throws {
        try await withAuthFixture { fixture in
            let base = fixture.server.baseURL
            let http = ChangesIntegrationTests.rawClient()
            do {
                func create(_ views: Int) async throws -> String {
                    let reply = try await PrivateRecordsTests.send(base, .post, "/records/items", body: ["views": .int(views)])
                    return try #require(try reply.json()["id"]?.stringValue)
                }
                func patch(_ id: String, _ views: Int) async throws {
                    let reply = try await PrivateRecordsTests.send(
                        base, .patch, "/records/items/\(id)", body: ["views": .int(views)])
                    #expect(reply.status == 200)
                }
                let a = try await create(20)
                let b = try await create(1)
                try await patch(a, 5)  // leaves
                try await patch(b, 50)  // enters
                try await patch(a, 3)  // still outside: nothing
                // Outside already: nothing.
                #expect(try await PrivateRecordsTests.send(base, .delete, "/records/items/\(a)").status == 204)
                #expect(try await PrivateRecordsTests.send(base, .delete, "/records/items/\(b)").status == 204)
                let c = try await create(11)
                let filter = "record.views > 10".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
                let url = fixture.base + "/records/items/changes?after=0&filter=" + filter
                let stream = try await RawEventStream.open(http, url)
                #expect(stream.status == 200)
                var seen: [String] = []
                while seen.count < 5, let event = try await stream.nextChange() { seen.append(try Self.change(event)) }
                #expect(seen == ["created \(a) v1", "left \(a) v2", "updated \(b) v2", "deleted \(b) v2", "created \(c) v1"])

                // A stream that starts later knows nothing of a: its next update outside is a `left`.
                let later = try await RawEventStream.open(http, fixture.base + "/records/items/changes?filter=" + filter)
                #expect(try await later.next()?.event == "ready")
                try await patch(c, 2)
                try await patch(c, 1)
                try await patch(c, 30)
                #expect(try Self.change(try await later.nextChange()) == "left \(c) v2")
                #expect(try Self.change(try await later.nextChange()) == "updated \(c) v4")

                let bad = try await RawEventStream.open(http, fixture.base + "/records/items/changes?filter=record.views%20%3E")
                #expect(bad.status == 400)
                #expect(bad.errorBody.contains("invalid_filter"))
                let caller = try await RawEventStream.open(
                    http, fixture.base + "/records/items/changes?filter=caller.signed_in")
                #expect(caller.status == 400)
                #expect(caller.errorBody.contains("unknown_root"))
            } catch {
                try? await http.shutdown()
                throw error
            }
            try await http.shutdown()
        }
    }

    /// An item with a view count, for the SDK's filtered change stream.
    struct ViewedItem: Entity {
        static let resourcePath = "records/items"
        var id: String?
        var views: Int
    }

    @Test("the SDK's filtered change stream: matching changes with their entity, left without one, then the rest")
    func sdkChangeFilter() async throws {
        try await withAuthFixture { fixture in
            let base = fixture.server.baseURL
            let client = OutpostClient(configuration: .init(baseURL: base))
            let store = client.entities()
            do {
                var a = try await store.push(ViewedItem(id: nil, views: 20))
                var b = try await store.push(ViewedItem(id: nil, views: 1))
                a.views = 5
                a = try await store.patch(a)  // leaves
                b.views = 50
                b = try await store.patch(b)  // enters
                var iterator = store.changes(
                    of: ViewedItem.self, filter: "record.views > 10", after: "0", retry: ChangesIntegrationTests.fastRetry
                ).makeAsyncIterator()
                var seen: [String] = []
                while seen.count < 3, let change = try await iterator.next() {
                    seen.append("\(change.kind.rawValue) \(change.id) \(change.entity?.value.views ?? -1)")
                }
                let aID = try #require(a.value.id)
                let bID = try #require(b.value.id)
                #expect(seen == ["created \(aID) 20", "left \(aID) -1", "updated \(bID) 50"])
                let refused = store.changes(of: ViewedItem.self, filter: "record.views >", retry: .none)
                await #expect(throws: OutpostError.self) {
                    for try await _ in refused {}
                }
            } catch {
                try? await client.shutdown()
                throw error
            }
            try await client.shutdown()
        }
    }
}
