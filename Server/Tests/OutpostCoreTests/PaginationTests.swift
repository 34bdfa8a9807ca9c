import Foundation
import HTTPTypes
import OutpostTesting
import Testing

@_spi(OutpostInternal) @testable import OutpostCore

struct Post: Entity, Equatable {
    static let resourcePath = "records/posts"
    var id: String?
    var title: String
    var body: String
    var author: String
}

/// The seed's `classOfItems`: a list yields previews, not full posts.
struct BlogPostPreview: Decodable, Sendable, Equatable {
    var id: String
    var title: String
}

extension ListRequest where Item == BlogPostPreview {
    static func blogPage(pageSize: Int? = nil) -> Self { ListRequest(resourcePath: "records/posts", pageSize: pageSize) }
}

@Suite("Pagination")
struct PaginationTests {
    let server = FakeRecordsServer()

    init() {
        server.seed(
            "posts", (1...25).map { ["title": .string("Post \($0)"), "body": "…", "author": $0 % 2 == 0 ? "ada" : "bob"] })
    }

    func store(_ configuration: EntityConfiguration = .outpost) -> (EntityStore, ScriptedTransport) {
        let transport = server.transport()
        return (transport.client().entities(configuration), transport)
    }

    // MARK: PaginationInfo helpers

    @Test("page-number helpers: last page, current page, number of pages, index ranges")
    func pageNumberHelpers() {
        let info = PaginationInfo(page: 3, perPage: 10, totalItems: 25)
        #expect(info.numberOfPages == 3)
        #expect(info.isLastPage)
        #expect(!info.isFirstPage)
        #expect(info.currentPage == 3)
        #expect(info.indexRange(ofPage: 1) == 0..<10)
        #expect(info.indexRange(ofPage: 3) == 20..<25)
        #expect(info.indexRange(ofPage: 4) == nil)
        #expect(info.indexRange(ofPage: 0) == nil)
        let second = PaginationInfo(page: 2, perPage: 10, totalPages: 5)
        #expect(second.hasNextPage)
        #expect(!second.isLastPage)
        #expect(second.indexRange(ofPage: 5) == 40..<50)
        #expect(PaginationInfo(page: 1, perPage: 10, totalItems: 0).numberOfPages == 1)
        #expect(PaginationInfo(perPage: 10).numberOfPages == nil)
        #expect(PaginationInfo().indexRange(ofPage: 1) == nil)
    }

    @Test("cursor helpers: a next cursor or link means more pages")
    func cursorHelpers() {
        #expect(PaginationInfo(nextCursor: "x").hasNextPage)
        #expect(PaginationInfo(next: URL(string: "http://x/y?page=2")).hasNextPage)
        #expect(PaginationInfo(previousCursor: "p").hasPreviousPage)
        #expect(PaginationInfo().isLastPage)
        #expect(PaginationInfo().isFirstPage)
        let page = Page(items: ["a", "b"], info: PaginationInfo(firstItemIndex: 40))
        #expect(page.itemRange == 40..<42)
    }

    // MARK: Lists

    @Test("a list yields the chosen item type (BlogPage → [BlogPostPreview])")
    func chosenItemType() async throws {
        let (store, transport) = store()
        let page = try await store.page(.blogPage(pageSize: 3))
        #expect(
            page.items == [
                BlogPostPreview(id: "r1", title: "Post 1"), BlogPostPreview(id: "r2", title: "Post 2"),
                BlogPostPreview(id: "r3", title: "Post 3"),
            ])
        #expect(transport.requests[0].path == "/records/posts")
        #expect(transport.requests[0].query == ["limit": "3"])
        let full = try await store.page(ListRequest(Post.self, pageSize: 1))
        #expect(full.items == [Post(id: "r1", title: "Post 1", body: "…", author: "bob")])
    }

    @Test("outpost cursor lists: cursor query, page numbering, index ranges, previous pages")
    func outpostCursor() async throws {
        let (store, transport) = store()
        let request = ListRequest(Post.self, pageSize: 10)
        let first = try await store.page(request)
        #expect(first.items.count == 10)
        #expect(first.info.nextCursor == "cur10")
        #expect(first.info.next?.absoluteString == "http://scripted.test/records/posts?limit=10&cursor=cur10")
        #expect(first.info.currentPage == 1)
        #expect(first.itemRange == 0..<10)
        #expect(first.info.isFirstPage)
        let second = try #require(try await store.page(after: first, of: request))
        #expect(transport.requests[1].query == ["limit": "10", "cursor": "cur10"])
        #expect(second.items.first?.title == "Post 11")
        #expect(second.info.currentPage == 2)
        #expect(second.itemRange == 10..<20)
        let third = try #require(try await store.page(after: second, of: request))
        #expect(third.items.count == 5)
        #expect(third.info.isLastPage)
        #expect(third.itemRange == 20..<25)
        #expect(try await store.page(after: third, of: request) == nil)
        #expect(transport.requests.count == 3)
        let back = try #require(try await store.page(before: third, of: request))
        #expect(back.items.first?.title == "Post 11")
        #expect(back.info.currentPage == 2)
    }

    @Test("outpost legacy page numbers: page, per_page, totals")
    func outpostPageNumbers() async throws {
        let (store, transport) = store()
        let request = ListRequest(Post.self, pageSize: 10, pagination: .outpostPageNumbers, page: 2)
        let page = try await store.page(request)
        #expect(transport.requests[0].query == ["page": "2", "per_page": "10"])
        #expect(page.items.first?.title == "Post 11")
        #expect(page.info.currentPage == 2)
        #expect(page.info.numberOfPages == 3)
        #expect(page.info.totalItems == 25)
        #expect(page.itemRange == 10..<20)
        #expect(!page.info.isLastPage)
        let titles = try await collect(store.pages(request)).map { $0.items.first?.title }
        #expect(titles == ["Post 11", "Post 21"])
        #expect(transport.requests.last?.query == ["page": "3", "per_page": "10"])
    }

    @Test("filters are sent with every page")
    func filters() async throws {
        let (store, transport) = store()
        let request = ListRequest(Post.self, pageSize: 5).filter("author", "ada")
        var authors: [String] = []
        for try await post in store.items(request) { authors.append(post.author) }
        #expect(authors.count == 12)
        #expect(Set(authors) == ["ada"])
        #expect(transport.requests.count == 3)
        #expect(transport.requests.allSatisfy { $0.query["author"] == "ada" })
    }

    @Test("restFramework preset: trailing slashes, count/next/previous/results, next links followed")
    func restFramework() async throws {
        let drf = FakeRecordsServer(shape: .restFramework)
        drf.seed("people", (1...10).map { ["name": .string("P\($0)"), "tags": [], "pets": []] })
        let transport = drf.transport()
        let store = transport.client().entities(.restFramework)
        struct DRFPerson: Entity {
            static let resourcePath = "people"
            var id: String?
            var name: String
        }
        let first = try await store.page(ListRequest(DRFPerson.self))
        #expect(transport.requests[0].path == "/people/")
        #expect(first.items.map(\.name) == ["P1", "P2", "P3", "P4"])
        #expect(first.info.totalItems == 10)
        #expect(first.info.perPage == 4)  // inferred from a full page
        #expect(first.info.numberOfPages == 3)
        #expect(first.info.currentPage == 1)
        #expect(first.info.next?.absoluteString == "http://scripted.test/people/?page=2")
        var names: [String] = []
        for try await page in store.pages(ListRequest(DRFPerson.self)) { names += page.items.map(\.name) }
        #expect(names == (1...10).map { "P\($0)" })
        #expect(transport.requests.suffix(2).map { $0.query } == [["page": "2"], ["page": "3"]])
        // Single entities on the same shape.
        var person = try await store.pull(DRFPerson.self, id: "r2")
        #expect(transport.requests.last?.path == "/people/r2/")
        person.name = "Renamed"
        _ = try await store.patch(person)
        #expect(transport.requests.last?.json == ["name": "Renamed"])
        #expect(drf.record("people", id: "r2")?["name"] == "Renamed")
    }

    @Test("a bare-array list and NationBuilder's relative next links")
    func bareArrayAndRelativeLinks() async throws {
        let transport = ScriptedTransport { request, _ in
            let query = request.path ?? ""
            if query.contains("__token=abc") {
                return ScriptedTransport.reply(
                    200, json: ["results": [["id": "3", "title": "c"]], "next": nil, "prev": "/api/v1/posts?__token=back"])
            }
            return ScriptedTransport.reply(
                200,
                json: [
                    "results": [["id": "1", "title": "a"], ["id": "2", "title": "b"]],
                    "next": "/api/v1/posts?__nonce=n&__token=abc&limit=2", "prev": nil,
                ])
        }
        let store = transport.client(baseURL: "https://nation.example/api/v1").entities(.nationBuilder)
        let titles = try await collect(store.items(ListRequest(resourcePath: "posts", of: BlogPostPreview.self, pageSize: 2)))
            .map(\.title)
        #expect(titles == ["a", "b", "c"])
        #expect(transport.requests[0].url?.absoluteString == "https://nation.example/api/v1/posts?limit=2")
        #expect(transport.requests[1].url?.absoluteString == "https://nation.example/api/v1/posts?__nonce=n&__token=abc&limit=2")

        var bare = EntityConfiguration.outpost
        bare.listItemsKey = nil
        let arrayTransport = ScriptedTransport { _, _ in ScriptedTransport.reply(200, json: [["id": "1", "title": "only"]]) }
        let page = try await arrayTransport.client().entities(bare).page(.blogPage())
        #expect(page.items == [BlogPostPreview(id: "1", title: "only")])
        #expect(page.info.isLastPage)
    }

    @Test("keys are found under convertFromSnakeCase too")
    func snakeCaseDecoder() async throws {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let transport = server.transport()
        let store = transport.client { $0.decoder = decoder }.entities(.outpost)
        let page = try await store.page(ListRequest(Post.self, pageSize: 10))
        #expect(page.info.nextCursor == "cur10")
        #expect(page.info.hasNextPage)
    }

    // MARK: Errors

    @Test("a missing items key names the setting to change; a bad item gives its coding path")
    func listErrors() async throws {
        let wrongKey = ScriptedTransport { _, _ in ScriptedTransport.reply(200, json: ["data": []]) }
        do {
            _ = try await wrongKey.client().entities(.outpost).page(.blogPage())
            Issue.record("should fail")
        } catch let error as OutpostError {
            #expect(error.code == .decodingFailed)
            #expect(error.message.contains("'results'"))
            #expect(error.suggestion?.contains("listItemsKey") == true)
        }
        let badItem = ScriptedTransport { _, _ in
            ScriptedTransport.reply(200, json: ["results": [["id": "1", "title": "ok"], ["id": "2", "title": 5]]])
        }
        do {
            _ = try await badItem.client().entities(.outpost).page(.blogPage())
            Issue.record("should fail")
        } catch let error as OutpostError {
            #expect(error.code == .decodingFailed)
            #expect(error.codingPath == "results[1].title")
        }
    }

    // MARK: Lazy sequences

    @Test("items(...) fetches lazily: breaking early leaves later pages unfetched")
    func lazyItems() async throws {
        let (store, transport) = store()
        var seen = 0
        for try await _ in store.items(ListRequest(Post.self, pageSize: 10)) {
            seen += 1
            if seen == 3 { break }
        }
        #expect(transport.requests.count == 1)
        seen = 0
        for try await _ in store.items(ListRequest(Post.self, pageSize: 10)) {
            seen += 1
            if seen == 11 { break }
        }
        #expect(transport.requests.count == 3)
        let all = try await collect(store.items(ListRequest(Post.self, pageSize: 10)))
        #expect(all.map(\.title) == (1...25).map { "Post \($0)" })
        #expect(transport.requests.count == 6)
    }

    @Test("pages(...) makes no request until iterated")
    func lazyPages() async throws {
        let (store, transport) = store()
        let sequence = store.pages(ListRequest(Post.self, pageSize: 10))
        #expect(transport.requests.isEmpty)
        var iterator = sequence.makeAsyncIterator()
        _ = try await iterator.next()
        #expect(transport.requests.count == 1)
        _ = try await iterator.next()
        _ = try await iterator.next()
        #expect(try await iterator.next() == nil)
        #expect(transport.requests.count == 3)
    }

    @Test("an item limit is honoured, and pages are asked no larger than needed")
    func limit() async throws {
        let (store, transport) = store()
        let thirteen = try await collect(store.items(ListRequest(Post.self, pageSize: 10), limit: 13))
        #expect(thirteen.count == 13)
        #expect(transport.requests.count == 2)
        let five = try await collect(store.items(ListRequest(Post.self), limit: 5))
        #expect(five.map(\.title) == (1...5).map { "Post \($0)" })
        #expect(transport.requests.last?.query == ["limit": "5"])
        #expect(transport.requests.count == 3)
        let pages = try await collect(store.pages(ListRequest(Post.self, pageSize: 10), limit: 15))
        #expect(pages.map(\.items.count) == [10, 5])
        let none = try await collect(store.items(ListRequest(Post.self), limit: 0))
        #expect(none.isEmpty)
        #expect(transport.requests.count == 5)
    }

    @Test("cancelling the task stops the fetching")
    func cancellationFromInside() async throws {
        let (store, transport) = store()
        let task = Task {
            var pages = 0
            do {
                for try await _ in store.pages(ListRequest(Post.self, pageSize: 5)) {
                    pages += 1
                    withUnsafeCurrentTask { $0?.cancel() }
                }
                return (pages, OutpostError.Code?.none)
            } catch let error as OutpostError {
                return (pages, error.code)
            }
        }
        let (pages, code) = try await task.value
        #expect(pages == 1)
        #expect(code == .cancelled)
        #expect(transport.requests.count == 1)
    }

    @Test("cancelling from outside, mid-iteration, stops the fetching")
    func cancellationFromOutside() async throws {
        let (store, transport) = store()
        let (gotPage, pageArrived) = AsyncStream.makeStream(of: Int.self)
        let (neverResumed, keepOpen) = AsyncStream.makeStream(of: Void.self)
        let task = Task {
            var count = 0
            for try await item in store.items(ListRequest(Post.self, pageSize: 5)) {
                _ = item
                count += 1
                if count == 5 {
                    pageArrived.yield(count)
                    for await _ in neverResumed {}  // ends when the task is cancelled
                }
            }
            return count
        }
        for await _ in gotPage { break }
        task.cancel()
        await #expect(throws: OutpostError.self) { _ = try await task.value }
        #expect(transport.requests.count == 1)
        keepOpen.finish()
    }
}

private func collect<S: AsyncSequence>(_ sequence: S) async throws -> [S.Element] {
    var elements: [S.Element] = []
    for try await element in sequence { elements.append(element) }
    return elements
}
