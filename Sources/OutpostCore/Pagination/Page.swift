/// One page of a list: its items, decoded as the list request's item type, and where it sits.
///
/// ```swift
/// let page = try await store.page(ListRequest(resourcePath: "records/posts", of: BlogPostPreview.self))
/// page.items                  // [BlogPostPreview]
/// page.info.isLastPage
/// let next = try await store.page(after: page)
/// ```
public struct Page<Item: Sendable>: Sendable {
    /// The items, in the server's order.
    public var items: [Item]
    /// Pagination details and user-interface helpers.
    public var info: PaginationInfo
    /// How to fetch the next page; `nil` on the last page.
    var nextLocation: PageLocation?
    /// How to fetch the previous page; `nil` on the first page.
    var previousLocation: PageLocation?

    /// A page made by hand, e.g. for previews and tests; it knows no neighbours.
    public init(items: [Item], info: PaginationInfo) {
        self.items = items
        self.info = info
    }

    init(items: [Item], info: PaginationInfo, next: PageLocation?, previous: PageLocation?) {
        self.items = items
        self.info = info
        self.nextLocation = next
        self.previousLocation = previous
    }

    /// The indices of this page's items in the whole list, e.g. `20..<30`, when known.
    public var itemRange: Range<Int>? {
        info.firstItemIndex.map { $0..<($0 + items.count) }
    }
}

extension Page: Equatable where Item: Equatable {
    public static func == (lhs: Page, rhs: Page) -> Bool {
        lhs.items == rhs.items && lhs.info == rhs.info
    }
}

/// Where a page is fetched from.
struct PageLocation: Sendable {
    /// The list's own request, without cursor or page parameters.
    var origin: Request
    /// The request for this page.
    var request: Request
    /// The number of this page, when known.
    var pageNumber: Int?
    /// The index of this page's first item, when known.
    var offset: Int?
    /// The page size asked for, when one was.
    var pageSize: Int?
    /// The key that holds the items, or `nil` for a bare array.
    var itemsKey: String?
    /// Why the list cannot be requested (a typed filter or sort that did not render): fetching
    /// the page throws it.
    var failure: OutpostError?
}
