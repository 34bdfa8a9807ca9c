/// The pages of a list as an `AsyncSequence`, fetched one at a time as iteration asks for them.
/// Made by ``EntityStore/pages(_:limit:)``.
public struct PageSequence<Item: Decodable & Sendable>: AsyncSequence, Sendable {
    public typealias Element = Page<Item>

    let store: EntityStore
    let start: PageLocation
    let style: PaginationStyle
    let limit: Int?

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(store: store, style: style, upcoming: start, remaining: limit)
    }

    /// Fetches the next page when asked; holds nothing but where to go next.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let store: EntityStore
        let style: PaginationStyle
        var upcoming: PageLocation?
        var remaining: Int?

        public mutating func next() async throws -> Page<Item>? {
            guard let location = upcoming else { return nil }
            upcoming = nil  // an error or cancellation ends the sequence
            if let remaining, remaining <= 0 { return nil }
            if Task.isCancelled {
                throw OutpostError(
                    .cancelled, "Listing \(Item.self) was cancelled; no further pages are fetched",
                    method: "GET", path: location.request.path)
            }
            var page: Page<Item> = try await store.fetchPage(location, style: style)
            upcoming = page.nextLocation
            if let limit = remaining {
                if page.items.count >= limit {
                    page.items.removeSubrange(limit...)
                    upcoming = nil
                }
                remaining = limit - page.items.count
            }
            return page
        }
    }
}

/// The items of a list as an `AsyncSequence`, fetched a page at a time; only the current page is
/// held. Made by ``EntityStore/items(_:limit:)``.
public struct ItemSequence<Item: Decodable & Sendable>: AsyncSequence, Sendable {
    public typealias Element = Item

    let pages: PageSequence<Item>

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(pages: pages.makeAsyncIterator())
    }

    /// Hands out the current page's items, and fetches the next page when they run out.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var pages: PageSequence<Item>.AsyncIterator
        var buffer: [Item] = []
        var index = 0

        public mutating func next() async throws -> Item? {
            while index >= buffer.count {
                buffer = []  // let the finished page go before fetching the next one
                index = 0
                guard let page = try await pages.next() else { return nil }
                buffer = page.items
            }
            defer { index += 1 }
            return buffer[index]
        }
    }
}
