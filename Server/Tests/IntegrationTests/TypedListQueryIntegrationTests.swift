import Foundation
import Outpost
import Testing

/// Typed filters and sorts (`RecordFilter`, `RecordSortKey`) through `EntityStore` on a live server:
/// the records listed, their order, and a typed change stream.
@Suite("Typed list filters and sorts on a live server", .closesWhatItOpens, .timeLimit(.minutes(5)))
struct TypedListQueryIntegrationTests {
    struct TypedItem: Entity, Equatable {
        static let resourcePath = "records/items"
        var id: String?
        var views: Int
        var title: String
        var tag: String?

        static let views = RecordField(\TypedItem.views, "views")
        static let title = RecordField(\TypedItem.title, "title")
        static let tag = RecordField(\TypedItem.tag, "tag")
    }

    static let quotedTitle = "Intro \"q\" \\ é\n"

    @Test("a typed filter and sort list exactly the matching records, in order, across pages of both styles")
    func typedList() async throws {
        try await withAuthFixture { fixture in
            let client = OutpostClient(configuration: .init(baseURL: fixture.server.baseURL))
            let store = client.entities()
            do {
                let seeds: [(Int, String, String?)] = [
                    (3, "Intro c", "a"), (9, "Intro a", "b"), (12, "Outro b", "a"), (12, Self.quotedTitle, "a"),
                    (40, "z", nil), (15, "Intro x", "c"),
                ]
                for (views, title, tag) in seeds {
                    _ = try await store.push(TypedItem(id: nil, views: views, title: title, tag: tag))
                }
                let filter =
                    TypedItem.views > 5 && TypedItem.tag.in(["a", "b"]) && TypedItem.title.hasPrefix("Intro")
                    || TypedItem.tag == nil
                let request = ListRequest(TypedItem.self, pageSize: 2).filter(filter)
                    .sorted(by: TypedItem.views.descending, TypedItem.title.ascending)
                var seen: [String] = []
                for try await item in store.items(request) { seen.append("\(item.views) \(item.title)") }
                #expect(seen == ["40 z", "12 \(Self.quotedTitle)", "9 Intro a"])

                // Escaped text reaches the server as written: exactly one record holds it.
                let exact = try await store.page(ListRequest(TypedItem.self).filter(TypedItem.title == Self.quotedTitle))
                #expect(exact.items.map(\.title) == [Self.quotedTitle])

                // A negated group, on numbered pages: views of at least 10 and a tag other than "a".
                let numbered = ListRequest(TypedItem.self, pageSize: 1, pagination: .outpostPageNumbers, page: 2)
                    .filter(!(TypedItem.views < 10 || TypedItem.tag == "a")).sorted(by: TypedItem.title.ascending)
                let page = try await store.page(numbered)
                #expect(page.items.map(\.title) == ["z"])
                #expect(page.info.totalItems == 2)

                // Oldest first, then newest first, by the record's own creation time.
                let oldest = try await store.page(ListRequest(TypedItem.self, pageSize: 2).sorted(by: .created))
                #expect(oldest.items.map(\.title) == ["Intro c", "Intro a"])
                let newest = try await store.page(ListRequest(TypedItem.self, pageSize: 2).sorted(by: .created.reversed))
                #expect(newest.items.map(\.title) == ["Intro x", "z"])
            } catch {
                try? await client.shutdown()
                throw error
            }
            try await client.shutdown()
        }
    }

    @Test("a typed change stream: matching changes with their entity, left when one stops matching")
    func typedChanges() async throws {
        try await withAuthFixture { fixture in
            let client = OutpostClient(configuration: .init(baseURL: fixture.server.baseURL))
            let store = client.entities()
            do {
                var a = try await store.push(TypedItem(id: nil, views: 20, title: "Intro", tag: nil))
                _ = try await store.push(TypedItem(id: nil, views: 30, title: "Other", tag: nil))
                a.views = 5
                a = try await store.patch(a)  // leaves
                let c = try await store.push(TypedItem(id: nil, views: 11, title: "Inside", tag: "t"))
                var iterator = store.changes(
                    of: TypedItem.self, filter: TypedItem.views > 10 && TypedItem.title.hasPrefix("In"), after: "0",
                    retry: ChangesIntegrationTests.fastRetry
                ).makeAsyncIterator()
                var seen: [String] = []
                while seen.count < 3, let change = try await iterator.next() {
                    seen.append("\(change.kind.rawValue) \(change.id) \(change.entity?.value.title ?? "-")")
                }
                let aID = try #require(a.value.id)
                let cID = try #require(c.value.id)
                #expect(seen == ["created \(aID) Intro", "left \(aID) -", "created \(cID) Inside"])
            } catch {
                try? await client.shutdown()
                throw error
            }
            try await client.shutdown()
        }
    }
}
